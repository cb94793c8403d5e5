package io.rollcount.job.model;

import java.lang.reflect.Type;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;

/**
 * Flink's type information for {@link Event} ({@link HandSerializedTypeInfo}): its hand-written {@link EventSerializer}. {@link Event} names
 * {@link Factory} in its {@code @TypeInfo} annotation, so every {@code TypeInformation.of(Event.class)} and
 * every {@code OutputTag<Event>} gets this one instead of a reflective POJO type.
 */
public final class EventTypeInfo extends HandSerializedTypeInfo<Event> {
    private static final long serialVersionUID = 1L;

    public static final EventTypeInfo INSTANCE = new EventTypeInfo();

    /** What the {@code @TypeInfo} annotation of {@link Event} names. */
    public static final class Factory extends TypeInfoFactory<Event> {
        @Override
        public TypeInformation<Event> createTypeInfo(Type t, Map<String, TypeInformation<?>> genericParameters) {
            return INSTANCE;
        }
    }

    private EventTypeInfo() {
        super(Event.class, EventSerializer.INSTANCE);
    }
}
