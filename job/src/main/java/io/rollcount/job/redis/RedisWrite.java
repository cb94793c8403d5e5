package io.rollcount.job.redis;

import java.util.Arrays;
import java.util.Objects;

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
 */
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
    /** Bookkeeping key of the version ({@code rc:{C}:_v:...} or {@code rc:_...}); null where unused. */
    public String versionKey;

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
                && Objects.equals(versionKey, w.versionKey)
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
}
