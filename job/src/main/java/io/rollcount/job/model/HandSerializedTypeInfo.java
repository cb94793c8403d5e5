package io.rollcount.job.model;

import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/**
 * Flink's type information for a class with a hand-written serializer ({@link EventTypeInfo}, and the {@code Info}
 * of {@link PartialSum}, {@link TrendWeight}, {@link CounterUpdate}, {@link WindowSum}, {@link Rollup}, the Redis
 * writes and the counting operator's state): one opaque field, not a key type, the serializer it is made with.
 * Two instances are equal when they are of the same class.
 */
public abstract class HandSerializedTypeInfo<T> extends TypeInformation<T> {
    private static final long serialVersionUID = 1L;

    private final Class<T> type;
    private final TypeSerializer<T> serializer;

    protected HandSerializedTypeInfo(Class<T> type, TypeSerializer<T> serializer) {
        this.type = type;
        this.serializer = serializer;
    }

    @Override
    public final TypeSerializer<T> createSerializer(SerializerConfig config) {
        return serializer;
    }

    @Override
    public final boolean isBasicType() {
        return false;
    }

    @Override
    public final boolean isTupleType() {
        return false;
    }

    @Override
    public final int getArity() {
        return 1;
    }

    @Override
    public final int getTotalFields() {
        return 1;
    }

    @Override
    public final Class<T> getTypeClass() {
        return type;
    }

    @Override
    public final boolean isKeyType() {
        return false;
    }

    @Override
    public String toString() {
        return type.getSimpleName();
    }

    @Override
    public final boolean equals(Object o) {
        return o != null && o.getClass() == getClass();
    }

    @Override
    public final int hashCode() {
        return getClass().hashCode();
    }

    @Override
    public final boolean canEqual(Object o) {
        return o != null && o.getClass() == getClass();
    }
}
