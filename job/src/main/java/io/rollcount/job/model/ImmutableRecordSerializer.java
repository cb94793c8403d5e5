package io.rollcount.job.model;

/**
 * The hand-written serializer of a record that is never changed once emitted: {@link #copy} is the record
 * itself, so that a chained output (which copies every record with its type's serializer while object reuse
 * is off) passes it on without a copy; a shuffle still serializes it. Subclasses write the bytes.
 */
public abstract class ImmutableRecordSerializer<T> extends HandSerializer<T> {
    private static final long serialVersionUID = 1L;

    @Override
    public final boolean isImmutableType() {
        return true;
    }

    @Override
    public final T copy(T from) {
        return from;
    }
}
