package io.rollcount.job.redis;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The writes a {@link RedisSinkWriter} holds between flushes, coalesced per key, so that Redis receives
 * the latest state of each key once per flush instead of every intermediate value:
 * <ul>
 *   <li>COUNT: the write with the highest version (the last one on a tie);
 *   <li>MAX: the largest value;
 *   <li>HLL: every sketch, in order (the script merges them one after another, which equals merging them
 *       here: PFMERGE is a register-wise maximum), or the newest alone if all are growing sketches;
 *   <li>ZSET: the write with the highest version (the last one on a tie).
 * </ul>
 * {@link #drain} groups the writes by Redis Cluster hash tag ({@code {C}}: one counter) into script calls,
 * writes without a tag each in a call of their own, and MAX writes (the watermark) last, so that a reader
 * who sees the watermark of a flush also sees every other write of that flush.
 */
final class RedisWriteBuffer {

    private static final class Entry {
        RedisWrite write;
        List<byte[]> sketches;
    }

    private final String keyPrefix;
    private Map<String, Entry> byKey = new LinkedHashMap<>();
    private long bytes;
    private long coalesced;

    RedisWriteBuffer(String keyPrefix) {
        this.keyPrefix = keyPrefix;
    }

    int keys() {
        return byKey.size();
    }

    boolean isEmpty() {
        return byKey.isEmpty();
    }

    /** Roughly the bytes of sketches and sorted-set members held. */
    long bytes() {
        return bytes;
    }

    /** How many writes were absorbed by coalescing since the last call. */
    long takeCoalesced() {
        long c = coalesced;
        coalesced = 0;
        return c;
    }

    /** Adds a copy of {@code w} (the caller may reuse its object). */
    void add(RedisWrite w) {
        validate(w);
        Entry e = byKey.get(w.key);
        if (e == null) {
            e = new Entry();
            e.write = copy(w);
            if (w.kind == RedisWrite.HLL) {
                e.sketches = new ArrayList<>(2);
                e.sketches.add(w.bytes);
                bytes += w.bytes.length;
            } else if (w.kind == RedisWrite.ZSET) {
                bytes += sizeOf(w);
            }
            byKey.put(w.key, e);
            return;
        }
        RedisWrite old = e.write;
        if (old.kind != w.kind) {
            throw new IllegalArgumentException("key " + w.key + " is written both as kind " + old.kind + " and as kind " + w.kind);
        }
        coalesced++;
        switch (w.kind) {
            case RedisWrite.COUNT -> {
                if (w.version >= old.version) e.write = copy(w);
            }
            case RedisWrite.MAX -> {
                if (w.value > old.value) e.write = copy(w);
            }
            case RedisWrite.HLL -> {
                if (w.monotone && old.monotone) {
                    // both growing sketches of this writer's operator: the newer contains the older
                    for (byte[] sk : e.sketches) bytes -= sk.length;
                    e.sketches.clear();
                } else {
                    old.monotone = false; // a sketch of unknown origin among them: merge them all
                }
                e.sketches.add(w.bytes);
                bytes += w.bytes.length;
                e.write.ttlMillis = w.ttlMillis;
            }
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
     * Empties the buffer into script calls: one per hash tag (at most {@code maxWritesPerCall} writes each,
     * so no single script blocks Redis for long), untagged keys one call each, MAX writes last.
     */
    List<RedisApplyScript.Call> drain(int maxWritesPerCall) {
        return drain(maxWritesPerCall, 1);
    }

    /**
     * As {@link #drain(int)}, but packs the calls of up to {@code countersPerCall} hash tags into one call
     * (while it stays within {@code maxWritesPerCall} writes): fewer commands and round trips for a
     * single Redis server, where a script may touch keys of any slot. Each counter's writes stay in one
     * call, so they remain atomic together.
     */
    List<RedisApplyScript.Call> drain(int maxWritesPerCall, int countersPerCall) {
        List<RedisApplyScript.Call> calls = drainPerTag(maxWritesPerCall);
        if (countersPerCall <= 1) return calls;
        List<RedisApplyScript.Call> out = new ArrayList<>();
        RedisApplyScript.Call packed = null;
        int counters = 0;
        for (RedisApplyScript.Call c : calls) {
            if (c.isWatermarkOrUntagged) {
                out.add(c);
                continue;
            }
            if (packed != null && (counters >= countersPerCall || packed.writes + c.writes > maxWritesPerCall)) {
                out.add(packed);
                packed = null;
            }
            if (packed == null) {
                packed = c;
                counters = 1;
            } else {
                packed.append(c);
                counters++;
            }
        }
        if (packed != null) out.add(packed);
        // MAX writes (the watermark) and untagged keys after every counter's writes, as before
        List<RedisApplyScript.Call> ordered = new ArrayList<>(out.size());
        for (RedisApplyScript.Call c : out) if (!c.isWatermarkOrUntagged) ordered.add(c);
        for (RedisApplyScript.Call c : out) if (c.isWatermarkOrUntagged) ordered.add(c);
        return ordered;
    }

    private List<RedisApplyScript.Call> drainPerTag(int maxWritesPerCall) {
        Map<String, List<RedisApplyScript.Call>> byTag = new LinkedHashMap<>();
        List<RedisApplyScript.Call> last = new ArrayList<>();
        // a counter's keys mostly follow each other: reuse the previous key's tag and calls
        String tag = null;
        List<RedisApplyScript.Call> calls = null;
        for (Map.Entry<String, Entry> me : byKey.entrySet()) {
            String key = me.getKey();
            Entry e = me.getValue();
            if (tag == null || !hasTag(key, tag)) {
                tag = hashTag(key);
                calls = tag == null ? null : byTag.computeIfAbsent(tag, k -> new ArrayList<>());
            }
            String tmp = e.write.kind == RedisWrite.HLL ? tmpKeyFor(key, tag) : null;
            if (e.write.kind == RedisWrite.MAX || tag == null) {
                RedisApplyScript.Call c = new RedisApplyScript.Call();
                c.add(e.write, e.sketches, tmp);
                c.isWatermarkOrUntagged = true;
                if (e.write.kind == RedisWrite.MAX) last.add(c);
                else byTag.computeIfAbsent("\0" + key, k -> new ArrayList<>()).add(c);
                continue;
            }
            RedisApplyScript.Call c = calls.isEmpty() ? null : calls.get(calls.size() - 1);
            if (c == null || c.writes >= maxWritesPerCall) {
                c = new RedisApplyScript.Call();
                calls.add(c);
            }
            c.add(e.write, e.sketches, tmp);
        }
        // a new map rather than clear(): clear() walks the whole table, however large it once grew
        byKey = new LinkedHashMap<>();
        bytes = 0;
        List<RedisApplyScript.Call> out = new ArrayList<>();
        for (List<RedisApplyScript.Call> l : byTag.values()) out.addAll(l);
        out.addAll(last);
        return out;
    }

    /** True if {@link #hashTag}{@code (key)} equals {@code tag}, without building the substring. */
    static boolean hasTag(String key, String tag) {
        int open = key.indexOf('{');
        return open >= 0 && key.startsWith(tag, open + 1) && key.length() > open + 1 + tag.length()
                && key.charAt(open + 1 + tag.length()) == '}' && !tag.isEmpty() && tag.indexOf('}') < 0;
    }

    /** The Redis Cluster hash tag of a key (text between the first '{' and the next '}'), or null. */
    static String hashTag(String key) {
        int open = key.indexOf('{');
        if (open < 0) return null;
        int close = key.indexOf('}', open + 1);
        if (close < 0 || close == open + 1) return null;
        return key.substring(open + 1, close);
    }

    /**
     * The scratch key of an HLL merge, in the same cluster slot as the key and inside the bookkeeping
     * space of the contract: {@code P:{C}:_tmp} for a counter key {@code P:{C}:...}, else
     * {@code P:_tmp{T}} with T the key's tag (or the whole key when it has none).
     */
    String tmpKeyFor(String key, String tag) {
        String counterBase = tag == null ? null : keyPrefix + ":{" + tag + "}";
        if (counterBase != null && key.startsWith(counterBase + ":")) {
            return counterBase + ":_tmp";
        }
        return keyPrefix + ":_tmp{" + (tag != null ? tag : key) + "}";
    }

    private static void validate(RedisWrite w) {
        if (w == null) throw new IllegalArgumentException("null RedisWrite");
        if (w.key == null || w.key.isEmpty()) throw new IllegalArgumentException("RedisWrite without a key: " + w);
        switch (w.kind) {
            case RedisWrite.COUNT, RedisWrite.MAX -> { }
            case RedisWrite.HLL -> {
                if (w.bytes == null) throw new IllegalArgumentException("HLL write without a sketch for key " + w.key);
            }
            case RedisWrite.ZSET -> {
                int n = w.members == null ? 0 : w.members.length;
                int m = w.scores == null ? 0 : w.scores.length;
                if (n != m) throw new IllegalArgumentException("ZSET write with " + n + " members but " + m + " scores for key " + w.key);
                for (double s : w.scores == null ? new double[0] : w.scores) {
                    if (Double.isNaN(s)) throw new IllegalArgumentException("ZSET write with a NaN score for key " + w.key);
                }
            }
            default -> throw new IllegalArgumentException("unknown RedisWrite kind " + w.kind + " for key " + w.key);
        }
        if (w.ttlMillis < 0) throw new IllegalArgumentException("negative ttlMillis " + w.ttlMillis + " for key " + w.key);
    }

    private static long sizeOf(RedisWrite w) {
        long s = 0;
        if (w.members != null) for (String m : w.members) s += m.length() + 16;
        return s;
    }

    private static RedisWrite copy(RedisWrite w) {
        RedisWrite c = new RedisWrite();
        c.kind = w.kind;
        c.key = w.key;
        c.versionKey = w.versionKey;
        c.value = w.value;
        c.version = w.version;
        c.monotone = w.monotone;
        c.ttlMillis = w.ttlMillis;
        c.bytes = w.bytes;
        c.members = w.members;
        c.scores = w.scores;
        return c;
    }
}
