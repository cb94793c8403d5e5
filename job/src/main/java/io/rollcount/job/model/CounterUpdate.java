package io.rollcount.job.model;

import java.io.IOException;
import java.lang.reflect.Type;
import java.util.Arrays;
import java.util.Map;
import java.util.Objects;
import org.apache.flink.api.common.typeinfo.TypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInfoFactory;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;
import org.apache.flink.types.StringValue;

/**
 * What the counting operator ({@code CountPerCounter}) says changed about one counter, in the terms of the
 * model, not of a store: a count (the all-time total, or the sum of the window of {@link #resolution}
 * starting at {@link #windowStart}), users seen in a window (or of all time), or the whole unique-users
 * sketch of a window (written again after a loss of Redis's data). The Redis commands, with their key
 * names, are made from it beside the sink ({@code io.rollcount.job.redis.CounterUpdateWrites}).
 *
 * <p>Immutable; its {@link Serializer} copies by reference, so handing it to a chained operator costs no copy.
 */
@TypeInfo(CounterUpdate.Info.Factory.class)
public final class CounterUpdate {
    /** {@link #value} is the total or the window's sum, made of {@link #events} events. */
    public static final byte COUNT = 0;
    /** {@link #users} were seen in the window (or, without a resolution, ever). */
    public static final byte USERS = 1;
    /** {@link #sketch} is the window's whole unique-users HyperLogLog, in Redis's own format. */
    public static final byte SKETCH = 2;

    /** {@link #windowStart} of the total and of the all-time uniques. */
    public static final long NO_WINDOW = Long.MIN_VALUE;

    public final byte kind;
    public final String counter;
    /** The window's resolution; null for the all-time total (COUNT) and the all-time uniques (USERS, SKETCH). */
    public final Resolution resolution;
    /** Start of the window, epoch ms, or {@link #NO_WINDOW}. */
    public final long windowStart;
    /** COUNT: the value. */
    public final long value;
    /** COUNT: how many events the value is made of (the version of the value: it only grows). */
    public final long events;
    /** COUNT: a negative delta went in, so the value may go down. */
    public final boolean negative;
    /** USERS: the users, distinct. */
    public final String[] users;
    /**
     * USERS: the Redis HyperLogLog hash of each of {@link #users} where the counting operator had them, else
     * null. Not serialized (a deserialized update has none) and not part of {@link #equals}: the Redis sink
     * hashes users itself where it needs hashes and finds none.
     */
    public final long[] userHashes;
    /** SKETCH: the HyperLogLog's bytes as Redis stores them. */
    public final byte[] sketch;
    /** The window's absolute expiry (epoch ms: its end plus its retention), the same for every update of it; 0: none. */
    public final long expireAtMillis;

    private CounterUpdate(
            byte kind,
            String counter,
            Resolution resolution,
            long windowStart,
            long value,
            long events,
            boolean negative,
            String[] users,
            long[] userHashes,
            byte[] sketch,
            long expireAtMillis) {
        this.kind = kind;
        this.counter = counter;
        this.resolution = resolution;
        this.windowStart = windowStart;
        this.value = value;
        this.events = events;
        this.negative = negative;
        this.users = users;
        this.userHashes = userHashes;
        this.sketch = sketch;
        this.expireAtMillis = expireAtMillis;
    }

    /** The counter's all-time total (no expiry). */
    public static CounterUpdate total(String counter, long value, long events, boolean negative) {
        return new CounterUpdate(COUNT, counter, null, NO_WINDOW, value, events, negative, null, null, null, 0);
    }

    /** The sum of the counter's window of {@code r} starting at {@code start}. */
    public static CounterUpdate window(
            String counter, Resolution r, long start, long value, long events, boolean negative, long expireAtMillis) {
        return new CounterUpdate(COUNT, counter, r, start, value, events, negative, null, null, null, expireAtMillis);
    }

    /** Users seen in the counter's window of {@code r} starting at {@code start}. */
    public static CounterUpdate windowUsers(
            String counter, Resolution r, long start, String[] users, long expireAtMillis) {
        return windowUsers(counter, r, start, users, null, expireAtMillis);
    }

    /** Users seen in the window, with their Redis HyperLogLog hashes ({@link #userHashes}). */
    public static CounterUpdate windowUsers(
            String counter, Resolution r, long start, String[] users, long[] hashes, long expireAtMillis) {
        return new CounterUpdate(USERS, counter, r, start, 0, 0, false, users, hashes, null, expireAtMillis);
    }

    /** Users seen by the counter, for its all-time uniques (no expiry). */
    public static CounterUpdate allTimeUsers(String counter, String[] users) {
        return allTimeUsers(counter, users, null);
    }

    /** Users seen by the counter, with their Redis HyperLogLog hashes ({@link #userHashes}). */
    public static CounterUpdate allTimeUsers(String counter, String[] users, long[] hashes) {
        return new CounterUpdate(USERS, counter, null, NO_WINDOW, 0, 0, false, users, hashes, null, 0);
    }

    /** The whole unique-users sketch of the counter's window of {@code r} starting at {@code start}. */
    public static CounterUpdate sketch(String counter, Resolution r, long start, byte[] sketch, long expireAtMillis) {
        return new CounterUpdate(SKETCH, counter, r, start, 0, 0, false, null, null, sketch, expireAtMillis);
    }

    /** The bytes of a window's sketch, merged into the all-time uniques (a rebuild after a loss of Redis's data). */
    public static CounterUpdate allTimeSketch(String counter, byte[] sketch) {
        return new CounterUpdate(SKETCH, counter, null, NO_WINDOW, 0, 0, false, null, null, sketch, 0);
    }

    /** Whether this is the all-time total or all-time uniques (no window). */
    public boolean allTime() {
        return resolution == null;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CounterUpdate u
                && kind == u.kind
                && windowStart == u.windowStart
                && value == u.value
                && events == u.events
                && negative == u.negative
                && expireAtMillis == u.expireAtMillis
                && counter.equals(u.counter)
                && resolution == u.resolution
                && Arrays.equals(users, u.users)
                && Arrays.equals(sketch, u.sketch);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, counter, resolution, windowStart, value, events);
    }

    @Override
    public String toString() {
        String what = (resolution == null ? "all" : resolution.label + "@" + windowStart);
        return switch (kind) {
            case COUNT ->
                counter + " " + what + " = " + value + " (" + events + " events" + (negative ? ", negative" : "")
                        + (expireAtMillis > 0 ? ", expires " + expireAtMillis : "") + ")";
            case USERS -> counter + " " + what + " users " + Arrays.toString(users);
            default -> counter + " " + what + " sketch of " + sketch.length + " bytes";
        };
    }

    /**
     * Kind, counter (as Flink writes strings), resolution (its ordinal, -1 for none), window start, then
     * what the kind carries and the expiry; immutable, so copies are the record itself.
     */
    public static final class Serializer extends ImmutableRecordSerializer<CounterUpdate> {
        private static final long serialVersionUID = 1L;
        public static final Serializer INSTANCE = new Serializer();

        @Override
        public CounterUpdate createInstance() {
            return total("", 0, 0, false);
        }

        @Override
        public void serialize(CounterUpdate u, DataOutputView out) throws IOException {
            out.writeByte(u.kind);
            StringValue.writeString(u.counter, out);
            out.writeByte(u.resolution == null ? -1 : u.resolution.ordinal());
            out.writeLong(u.windowStart);
            switch (u.kind) {
                case COUNT -> {
                    out.writeLong(u.value);
                    out.writeLong(u.events);
                    out.writeBoolean(u.negative);
                }
                case USERS -> {
                    out.writeInt(u.users.length);
                    for (String user : u.users) StringValue.writeString(user, out);
                }
                case SKETCH -> {
                    out.writeInt(u.sketch.length);
                    out.write(u.sketch);
                }
                default -> throw new IOException("unknown counter update kind " + u.kind);
            }
            out.writeLong(u.expireAtMillis);
        }

        @Override
        public CounterUpdate deserialize(DataInputView in) throws IOException {
            byte kind = in.readByte();
            String counter = StringValue.readString(in);
            byte res = in.readByte();
            Resolution r = res < 0 ? null : Resolution.all()[res];
            long start = in.readLong();
            long value = 0, events = 0;
            boolean negative = false;
            String[] users = null;
            byte[] sketch = null;
            switch (kind) {
                case COUNT -> {
                    value = in.readLong();
                    events = in.readLong();
                    negative = in.readBoolean();
                }
                case USERS -> {
                    users = new String[in.readInt()];
                    for (int i = 0; i < users.length; i++) users[i] = StringValue.readString(in);
                }
                case SKETCH -> {
                    sketch = new byte[in.readInt()];
                    in.readFully(sketch);
                }
                default -> throw new IOException("unknown counter update kind " + kind);
            }
            return new CounterUpdate(
                    kind, counter, r, start, value, events, negative, users, null, sketch, in.readLong());
        }

        @Override
        public TypeSerializerSnapshot<CounterUpdate> snapshotConfiguration() {
            return new Snapshot();
        }

        /** No configuration: the snapshot only names the serializer. */
        public static final class Snapshot extends SimpleTypeSerializerSnapshot<CounterUpdate> {
            public Snapshot() {
                super(() -> INSTANCE);
            }
        }
    }

    /** Flink's type information for {@link CounterUpdate} ({@link HandSerializedTypeInfo}): its {@link Serializer}. */
    public static final class Info extends HandSerializedTypeInfo<CounterUpdate> {
        private static final long serialVersionUID = 1L;
        public static final Info INSTANCE = new Info();

        /** What the {@code @TypeInfo} annotation names. */
        public static final class Factory extends TypeInfoFactory<CounterUpdate> {
            @Override
            public TypeInformation<CounterUpdate> createTypeInfo(
                    Type t, Map<String, TypeInformation<?>> genericParameters) {
                return INSTANCE;
            }
        }

        private Info() {
            super(CounterUpdate.class, Serializer.INSTANCE);
        }
    }
}
