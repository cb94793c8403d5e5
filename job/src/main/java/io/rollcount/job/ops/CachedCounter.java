package io.rollcount.job.ops;

import io.rollcount.sketches.RedisHyperLogLog;
import java.util.HashMap;
import java.util.HashSet;

/**
 * One counter on the heap between snapshots ({@link CountPerCounter}): its {@link CounterState} and the
 * unique-users sketches read so far, with what has changed since they were last stored in keyed state
 * and since they were last written to Redis.
 */
final class CachedCounter {
    final String id;
    final CounterState state;
    /**
     * Sketches by state name ("all", "1h:&lt;start&gt;", "1d:&lt;start&gt;") read or created so far; a name
     * mapped to {@code null} was read and is absent.
     */
    final HashMap<String, RedisHyperLogLog> sketches = new HashMap<>(4);
    /** Names of the sketches changed since they were last stored. */
    final HashSet<String> unstoredSketches = new HashSet<>(4);
    /** The counter had no state when it was read: none of its sketches is in keyed state either. */
    final boolean fresh;
    /** The {@link CounterState} changed since it was last stored. */
    boolean unstored;
    /** Waiting for the next flush to Redis. */
    boolean flushPending;
    /** Bytes of heap this entry is counted for in its {@link CounterCache}. */
    long weight;
    /** Something {@link #weigh} counts changed (a slot, a sketch) since the entry was last weighed. */
    boolean weightStale;
    /** The names of the last 1h and 1d sketches used, and their window starts: built once per window, not per event. */
    final long[] nameStarts = {Long.MIN_VALUE, Long.MIN_VALUE};

    final String[] names = new String[2];
    /** The policy of the counter's namespace ({@code --policies}), looked up once per stay on the heap. */
    io.rollcount.job.policy.NamespacePolicy policy;

    CachedCounter(String id, CounterState state, boolean fresh) {
        this.id = id;
        this.state = state;
        this.fresh = fresh;
    }

    /** About the heap this counter takes: object headers, the slot arrays and the sketches' bytes. */
    long weigh() {
        long w = 240 + 2L * id.length() + 34L * state.start.length;
        for (RedisHyperLogLog h : sketches.values()) {
            w += h == null ? 48 : 96 + h.serializedSizeBytes();
        }
        return w;
    }
}
