package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisWrite;
import io.rollcount.sketches.RedisHyperLogLog;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The writes a {@code RedisSinkWriter} holds (on the task's mailbox thread) between flushes, coalesced per key,
 * so that Redis receives the latest state of each key once per flush instead of every intermediate value:
 * <ul>
 *   <li>COUNT: the write with the highest version (the last one on a tie);
 *   <li>USERS: the users of every write of the key since its last flush, one per Redis HyperLogLog hash
 *       (one {@code PFADD}; see {@link DistinctUsers});
 *   <li>MAX: the largest value;
 *   <li>ZSET: the write with the highest version (the last one on a tie);
 *   <li>SKETCH: one sketch of every register's largest value (what {@code PFMERGE} of each would leave); held
 *       apart from the key's USERS, as a {@code PFMERGE} and a {@code PFADD} commute.
 * </ul>
 * {@link #drain} gives the writes in the order of their keys' first write, MAX writes (the watermark) last.
 *
 * <p>A write is held as it came (writes are not changed once emitted); the buffer builds a new one only
 * for a USERS key written more than once.
 */
public final class RedisWriteBuffer {

    private static final class Entry {
        RedisWrite write;
        /** USERS: the distinct users of the key's writes once it has a second one; null while it has one. */
        DistinctUsers users;
    }

    /**
     * A USERS key's users, one per Redis HyperLogLog hash (MurmurHash64A of the user's UTF-8 bytes, seed
     * 0xadc83b19, as {@code PFADD} hashes it): Redis sets the register and count a user's hash gives, so two
     * users of one hash change a HyperLogLog exactly as either alone does, and sending one is exact. The hashes
     * sit in a {@link LongHashSet} (no node per user), the users in an array in the order first seen.
     */
    static final class DistinctUsers {
        private final LongHashSet hashes;
        private String[] users;
        private int size;

        DistinctUsers(int expected) {
            hashes = new LongHashSet(expected);
            users = new String[Math.max(4, expected)];
        }

        /** Adds the users of a write ({@code hashes} theirs, or null); returns the bytes of those added. */
        long addAll(String[] more, long[] moreHashes) {
            long added = 0;
            for (int i = 0; i < more.length; i++) {
                long h = moreHashes != null ? moreHashes[i] : RedisHyperLogLog.hash(more[i]);
                if (!hashes.add(h)) continue;
                if (size == users.length) users = Arrays.copyOf(users, size * 2);
                users[size++] = more[i];
                added += bytesOf(more[i]);
            }
            return added;
        }

        String[] toArray() {
            return Arrays.copyOf(users, size);
        }
    }

    private Map<String, Entry> byKey = new LinkedHashMap<>();
    private long bytes;
    private long coalesced;

    public int keys() {
        return byKey.size();
    }

    public boolean isEmpty() {
        return byKey.isEmpty();
    }

    /** Roughly the bytes of users and sorted-set members held. */
    public long bytes() {
        return bytes;
    }

    /** How many writes were absorbed by coalescing since the last call. */
    public long takeCoalesced() {
        long c = coalesced;
        coalesced = 0;
        return c;
    }

    /** Adds {@code w}, held as it is: the caller does not change it afterwards (its arrays are read, never changed). */
    public void add(RedisWrite w) {
        validate(w);
        String slot = w.kind == RedisWrite.SKETCH ? "\0" + w.key : w.key;
        Entry fresh = new Entry();
        Entry e = byKey.putIfAbsent(slot, fresh); // one lookup: most keys are new in a flush
        if (e == null) {
            fresh.write = w;
            if (w.kind == RedisWrite.USERS) {
                bytes += bytesOf(w.users);
            } else if (w.kind == RedisWrite.ZSET) {
                bytes += sizeOf(w);
            } else if (w.kind == RedisWrite.SKETCH) {
                bytes += w.sketch.length;
            }
            return;
        }
        RedisWrite old = e.write;
        if (old.kind != w.kind) {
            throw new IllegalArgumentException(
                    "key " + w.key + " is written both as kind " + old.kind + " and as kind " + w.kind);
        }
        coalesced++;
        switch (w.kind) {
            case RedisWrite.COUNT -> {
                if (w.version >= old.version) e.write = w;
            }
            case RedisWrite.MAX -> {
                if (w.value > old.value) e.write = w;
            }
            case RedisWrite.USERS -> addUsers(e, w);
            case RedisWrite.SKETCH -> {
                e.write = mergedSketch(old, w);
                bytes += e.write.sketch.length - old.sketch.length;
            }
            case RedisWrite.ZSET -> {
                if (w.version >= old.version) {
                    bytes += sizeOf(w) - sizeOf(old);
                    e.write = w;
                }
            }
            default -> throw new IllegalArgumentException("unknown RedisWrite kind " + w.kind + " for key " + w.key);
        }
    }

    /**
     * A second write of a USERS key: the set of both starts here, from the first write's array (held as it
     * came while the key had one write, which is most keys: a set per key cost more than its users).
     */
    private void addUsers(Entry e, RedisWrite w) {
        if (e.users == null) {
            RedisWrite first = e.write;
            e.users = new DistinctUsers((first.users.length + w.users.length) * 2);
            bytes -= bytesOf(first.users);
            bytes += e.users.addAll(first.users, first.userHashes);
        }
        bytes += e.users.addAll(w.users, w.userHashes);
    }

    /** Empties the buffer: every key's write once, in the order of the keys' first write, MAX writes last. */
    public List<RedisWrite> drain() {
        List<RedisWrite> out = new ArrayList<>(byKey.size());
        List<RedisWrite> last = new ArrayList<>(1);
        for (Entry e : byKey.values()) {
            RedisWrite w = e.write;
            if (e.users != null) w = RedisWrite.users(w.key, e.users.toArray(), w.windowStart, w.expireAtMillis);
            (w.kind == RedisWrite.MAX ? last : out).add(w);
        }
        out.addAll(last);
        // a new map rather than clear(): clear() walks the whole table, however large it once grew; sized for as
        // many keys as this flush had, so that it does not grow from 16 keys again one doubling at a time
        byKey = new LinkedHashMap<>(capacityFor(out.size()));
        bytes = 0;
        return out;
    }

    /** A hash map capacity that holds {@code keys} keys without a resize (load factor 0.75). */
    private static int capacityFor(int keys) {
        return (int) Math.min(1 << 30, Math.max(16, (keys * 4L + 2) / 3));
    }

    /** True if {@link #hashTag}{@code (key)} equals {@code tag}, without building the substring. */
    public static boolean hasTag(String key, String tag) {
        int open = key.indexOf('{');
        return open >= 0
                && key.startsWith(tag, open + 1)
                && key.length() > open + 1 + tag.length()
                && key.charAt(open + 1 + tag.length()) == '}'
                && !tag.isEmpty()
                && tag.indexOf('}') < 0;
    }

    /** The Redis Cluster hash tag of a key (text between the first '{' and the next '}'), or null. */
    public static String hashTag(String key) {
        int open = key.indexOf('{');
        if (open < 0) return null;
        int close = key.indexOf('}', open + 1);
        if (close < 0 || close == open + 1) return null;
        return key.substring(open + 1, close);
    }

    /** One SKETCH write of both sketches' registers, each its larger value, as the later write. */
    private static RedisWrite mergedSketch(RedisWrite earlier, RedisWrite later) {
        RedisHyperLogLog merged = RedisHyperLogLog.fromRedisBytes(later.sketch);
        merged.merge(RedisHyperLogLog.fromRedisBytes(earlier.sketch));
        return RedisWrite.sketch(later.key, merged.toRedisBytes(), later.windowStart, later.expireAtMillis);
    }

    private static void validate(RedisWrite w) {
        if (w == null) throw new IllegalArgumentException("null RedisWrite");
        if (w.key == null || w.key.isEmpty()) throw new IllegalArgumentException("RedisWrite without a key: " + w);
        switch (w.kind) {
            case RedisWrite.COUNT, RedisWrite.MAX -> {}
            case RedisWrite.SKETCH -> {
                if (w.sketch == null || w.sketch.length == 0)
                    throw new IllegalArgumentException("SKETCH write without a sketch for key " + w.key);
            }
            case RedisWrite.USERS -> {
                if (w.users == null || w.users.length == 0)
                    throw new IllegalArgumentException("USERS write without users for key " + w.key);
                if (w.userHashes != null && w.userHashes.length != w.users.length)
                    throw new IllegalArgumentException("USERS write with " + w.users.length + " users but "
                            + w.userHashes.length + " hashes for key " + w.key);
            }
            case RedisWrite.ZSET -> {
                int n = w.members == null ? 0 : w.members.length;
                int m = w.scores == null ? 0 : w.scores.length;
                if (n != m)
                    throw new IllegalArgumentException(
                            "ZSET write with " + n + " members but " + m + " scores for key " + w.key);
                for (double s : w.scores == null ? new double[0] : w.scores) {
                    if (Double.isNaN(s))
                        throw new IllegalArgumentException("ZSET write with a NaN score for key " + w.key);
                }
            }
            default -> throw new IllegalArgumentException("unknown RedisWrite kind " + w.kind + " for key " + w.key);
        }
        if (w.expireAtMillis < 0)
            throw new IllegalArgumentException("negative expireAtMillis " + w.expireAtMillis + " for key " + w.key);
    }

    private static long sizeOf(RedisWrite w) {
        return w.members == null ? 0 : bytesOf(w.members);
    }

    /** Roughly the heap bytes of the strings held (users, sorted-set members). */
    private static long bytesOf(String[] strings) {
        long b = 0;
        for (String s : strings) b += bytesOf(s);
        return b;
    }

    private static long bytesOf(String s) {
        return s.length() + 16;
    }
}
