package io.rollcount.job.redis;

import java.util.Arrays;
import java.util.Objects;

/**
 * One idempotent, monotone write to Redis, as the counting operators emit it and the {@code RedisSink}
 * applies it. Keys are complete (prefix included); every key of one counter shares its hash tag
 * {@code {C}}, so the sink may batch them into one server-side script call.
 *
 * <p>Kinds:
 * <ul>
 *   <li>{@link #COUNT}: {@code SET key value} unless the version stored under {@link #versionKey} is
 *       already {@code >= version}, or {@link #monotone} is set and the stored value is larger. Version
 *       is the number of events folded into the value, so a replay after a restart from a checkpoint
 *       never overwrites a newer value with an older one, and the final value (every event) always wins.
 *   <li>{@link #HLL}: merge the Redis-format HyperLogLog in {@link #bytes} into {@code key} (register max,
 *       as PFMERGE does): registers only grow, so a replay can never shrink what Redis holds. A
 *       {@linkplain #growingHll growing} sketch (flag {@link #monotone}) replaces the key instead, cheaper
 *       than a merge, where the key holds what the same writer wrote last.
 *   <li>{@link #MAX}: {@code SET key value} if larger than the stored value (the watermark).
 *   <li>{@link #ZSET}: replace the sorted set at {@code key} atomically by {@link #members} with
 *       {@link #scores}, if {@link #version} is not older than the stored {@link #versionKey}.
 * </ul>
 * {@link #ttlMillis} {@code > 0} sets the key's expiry (counted from this write); 0 means no expiry.
 */
public class RedisWrite {
    public static final byte COUNT = 0;
    public static final byte HLL = 1;
    public static final byte MAX = 2;
    public static final byte ZSET = 3;

    public byte kind;
    public String key;
    /** Bookkeeping key of the version ({@code rc:{C}:_v:...} or {@code rc:_...}); null where unused. */
    public String versionKey;
    public long value;
    public long version;
    public boolean monotone;
    public long ttlMillis;
    /** HLL: the sketch in Redis's own format (dense or sparse). */
    public byte[] bytes;
    /** ZSET: members and their scores, best first. */
    public String[] members;
    public double[] scores;

    public RedisWrite() {}

    public static RedisWrite count(String key, String versionKey, long value, long version, boolean monotone, long ttlMillis) {
        RedisWrite w = new RedisWrite();
        w.kind = COUNT;
        w.key = key;
        w.versionKey = versionKey;
        w.value = value;
        w.version = version;
        w.monotone = monotone;
        w.ttlMillis = ttlMillis;
        return w;
    }

    public static RedisWrite hll(String key, byte[] sketch, long ttlMillis) {
        RedisWrite w = new RedisWrite();
        w.kind = HLL;
        w.key = key;
        w.bytes = sketch;
        w.ttlMillis = ttlMillis;
        return w;
    }

    /**
     * An HLL write of a sketch that only grows for as long as the sink writer receiving it lives: the
     * writer's own sketches, fed to it by the operator it is chained to (the two start and stop together).
     * The writer marks the value it writes with its lineage (a number unique to this writer's life, in the
     * three unused header bytes of Redis's format); where the key still holds this lineage's mark, the
     * newer sketch contains what is there and replaces it. Anything else (a key of another lineage, one
     * that PFADD built or a merge touched) is merged into, never shrunk.
     */
    public static RedisWrite growingHll(String key, byte[] sketch, long ttlMillis) {
        RedisWrite w = hll(key, sketch, ttlMillis);
        w.monotone = true;
        return w;
    }

    public static RedisWrite max(String key, long value) {
        RedisWrite w = new RedisWrite();
        w.kind = MAX;
        w.key = key;
        w.value = value;
        return w;
    }

    public static RedisWrite zset(String key, String versionKey, long version, String[] members, double[] scores, long ttlMillis) {
        RedisWrite w = new RedisWrite();
        w.kind = ZSET;
        w.key = key;
        w.versionKey = versionKey;
        w.version = version;
        w.members = members;
        w.scores = scores;
        w.ttlMillis = ttlMillis;
        return w;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof RedisWrite w)) return false;
        return kind == w.kind && value == w.value && version == w.version && monotone == w.monotone
                && ttlMillis == w.ttlMillis && Objects.equals(key, w.key) && Objects.equals(versionKey, w.versionKey)
                && Arrays.equals(bytes, w.bytes) && Arrays.equals(members, w.members) && Arrays.equals(scores, w.scores);
    }

    @Override
    public int hashCode() {
        return Objects.hash(kind, key, value, version);
    }

    @Override
    public String toString() {
        return "RedisWrite{kind=" + kind + " " + key + "=" + value + " v" + version + (monotone ? " mono" : "")
                + (ttlMillis > 0 ? " ttl=" + ttlMillis : "") + "}";
    }
}
