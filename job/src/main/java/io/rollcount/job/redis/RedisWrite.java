package io.rollcount.job.redis;

import io.rollcount.job.model.HandSerializedTypeInfo;
import io.rollcount.job.model.ImmutableRecordSerializer;
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
 * One idempotent write to Redis, as the counting operators emit it and the {@code RedisSink} applies it.
 * Keys are complete (prefix included); every key of one counter shares its hash tag {@code {C}}.
 *
 * <p>Kinds:
 * <ul>
 *   <li>{@link #COUNT}: {@code SET key value}. {@link #version} is the number of events folded into the
 *       value; {@link #monotone} says the value only ever received positive deltas. Where a replay can
 *       reach the key (see {@code RedisSinkWriter}), the write is guarded: skipped if the version stored
 *       under {@link #versionKey} is already {@code >= version}, or if monotone and the stored value is
 *       larger; elsewhere it is a plain {@code SET}. A write that is not monotone also sets the version key.
 *   <li>{@link #USERS}: {@code PFADD key users...}: Redis's own HyperLogLog of the {@link #users}; idempotent,
 *       so a replay changes nothing and the key never shrinks.
 *   <li>{@link #MAX}: {@code SET key value} if larger than the stored value (the watermark, the writers' mark).
 *   <li>{@link #ZSET}: replace the sorted set at {@code key} atomically by {@link #members} with
 *       {@link #scores}, if {@link #version} is not older than the stored {@link #versionKey}.
 * </ul>
 * A guarded COUNT or ZSET that {@link #restoresMissing} is written whenever its key is missing, whatever its version
 * key says: what a rebuild from {@code counter-rollups} writes, so that a key lost on its own (an eviction, a
 * {@code DEL}) while its version key survived comes back.
 * {@link #expireAtMillis} {@code > 0} is the key's absolute expiry (epoch ms: a window's end plus its
 * retention), the same for every write of that key, so a replay or a late revision never moves it; 0 means
 * no expiry. {@link #windowStart} is the start of the key's window (epoch ms), {@link #NO_WINDOW} for a key of
 * no window (a total, {@code u:all}, a trending list, the watermark).
 *
 * <p>A write is not changed once emitted: its {@link Info type information}'s serializer copies it as the same
 * object between chained operators (Flink's reflective POJO copy of every write into the sink cost more than
 * building it), and a {@code RedisWriteBuffer} copies what it changes.
 */
@TypeInfo(RedisWrite.Info.Factory.class)
public class RedisWrite {
    public static final byte COUNT = 0;
    public static final byte USERS = 1;
    public static final byte MAX = 2;
    public static final byte ZSET = 3;
    /**
     * A unique-users sketch in Redis's own HyperLogLog format ({@link #sketch}), merged into the key with
     * {@code PFMERGE} (through a staging key of the counter's, see {@link RedisKeys#stagingKeyOf}): what a
     * rebuild after a loss of Redis's data writes from the sketches the job holds.
     */
    public static final byte SKETCH = 4;

    public static final long NO_WINDOW = Long.MIN_VALUE;

    public byte kind;
    public String key;
    /** Bookkeeping key of the version ({@code rc:{C}:_v:...} or {@code rc:_...}); null where unused or derived. */
    private String versionKey;
    /**
     * A counter key's version key is derived from the key ({@link #versionKey()}): the length of the key's base
     * {@code P:{C}:}, where {@code _v:} goes in; -1 where {@link #versionKey} is given.
     */
    private int versionAt = -1;

    public long value;
    public long version;
    public boolean monotone;
    /** COUNT, ZSET: written where the key is missing, whatever the version key says (a rebuild's writes). */
    public boolean restoresMissing;
    /** Absolute expiry, epoch ms; 0: none. */
    public long expireAtMillis;
    /** Start of the key's window, epoch ms, or {@link #NO_WINDOW}. */
    public long windowStart = NO_WINDOW;
    /** USERS: the distinct users to PFADD. */
    public String[] users;
    /**
     * USERS: the Redis HyperLogLog hash of each of {@link #users}, where the writer had them ({@link
     * #withUserHashes}), else null; not serialized and not part of {@link #equals}.
     */
    public long[] userHashes;
    /** ZSET: members and their scores, best first. */
    public String[] members;

    public double[] scores;
    /** SKETCH: the HyperLogLog's bytes as Redis stores them. */
    public byte[] sketch;

    public RedisWrite() {}

    public static RedisWrite count(
            String key,
            String versionKey,
            long value,
            long version,
            boolean monotone,
            long windowStart,
            long expireAtMillis) {
        RedisWrite w = new RedisWrite();
        w.kind = COUNT;
        w.key = key;
        w.versionKey = versionKey;
        w.value = value;
        w.version = version;
        w.monotone = monotone;
        w.windowStart = windowStart;
        w.expireAtMillis = expireAtMillis;
        return w;
    }

    /**
     * A COUNT of the counter key {@code key} = {@code base + suffix} ({@code baseLength} its base's length): as
     * {@link #count(String, String, long, long, boolean, long, long)} with the version key {@link
     * RedisKeys#versionKey(String, String) base + "_v:" + suffix}, which is built only where a write reads it (a
     * guarded or non-monotone one), not for every write.
     */
    public static RedisWrite counterCount(
            String key,
            int baseLength,
            long value,
            long version,
            boolean monotone,
            long windowStart,
            long expireAtMillis) {
        if (baseLength <= 0 || baseLength > key.length()) {
            throw new IllegalArgumentException("base length " + baseLength + " outside key " + key);
        }
        RedisWrite w = count(key, null, value, version, monotone, windowStart, expireAtMillis);
        w.versionAt = baseLength;
        return w;
    }

    /** The bookkeeping key of the version ({@code rc:{C}:_v:...} or {@code rc:_...}); null where unused. */
    public String versionKey() {
        if (versionKey != null || versionAt < 0) return versionKey;
        return RedisKeys.versionKey(key.substring(0, versionAt), key.substring(versionAt));
    }

    /** This write, also written where its key is missing whatever its version key says ({@link #restoresMissing}). */
    public RedisWrite restoringMissing() {
        restoresMissing = true;
        return this;
    }

    public static RedisWrite users(String key, String[] users, long windowStart, long expireAtMillis) {
        RedisWrite w = new RedisWrite();
        w.kind = USERS;
        w.key = key;
        w.users = users;
        w.windowStart = windowStart;
        w.expireAtMillis = expireAtMillis;
        return w;
    }

    /** This write, with {@code hashes} as its users' Redis HyperLogLog hashes ({@link #userHashes}). */
    public RedisWrite withUserHashes(long[] hashes) {
        userHashes = hashes;
        return this;
    }

    public static RedisWrite sketch(String key, byte[] sketch, long windowStart, long expireAtMillis) {
        RedisWrite w = new RedisWrite();
        w.kind = SKETCH;
        w.key = key;
        w.sketch = sketch;
        w.windowStart = windowStart;
        w.expireAtMillis = expireAtMillis;
        return w;
    }

    public static RedisWrite max(String key, long value) {
        RedisWrite w = new RedisWrite();
        w.kind = MAX;
        w.key = key;
        w.value = value;
        return w;
    }

    public static RedisWrite zset(
            String key,
            String versionKey,
            long version,
            String[] members,
            double[] scores,
            long windowStart,
            long expireAtMillis) {
        RedisWrite w = new RedisWrite();
        w.kind = ZSET;
        w.key = key;
        w.versionKey = versionKey;
        w.version = version;
        w.members = members;
        w.scores = scores;
        w.windowStart = windowStart;
        w.expireAtMillis = expireAtMillis;
        return w;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof RedisWrite w)) return false;
        return kind == w.kind
                && value == w.value
                && version == w.version
                && monotone == w.monotone
                && restoresMissing == w.restoresMissing
                && expireAtMillis == w.expireAtMillis
                && windowStart == w.windowStart
                && Objects.equals(key, w.key)
                && Objects.equals(versionKey(), w.versionKey())
                && Arrays.equals(users, w.users)
                && Arrays.equals(members, w.members)
                && Arrays.equals(scores, w.scores)
                && Arrays.equals(sketch, w.sketch);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, key, value, version);
    }

    @Override
    public String toString() {
        return "RedisWrite{kind=" + kind + " " + key + "="
                + (kind == USERS ? Arrays.toString(users) : Long.toString(value)) + " v" + version
                + (monotone ? " mono" : "") + (expireAtMillis > 0 ? " pxat=" + expireAtMillis : "") + "}";
    }

    /**
     * Flink's serializer of a write: every field, a null string or array included (a string by {@link StringValue},
     * an array as its length, -1 for null, then its elements); {@link #copy} is the write itself (see the class
     * comment).
     */
    public static final class Serializer extends ImmutableRecordSerializer<RedisWrite> {
        private static final long serialVersionUID = 1L;
        public static final Serializer INSTANCE = new Serializer();

        @Override
        public RedisWrite createInstance() {
            return new RedisWrite();
        }

        @Override
        public void serialize(RedisWrite w, DataOutputView out) throws IOException {
            out.writeByte(w.kind);
            StringValue.writeString(w.key, out);
            StringValue.writeString(w.versionKey(), out);
            out.writeLong(w.value);
            out.writeLong(w.version);
            out.writeBoolean(w.monotone);
            out.writeBoolean(w.restoresMissing);
            out.writeLong(w.expireAtMillis);
            out.writeLong(w.windowStart);
            writeStrings(w.users, out);
            writeStrings(w.members, out);
            out.writeInt(w.scores == null ? -1 : w.scores.length);
            if (w.scores != null) for (double d : w.scores) out.writeDouble(d);
            out.writeInt(w.sketch == null ? -1 : w.sketch.length);
            if (w.sketch != null) out.write(w.sketch);
        }

        @Override
        public RedisWrite deserialize(DataInputView in) throws IOException {
            RedisWrite w = new RedisWrite();
            w.kind = in.readByte();
            w.key = StringValue.readString(in);
            w.versionKey = StringValue.readString(in);
            w.value = in.readLong();
            w.version = in.readLong();
            w.monotone = in.readBoolean();
            w.restoresMissing = in.readBoolean();
            w.expireAtMillis = in.readLong();
            w.windowStart = in.readLong();
            w.users = readStrings(in);
            w.members = readStrings(in);
            int n = in.readInt();
            if (n >= 0) {
                w.scores = new double[n];
                for (int i = 0; i < n; i++) w.scores[i] = in.readDouble();
            }
            n = in.readInt();
            if (n >= 0) {
                w.sketch = new byte[n];
                in.readFully(w.sketch);
            }
            return w;
        }

        private static void writeStrings(String[] strings, DataOutputView out) throws IOException {
            out.writeInt(strings == null ? -1 : strings.length);
            if (strings != null) for (String s : strings) StringValue.writeString(s, out);
        }

        private static String[] readStrings(DataInputView in) throws IOException {
            int n = in.readInt();
            if (n < 0) return null;
            String[] strings = new String[n];
            for (int i = 0; i < n; i++) strings[i] = StringValue.readString(in);
            return strings;
        }

        @Override
        public TypeSerializerSnapshot<RedisWrite> snapshotConfiguration() {
            return new Snapshot();
        }

        /** No configuration: the snapshot only names the serializer. */
        public static final class Snapshot extends SimpleTypeSerializerSnapshot<RedisWrite> {
            public Snapshot() {
                super(() -> INSTANCE);
            }
        }
    }

    /** Flink's type information for {@link RedisWrite} ({@link HandSerializedTypeInfo}): its {@link Serializer}. */
    public static final class Info extends HandSerializedTypeInfo<RedisWrite> {
        private static final long serialVersionUID = 1L;
        public static final Info INSTANCE = new Info();

        /** What the {@code @TypeInfo} annotation names. */
        public static final class Factory extends TypeInfoFactory<RedisWrite> {
            @Override
            public TypeInformation<RedisWrite> createTypeInfo(
                    Type t, Map<String, TypeInformation<?>> genericParameters) {
                return INSTANCE;
            }
        }

        private Info() {
            super(RedisWrite.class, Serializer.INSTANCE);
        }
    }
}
