package io.rollcount.job.ops;

import java.util.Arrays;

/**
 * Writes of a {@code long} value state for up to {@code capacity} string keys, held on the heap and written in
 * RocksDB's key order by {@link #writeTo}: the writes of a batch land in the memtable next to each other, where
 * writes in arrival order each search it from the top (a put of a new key in a large memtable costs several cache
 * misses; in key order most of the search is skipped). The order is {@link RocksDbKeyOrder}'s.
 *
 * <p>Layout: the held writes (key and value) in an array in arrival order, a key's latest value replacing its
 * earlier one, and an open-addressing index of their positions by the key's hash, at least twice as many slots as
 * writes. Bounds: at most {@code capacity} writes, the caller writing them out when {@link #isFull}; their keys
 * stay referenced until then.
 *
 * <p>Not thread-safe: the owning operator's task thread.
 */
final class KeyOrderedWrites {
    /** Where {@link #writeTo} writes a key's value. */
    @FunctionalInterface
    interface Target {
        void write(String key, long value) throws Exception;
    }

    /** A held write. */
    private static final class Write {
        final String key;
        long value;

        Write(String key, long value) {
            this.key = key;
            this.value = value;
        }
    }

    private final int keyGroups;
    /** The held writes, in arrival order. */
    private final Write[] writes;
    /** Positions in {@link #writes} plus one, by the key's hash; 0 is free. */
    private final int[] index;

    private int size;

    /** Room for {@code capacity} writes of keys of a job of {@code keyGroups} key groups (its maximum parallelism). */
    KeyOrderedWrites(int capacity, int keyGroups) {
        if (capacity < 1) throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        this.keyGroups = keyGroups;
        this.writes = new Write[capacity];
        this.index = new int[Integer.highestOneBit(capacity) << 2];
    }

    /** The value held for {@code key}, or {@code null} if none is held (the state has the latest). */
    Long get(String key) {
        int p = index[slotOf(key)];
        return p == 0 ? null : writes[p - 1].value;
    }

    /** Holds {@code value} for {@code key} in place of any held before; the caller writes out first if full. */
    void put(String key, long value) {
        int at = slotOf(key);
        if (index[at] != 0) {
            writes[index[at] - 1].value = value;
            return;
        }
        if (isFull()) throw new IllegalStateException("full: write out first");
        writes[size] = new Write(key, value);
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
        for (Write w : RocksDbKeyOrder.sorted(writes, size, w -> w.key, keyGroups)) target.write(w.key, w.value);
        Arrays.fill(writes, 0, size, null);
        Arrays.fill(index, 0);
        size = 0;
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
