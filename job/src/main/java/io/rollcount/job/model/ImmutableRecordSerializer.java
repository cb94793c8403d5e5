package io.rollcount.job.model;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * The hand-written serializer of a record that is never changed once emitted: {@link #copy} is the record
 * itself, so that a chained output (which copies every record with its type's serializer while object reuse
 * is off) passes it on without a copy; a shuffle still serializes it. Subclasses write the bytes.
 */
public abstract class ImmutableRecordSerializer<T> extends TypeSerializerSingleton<T> {
    private static final long serialVersionUID = 1L;

    @Override
    public final boolean isImmutableType() {
        return true;
    }

    @Override
    public final T copy(T from) {
        return from;
    }

    @Override
    public final T copy(T from, T reuse) {
        return from;
    }

    @Override
    public final int getLength() {
        return -1;
    }

    @Override
    public final T deserialize(T reuse, DataInputView in) throws IOException {
        return deserialize(in);
    }

    @Override
    public final void copy(DataInputView in, DataOutputView out) throws IOException {
        serialize(deserialize(in), out);
    }
}
