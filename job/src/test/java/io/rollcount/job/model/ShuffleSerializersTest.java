package io.rollcount.job.model;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.ops.RouteEvents;
import io.rollcount.job.redis.RedisWrite;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.flink.api.common.serialization.SerializerConfigImpl;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSchemaCompatibility;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

/**
 * {@link EventSerializer}, {@link PartialSum.Serializer}, {@link TrendWeight.Serializer}, and the serializers of the
 * records passed on without a copy ({@link CounterUpdate}, {@link RedisWrite}, {@link WindowSum}, {@link Rollup}): what Flink picks for the types (no POJO or Kryo
 * serializer), round trips of every shape of record, the byte-wise copy, and the serializer snapshots.
 */
class ShuffleSerializersTest {

    private static <T> T roundTrip(TypeSerializer<T> s, T value) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(64);
        s.serialize(value, out);
        DataOutputSerializer copied = new DataOutputSerializer(64);
        s.copy(new DataInputDeserializer(out.getCopyOfBuffer()), copied);
        assertThat(copied.getCopyOfBuffer()).as("byte-wise copy").isEqualTo(out.getCopyOfBuffer());
        DataInputDeserializer in = new DataInputDeserializer(out.getCopyOfBuffer());
        T back = s.deserialize(in);
        assertThat(in.available()).as("bytes left").isZero();
        return back;
    }

    /** A record passed on between chained operators: it comes back equal from its bytes, and its copy is itself. */
    private static <T> void passedOnUncopied(TypeSerializer<T> s, T value) throws Exception {
        assertThat(roundTrip(s, value)).as(value.toString()).isEqualTo(value);
        assertThat(s.copy(value)).isSameAs(value);
    }

    private static Event valid() {
        Event e = new Event();
        e.counter = "post:1:likes";
        e.delta = -7;
        e.ts = 1_764_000_000_123L;
        return e;
    }

    @Test
    void flinkUsesTheHandWrittenSerializers() {
        assertThat(TypeInformation.of(Event.class)).isSameAs(EventTypeInfo.INSTANCE);
        assertThat(RouteEvents.DEAD_LETTERS.getTypeInfo()).isSameAs(EventTypeInfo.INSTANCE);
        assertThat(TypeInformation.of(TrendWeight.class)).isSameAs(TrendWeight.Info.INSTANCE);
        assertThat(TypeInformation.of(PartialSum.class)).isSameAs(PartialSum.Info.INSTANCE);
        assertThat(TypeInformation.of(CounterUpdate.class)).isSameAs(CounterUpdate.Info.INSTANCE);
        assertThat(TypeInformation.of(RedisWrite.class)).isSameAs(RedisWrite.Info.INSTANCE);
        assertThat(TypeInformation.of(WindowSum.class)).isSameAs(WindowSum.Info.INSTANCE);
        assertThat(TypeInformation.of(Rollup.class)).isSameAs(Rollup.Info.INSTANCE);
        assertThat(TypeInformation.of(Event.class).createSerializer(new SerializerConfigImpl()))
                .isSameAs(EventSerializer.INSTANCE);
    }

    @Test
    void eventsOfEveryShapeComeBackEqual() throws Exception {
        Event minimal = valid();
        Event full = valid();
        full.eventId = "ev-1";
        full.user = "user ü";
        full.payload = "{\"counter\":\"post:1:likes\"}".getBytes(StandardCharsets.UTF_8);
        full.key = new byte[] {1, 2, 3};
        full.source = "counter-events/2/991";
        Event deadLetter = new Event();
        deadLetter.payload = new byte[70_000];
        deadLetter.source = "in.jsonl:3";
        deadLetter.deadLetter("invalid_json", "unexpected end of input");
        deadLetter.cutPayload();
        assertThat(deadLetter.payloadSize).isEqualTo(70_000);
        Event noCounter = new Event();
        noCounter.deadLetter("missing_field", "no counter");
        for (Event e : List.of(minimal, full, deadLetter, noCounter)) {
            assertThat(roundTrip(EventSerializer.INSTANCE, e)).as(e.toString()).isEqualTo(e);
            assertThat(EventSerializer.INSTANCE.copy(e)).isEqualTo(e);
        }
    }

    @Test
    void partialSumsComeBackWithEveryField() throws Exception {
        PartialSum plain = new PartialSum("post:1:likes", 1_764_000_000_000L);
        plain.add(5, 1_764_000_001_000L, 3_600_000);
        PartialSum full = new PartialSum("ns:ü", 1_764_000_005_000L);
        full.add(Long.MAX_VALUE - 1, 1_764_000_005_000L, 3_600_000);
        full.add(-3);
        full.users = new String[] {"u1", "ü2", ""};
        PartialSum empty = new PartialSum("x", 0);
        empty.users = null; // as a reflective copy could leave it: written as no users
        for (PartialSum p : List.of(plain, full, empty)) {
            for (PartialSum back :
                    List.of(roundTrip(PartialSum.Serializer.INSTANCE, p), PartialSum.Serializer.INSTANCE.copy(p))) {
                assertThat(back).as(p.toString()).isEqualTo(p);
                assertThat(back.trend).isEqualTo(p.trend);
                assertThat(back.users).isEqualTo(p.users == null ? PartialSum.NO_USERS : p.users);
            }
        }
        assertThat(full.negative).isTrue();
        assertThat(roundTrip(PartialSum.Serializer.INSTANCE, full).negative).isTrue();
        assertThat(roundTrip(PartialSum.Serializer.INSTANCE, plain).negative).isFalse();
    }

    @Test
    void trendWeightsComeBackEqual() throws Exception {
        TrendWeight w = roundTrip(TrendWeight.Serializer.INSTANCE, new TrendWeight("a:b", 1_764_000_000_000L, 3.25));
        assertThat(w.counter).isEqualTo("a:b");
        assertThat(w.bucket).isEqualTo(1_764_000_000_000L);
        assertThat(w.trend).isEqualTo(3.25);
    }

    @Test
    void counterUpdatesOfEveryKindComeBackEqualAndAreNotCopied() throws Exception {
        long start = 1_764_000_000_000L;
        List<CounterUpdate> updates = List.of(
                CounterUpdate.total("post:1", -3, 12, true),
                CounterUpdate.window("post:1", Resolution.M5, start, 40, 9, false, Resolution.M5.expireAtMillis(start)),
                CounterUpdate.windowUsers("post:1", Resolution.H1, start, new String[] {"u1", "ü2"}, start + 7),
                CounterUpdate.allTimeUsers("post:1", new String[] {"u1"}),
                CounterUpdate.sketch("post:1", Resolution.D1, start, new byte[] {'H', 'Y', 'L', 'L', 1}, start + 9));
        for (CounterUpdate u : updates) passedOnUncopied(CounterUpdate.Serializer.INSTANCE, u);
    }

    @Test
    void redisWritesOfEveryKindComeBackEqualAndAreNotCopied() throws Exception {
        long start = 1_764_000_000_000L;
        List<RedisWrite> writes = List.of(
                RedisWrite.count("rc:{post:1}:total", "rc:{post:1}:_v:total", -3, 12, false, RedisWrite.NO_WINDOW, 0),
                RedisWrite.count(
                                "rc:{post:1}:5m:1764000000000",
                                "rc:{post:1}:_v:5m:1764000000000",
                                40,
                                9,
                                true,
                                start,
                                start + 5)
                        .restoringMissing(),
                RedisWrite.counterCount(
                        "rc:{post:1}:1h:1764000000", "rc:{post:1}:".length(), 41, 10, false, start, start + 6),
                RedisWrite.users("rc:{post:1}:u:1h:1764000000000", new String[] {"u1", "ü2", ""}, start, start + 7),
                RedisWrite.users("rc:{post:1}:u:all", new String[] {"u1"}, RedisWrite.NO_WINDOW, 0),
                RedisWrite.sketch(
                        "rc:{post:1}:u:1d:1764000000000", new byte[] {'H', 'Y', 'L', 'L', 1}, start, start + 9),
                RedisWrite.max("rc:meta:watermark", start),
                RedisWrite.zset(
                        "rc:trending:post",
                        "rc:_v:{rc:trending:post}",
                        77,
                        new String[] {"post:1", "post:2"},
                        new double[] {2.5, -0.0},
                        RedisWrite.NO_WINDOW,
                        start + 11),
                RedisWrite.zset(
                        "rc:top:_all:1m:1764000000000",
                        "rc:_v:{rc:top:_all:1m:1764000000000}",
                        78,
                        new String[0],
                        new double[0],
                        start,
                        start + 12));
        for (RedisWrite w : writes) passedOnUncopied(RedisWrite.Serializer.INSTANCE, w);
    }

    @Test
    void windowSumsAndRollupsComeBackEqualAndAreNotCopied() throws Exception {
        long start = 1_764_000_000_000L;
        passedOnUncopied(WindowSum.Serializer.INSTANCE, new WindowSum("post:ü1", "1h", start, -42));
        for (Rollup r : List.of(
                new Rollup("post:1", "1m", start, start + 60_000, 7, 9, null, 0),
                new Rollup("post:ü1", "1d", start, start + 86_400_000, -3, 12, 5L, 2))) {
            passedOnUncopied(Rollup.Serializer.INSTANCE, r);
        }
    }

    @Test
    void snapshotsRestoreTheSameSerializer() throws Exception {
        for (TypeSerializer<?> s : List.<TypeSerializer<?>>of(
                EventSerializer.INSTANCE,
                PartialSum.Serializer.INSTANCE,
                TrendWeight.Serializer.INSTANCE,
                CounterUpdate.Serializer.INSTANCE,
                RedisWrite.Serializer.INSTANCE,
                WindowSum.Serializer.INSTANCE,
                Rollup.Serializer.INSTANCE)) {
            check(s);
        }
    }

    private static <T> void check(TypeSerializer<T> s) throws Exception {
        TypeSerializerSnapshot<T> snap = s.snapshotConfiguration();
        DataOutputSerializer out = new DataOutputSerializer(64);
        TypeSerializerSnapshot.writeVersionedSnapshot(out, snap);
        TypeSerializerSnapshot<T> read = TypeSerializerSnapshot.readVersionedSnapshot(
                new DataInputDeserializer(out.getCopyOfBuffer()), ShuffleSerializersTest.class.getClassLoader());
        assertThat(read.restoreSerializer()).isSameAs(s);
        TypeSerializerSchemaCompatibility<T> c = s.snapshotConfiguration().resolveSchemaCompatibility(read);
        assertThat(c.isCompatibleAsIs()).isTrue();
    }
}
