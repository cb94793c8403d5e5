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
 */
final class DueIndex {
    /** One counter due at a time. */
    record Entry(long at, String id) {}

    private final TreeMap<Long, ArrayList<String>> byTime = new TreeMap<>();
    /** The list being handed out by {@link #pollDue}, its due time and position. */
    private ArrayList<String> draining;

    private long drainingAt;
    private int next;
    private long size;

    void add(long at, String id) {
        byTime.computeIfAbsent(at, t -> new ArrayList<>(4)).add(id);
        size++;
    }

    /** The next entry due at or before {@code watermark} (earliest first), removed; null when none is. */
    Entry pollDue(long watermark) {
        while (true) {
            if (draining != null && next < draining.size()) {
                size--;
                return new Entry(drainingAt, draining.get(next++));
            }
            draining = null;
            Map.Entry<Long, ArrayList<String>> first = byTime.firstEntry();
            if (first == null || first.getKey() > watermark) return null;
            byTime.pollFirstEntry();
            draining = first.getValue();
            drainingAt = first.getKey();
            next = 0;
        }
    }

    /** Entries listed (ids may repeat). */
    long size() {
        return size;
    }
}
