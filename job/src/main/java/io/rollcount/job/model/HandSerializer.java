package io.rollcount.job.model;

import java.io.IOException;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * What every hand-written serializer of the job shares: records of variable length, no reuse of instances
 * (a reuse copy or read is a fresh one), and a byte-wise copy by reading and writing the record (override it
 * where the bytes can be copied without building the record). Subclasses write the bytes and say how a record
 * is copied ({@link ImmutableRecordSerializer} for records never changed once emitted).
 */
public abstract class HandSerializer<T> extends TypeSerializerSingleton<T> {
    private static final long serialVersionUID = 1L;

    @Override
    public final T copy(T from, T reuse) {
        return copy(from);
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
    public void copy(DataInputView in, DataOutputView out) throws IOException {
        serialize(deserialize(in), out);
    }
}
