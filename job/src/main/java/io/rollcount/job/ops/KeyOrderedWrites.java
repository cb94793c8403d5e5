package io.rollcount.job.ops;

import java.util.Arrays;
import java.util.Comparator;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/**
 * Writes of a {@code long} value state for up to {@code capacity} string keys, held on the heap and written in
 * RocksDB's key order by {@link #writeTo}: the writes of a batch land in the memtable next to each other, where
 * writes in arrival order each search it from the top (a put of a new key in a large memtable costs several cache
 * misses; in key order most of the search is skipped). The order is the key group, then the key's length, then the
 * key (RocksDB's byte order of Flink's keys for keys of ASCII characters shorter than 127; other keys are written
 * in an order as good as any, which only makes them slower).
 *
 * <p>Layout: the held writes in an array in arrival order, a key's latest value replacing its earlier one, and an
 * open-addressing index of their positions by the key's hash, at least twice as many slots as writes; {@link
 * #writeTo} orders them by key group in a second array (a counting sort over the groups) and sorts each group's
 * writes, a few hundred where a subtask holds tens of thousands, by length and key. Bounds: at most
 * {@code capacity} writes, the caller writing them out when {@link #isFull}; their keys stay referenced until then.
 *
 * <p>Not thread-safe: the owning operator's task thread.
 */
final class KeyOrderedWrites {
    /** Where {@link #writeTo} writes a key's value. */
    @FunctionalInterface
    interface Target {
        void write(String key, long value) throws Exception;
    }

    /** A held write: the key's group, the key and its value. */
    private record Write(int group, String key, long value) {}

    /** The order within a key group. */
    private static final Comparator<Write> LENGTH_THEN_KEY = (a, b) -> {
        int c = Integer.compare(a.key.length(), b.key.length());
        return c != 0 ? c : a.key.compareTo(b.key);
    };

    private final int maxParallelism;
    /** The held writes in arrival order. */
    private final Write[] writes;
    /** Positions in {@link #writes} plus one, by the key's hash; 0 is free. */
    private final int[] index;
    /** {@link #writeTo}'s: the writes by key group, and where each group starts there. */
    private final Write[] ordered;

    private final int[] groupStarts;

    private int size;

    /** Room for {@code capacity} writes of keys of a job of {@code maxParallelism} key groups. */
    KeyOrderedWrites(int capacity, int maxParallelism) {
        if (capacity < 1) throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        this.maxParallelism = maxParallelism;
        this.writes = new Write[capacity];
        this.index = new int[Integer.highestOneBit(capacity) << 2];
        this.ordered = new Write[capacity];
        this.groupStarts = new int[maxParallelism + 1];
    }

    /** The value held for {@code key}, or {@code null} if none is held (the state has the latest). */
    Long get(String key) {
        int at = slotOf(key);
        return index[at] == 0 ? null : writes[index[at] - 1].value;
    }

    /** Holds {@code value} for {@code key} in place of any held before; the caller writes out first if full. */
    void put(String key, long value) {
        int at = slotOf(key);
        if (index[at] != 0) {
            Write w = writes[index[at] - 1];
            writes[index[at] - 1] = new Write(w.group, key, value);
            return;
        }
        if (isFull()) throw new IllegalStateException("full: write out first");
        writes[size] = new Write(KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism), key, value);
        index[at] = ++size;
    }

    /** Whether another key would not fit. */
    boolean isFull() {
        return size == writes.length;
    }

    /** The writes held. */
    int size() {
        return size;
    }

    /** Writes every held value to {@code target}, in key order, and holds none. */
    void writeTo(Target target) throws Exception {
        orderByGroup();
        for (int g = 0; g < maxParallelism; g++) {
            int from = groupStarts[g];
            int to = groupStarts[g + 1];
            if (to - from > 1) Arrays.sort(ordered, from, to, LENGTH_THEN_KEY);
        }
        for (int i = 0; i < size; i++) {
            target.write(ordered[i].key, ordered[i].value);
            ordered[i] = null;
            writes[i] = null;
        }
        size = 0;
        Arrays.fill(index, 0);
    }

    /** Puts the writes into {@link #ordered} by key group (a counting sort), each group's start in {@link #groupStarts}. */
    private void orderByGroup() {
        Arrays.fill(groupStarts, 0);
        for (int i = 0; i < size; i++) groupStarts[writes[i].group + 1]++;
        for (int g = 0; g < maxParallelism; g++) groupStarts[g + 1] += groupStarts[g];
        // each group's end, counted down to its start
        for (int i = size - 1; i >= 0; i--) ordered[--groupStarts[writes[i].group + 1]] = writes[i];
        // now groupStarts[g + 1] is group g's start: shift down by one
        System.arraycopy(groupStarts, 1, groupStarts, 0, maxParallelism);
        groupStarts[maxParallelism] = size;
    }

    /** The index slot of {@code key}: the one that holds it, or the free one where it goes. */
    private int slotOf(String key) {
        int mask = index.length - 1;
        for (int at = mix(key.hashCode()) & mask; ; at = (at + 1) & mask) {
            int p = index[at];
            if (p == 0 || writes[p - 1].key.equals(key)) return at;
        }
    }

    private static int mix(int h) {
        h *= 0x9E3779B9;
        return h ^ (h >>> 16);
    }
}
