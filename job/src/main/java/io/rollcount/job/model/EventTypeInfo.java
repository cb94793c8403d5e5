package io.rollcount.job.model;

import java.lang.reflect.Type;
import java.util.Map;
import org.apache.flink.api.common.serialization.SerializerConfig;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;

/**
 * Flink's type information for {@link Event}: its hand-written {@link EventSerializer}. {@link Event} names
 * {@link Factory} in its {@code @TypeInfo} annotation, so every {@code TypeInformation.of(Event.class)} and
 * every {@code OutputTag<Event>} gets this one instead of a reflective POJO type.
 */
public final class EventTypeInfo extends TypeInformation<Event> {
    private static final long serialVersionUID = 1L;

    public static final EventTypeInfo INSTANCE = new EventTypeInfo();

    /** What the {@code @TypeInfo} annotation of {@link Event} names. */
    public static final class Factory extends TypeInfoFactory<Event> {
        @Override
        public TypeInformation<Event> createTypeInfo(Type t, Map<String, TypeInformation<?>> genericParameters) {
            return INSTANCE;
        }
    }

    @Override
    public boolean isBasicType() {
        return false;
    }

    @Override
    public boolean isTupleType() {
        return false;
    }

    @Override
    public int getArity() {
        return 1;
    }

    @Override
    public int getTotalFields() {
        return 1;
    }

    @Override
    public Class<Event> getTypeClass() {
        return Event.class;
    }

    @Override
    public boolean isKeyType() {
        return false;
    }

    @Override
    public TypeSerializer<Event> createSerializer(SerializerConfig config) {
        return EventSerializer.INSTANCE;
    }

    @Override
    public String toString() {
        return "Event";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof EventTypeInfo;
    }

    @Override
    public int hashCode() {
        return EventTypeInfo.class.hashCode();
    }

    @Override
    public boolean canEqual(Object o) {
        return o instanceof EventTypeInfo;
    }
}
