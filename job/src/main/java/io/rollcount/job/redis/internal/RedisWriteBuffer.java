package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisWrite;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The writes a {@code RedisSinkWriter} holds (on the task's mailbox thread) between flushes, coalesced per key, so that Redis receives
 * the latest state of each key once per flush instead of every intermediate value:
 * <ul>
 *   <li>COUNT: the write with the highest version (the last one on a tie);
 *   <li>USERS: the set of distinct users of every write of the key since its last flush (one {@code PFADD});
 *   <li>MAX: the largest value;
 *   <li>ZSET: the write with the highest version (the last one on a tie);
 *   <li>SKETCH: the last one (a later sketch of the same window holds every user of an earlier one); held
 *       apart from the key's USERS, as a {@code PFMERGE} and a {@code PFADD} commute.
 * </ul>
 * {@link #drain} gives the writes in the order of their keys' first write, MAX writes (the watermark) last.
 */
public final class RedisWriteBuffer {

    private static final class Entry {
        RedisWrite write;
        /** USERS: the distinct users of the key's writes once it has a second one; null while it has one. */
        HashSet<String> users;
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

    /** Adds {@code w} (copied: the caller may reuse its object; its arrays are read, never changed). */
    public void add(RedisWrite w) {
        validate(w);
        String slot = w.kind == RedisWrite.SKETCH ? "\0" + w.key : w.key;
        Entry fresh = new Entry();
        Entry e = byKey.putIfAbsent(slot, fresh); // one lookup: most keys are new in a flush
        if (e == null) {
            fresh.write = copy(w);
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
                if (w.version >= old.version) e.write = copy(w);
            }
            case RedisWrite.MAX -> {
                if (w.value > old.value) e.write = copy(w);
            }
            case RedisWrite.USERS -> addUsers(e, w.users);
            case RedisWrite.SKETCH -> e.write = copy(w);
            case RedisWrite.ZSET -> {
                if (w.version >= old.version) {
                    bytes += sizeOf(w) - sizeOf(old);
                    e.write = copy(w);
                }
            }
            default -> throw new IllegalArgumentException("unknown RedisWrite kind " + w.kind + " for key " + w.key);
        }
    }

    /**
     * A second write of a USERS key: the set of both starts here, from the first write's array (held as it
     * came while the key had one write, which is most keys: a set per key cost more than its users).
     */
    private void addUsers(Entry e, String[] users) {
        if (e.users == null) {
            String[] first = e.write.users;
            e.users = new HashSet<>(Math.max(4, (first.length + users.length) * 2));
            bytes -= bytesOf(first);
            addDistinct(e.users, first);
        }
        addDistinct(e.users, users);
    }

    private void addDistinct(HashSet<String> set, String[] users) {
        for (String u : users) {
            if (set.add(u)) bytes += bytesOf(u);
        }
    }

    /** Empties the buffer: every key's write once, in the order of the keys' first write, MAX writes last. */
    public List<RedisWrite> drain() {
        List<RedisWrite> out = new ArrayList<>(byKey.size());
        List<RedisWrite> last = new ArrayList<>(1);
        for (Entry e : byKey.values()) {
            RedisWrite w = e.write;
            if (w.kind == RedisWrite.USERS && e.users != null) w.users = e.users.toArray(new String[0]);
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

    private static RedisWrite copy(RedisWrite w) {
        RedisWrite c = new RedisWrite();
        c.kind = w.kind;
        c.key = w.key;
        c.versionKey = w.versionKey;
        c.value = w.value;
        c.version = w.version;
        c.monotone = w.monotone;
        c.restoresMissing = w.restoresMissing;
        c.expireAtMillis = w.expireAtMillis;
        c.windowStart = w.windowStart;
        c.users = w.users;
        c.members = w.members;
        c.scores = w.scores;
        c.sketch = w.sketch;
        return c;
    }
}
