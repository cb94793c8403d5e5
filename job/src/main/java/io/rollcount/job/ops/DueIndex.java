package io.rollcount.job.ops;

import java.util.ArrayList;
import java.util.Map;
import java.util.TreeMap;

/**
 * When the counters of one {@link CountPerCounter} subtask are next due (a window closes or its allowed
 * lateness ends), on the heap: due time to the ids due then. Window ends are aligned to the epoch, so
 * the counters of a subtask share few distinct due times and an entry costs an id reference in a list,
 * where a keyed timer cost a RocksDB put and a delete per counter and window. Not snapshotted: keyed
 * state holds every counter's windows, from which the owner rebuilds the index on restore. An id may be
 * listed more than once (an entry that is no longer the counter's next due time); the owner ignores those.
 *
 * <p><b>Order.</b> The ids due at one time are handed out in the order RocksDB stores their state: by key
 * group, then by the serialized id (Flink's {@code StringSerializer} writes the length first, then the
 * characters, so shorter ids come first and ids of one length by their characters; exact for ASCII ids,
 * close for others). A boundary makes most counters of a subtask due together, millions at the scale the
 * job is built for, far more than the block cache holds: visited in arrival order every read lands on a
 * block evicted since, which RocksDB reads and decompresses again for a single counter; visited in key
 * order consecutive reads share a block, and each block is read once per boundary. Sorting costs
 * O(n log n) comparisons of ids once per due time, against n block reads saved.
 */
final class DueIndex {
    /** One counter due at a time. */
    record Entry(long at, String id) {}

    private final TreeMap<Long, ArrayList<String>> byTime = new TreeMap<>();
    /** The key groups of the keyed state backend (its maximum parallelism), which lead every RocksDB key. */
    private final int keyGroups;
    /** The ids being handed out by {@link #pollDue}, in key order, their due time and position. */
    private String[] draining;

    private long drainingAt;
    private int next;
    private long size;

    DueIndex(int keyGroups) {
        this.keyGroups = keyGroups;
    }

    void add(long at, String id) {
        byTime.computeIfAbsent(at, t -> new ArrayList<>(4)).add(id);
        size++;
    }

    /** The next entry due at or before {@code watermark} (earliest first), removed; null when none is. */
    Entry pollDue(long watermark) {
        while (true) {
            if (draining != null && next < draining.length) {
                size--;
                String id = draining[next];
                draining[next++] = null;
                return new Entry(drainingAt, id);
            }
            draining = null;
            Map.Entry<Long, ArrayList<String>> first = byTime.firstEntry();
            if (first == null || first.getKey() > watermark) return null;
            byTime.pollFirstEntry();
            draining = RocksDbKeyOrder.sorted(first.getValue(), keyGroups);
            drainingAt = first.getKey();
            next = 0;
        }
    }

    /** Entries listed (ids may repeat). */
    long size() {
        return size;
    }
}
