package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Resolution;
import java.util.LinkedHashMap;
import java.util.Map;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * {@link CounterState.Serializer}: what Flink picks for the state, the bytes of every field and only of the slots,
 * a deep copy, and the migration of state written by Flink's POJO serializer (earlier versions).
 */
class CounterStateTest {
    private static final long START = 1_764_000_000_000L;

    private static CounterState sample() {
        CounterState c = new CounterState();
        c.total = -5;
        c.totalEvents = 12;
        c.negative = true;
        c.totalDirty = true;
        c.nextTimer = START + 60_000;
        for (Resolution r : Resolution.all()) {
            int i = c.add(r, r.windowStart(START));
            c.sum[i] = r.ordinal() - 2;
            c.events[i] = r.ordinal() + 1;
            c.revision[i] = r.ordinal();
            c.set(i, (byte) (CounterState.DIRTY | (r.ordinal() % 2 == 0 ? CounterState.HAS_USERS : 0)));
        }
        return c;
    }

    private static byte[] bytes(TypeSerializer<CounterState> s, CounterState c) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(64);
        s.serialize(c, out);
        return out.getCopyOfBuffer();
    }

    private static CounterState read(TypeSerializer<CounterState> s, byte[] bytes) throws Exception {
        DataInputDeserializer in = new DataInputDeserializer(bytes);
        CounterState c = s.deserialize(in);
        assertThat(in.available()).as("bytes left").isZero();
        return c;
    }

    /** The fields that say what a counter holds: the arrays up to {@link CounterState#size}. */
    private static String fields(CounterState c) {
        StringBuilder b = new StringBuilder();
        b.append(c.total)
                .append(' ')
                .append(c.totalEvents)
                .append(' ')
                .append(c.negative)
                .append(' ');
        b.append(c.totalDirty)
                .append(' ')
                .append(c.usersDirty)
                .append(' ')
                .append(c.nextTimer)
                .append(' ');
        for (int i = 0; i < c.size; i++) {
            b.append('[')
                    .append(c.res[i])
                    .append(' ')
                    .append(c.start[i])
                    .append(' ')
                    .append(c.sum[i]);
            b.append(' ')
                    .append(c.events[i])
                    .append(' ')
                    .append(c.revision[i])
                    .append(' ')
                    .append(c.flags[i])
                    .append(']');
        }
        return b.toString();
    }

    @Test
    void flinkUsesTheHandWrittenSerializer() {
        assertThat(TypeInformation.of(CounterState.class)).isSameAs(CounterState.Info.INSTANCE);
    }

    @Test
    void everyFieldComesBackAndOnlyTheSlotsAreWritten() throws Exception {
        CounterState c = sample();
        assertThat(c.start.length).as("room beyond the slots").isGreaterThan(c.size);
        byte[] b = bytes(CounterState.Serializer.INSTANCE, c);
        assertThat(b).hasSize(29 + 30 * c.size);
        CounterState back = read(CounterState.Serializer.INSTANCE, b);
        assertThat(fields(back)).isEqualTo(fields(c));
        back.add(Resolution.M1, START + 3_600_000); // a slot added to a read state grows its arrays
        assertThat(back.find(Resolution.M1, START + 3_600_000)).isEqualTo(c.size);

        CounterState empty = new CounterState();
        assertThat(fields(read(CounterState.Serializer.INSTANCE, bytes(CounterState.Serializer.INSTANCE, empty))))
                .isEqualTo(fields(empty));
    }

    @Test
    void aCopyIsDeep() {
        CounterState c = sample();
        CounterState copy = CounterState.Serializer.INSTANCE.copy(c);
        assertThat(fields(copy)).isEqualTo(fields(c));
        copy.sum[0] = 99;
        copy.set(1, CounterState.REVISE);
        assertThat(c.sum[0]).isNotEqualTo(99);
        assertThat(c.has(1, CounterState.REVISE)).isFalse();
    }

    @Test
    void stateOfThePojoSerializerIsMigrated() throws Exception {
        Map<String, TypeInformation<?>> f = new LinkedHashMap<>();
        f.put("total", Types.LONG);
        f.put("totalEvents", Types.LONG);
        f.put("negative", Types.BOOLEAN);
        f.put("totalDirty", Types.BOOLEAN);
        f.put("usersDirty", Types.BOOLEAN);
        f.put("nextTimer", Types.LONG);
        f.put("size", Types.INT);
        f.put("res", Types.PRIMITIVE_ARRAY(Types.BYTE));
        f.put("start", Types.PRIMITIVE_ARRAY(Types.LONG));
        f.put("sum", Types.PRIMITIVE_ARRAY(Types.LONG));
        f.put("events", Types.PRIMITIVE_ARRAY(Types.LONG));
        f.put("revision", Types.PRIMITIVE_ARRAY(Types.INT));
        f.put("flags", Types.PRIMITIVE_ARRAY(Types.BYTE));
        TypeSerializer<CounterState> pojo =
                Types.POJO(CounterState.class, f).createSerializer(new SerializerConfigImpl());
        TypeSerializerSnapshot<CounterState> old = pojo.snapshotConfiguration();

        assertThat(new CounterState.Serializer.Snapshot()
                        .resolveSchemaCompatibility(old)
                        .isCompatibleAfterMigration())
                .isTrue();
        assertThat(new CounterState.Serializer.Snapshot()
                        .resolveSchemaCompatibility(new CounterState.Serializer.Snapshot())
                        .isCompatibleAsIs())
                .isTrue();
        // what a migration does: read with the old serializer, write with the new
        CounterState c = sample();
        CounterState migrated = read(
                CounterState.Serializer.INSTANCE, bytes(CounterState.Serializer.INSTANCE, read(pojo, bytes(pojo, c))));
        assertThat(fields(migrated)).isEqualTo(fields(c));
    }
}
