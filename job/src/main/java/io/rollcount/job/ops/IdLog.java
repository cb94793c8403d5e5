package io.rollcount.job.ops;

import java.nio.ByteBuffer;
import java.util.Arrays;

/**
 * The ids deduplication added since it last wrote them out, by key group, and the one format they are written
 * in: a chunk per key group, {@value #ENTRY_BYTES} bytes per id (its fingerprint's two halves and the time it is
 * forgotten at, big-endian longs, in the order added). An id's time is that of its last entry: its key group's
 * chunks are read in the order written.
 *
 * <p>Layout: the held ids in three parallel arrays and their key groups in a fourth, in the order added; {@link
 * #drainTo} orders them by key group (a counting sort) and holds none after.
 *
 * <p>Bounds: at most {@code capacity} ids, {@code 28 * capacity} bytes; the caller drains when {@link #isFull}.
 * Not thread-safe: the owning operator's task thread.
 */
final class IdLog {
    /** The bytes of one id in a chunk. */
    static final int ENTRY_BYTES = 24;

    /** Where {@link #drainTo} writes a key group's chunk. */
    @FunctionalInterface
    interface Target {
        void write(int keyGroup, byte[] chunk) throws Exception;
    }

    /** What {@link #read} gives an id of a chunk to. */
    @FunctionalInterface
    interface Entries {
        void accept(long hi, long lo, long forgetAt) throws Exception;
    }

    private final int keyGroups;
    private final int[] groups;
    private final long[] his;
    private final long[] los;
    private final long[] forgetAts;
    private int size;

    /** Room for {@code capacity} ids of a job of {@code keyGroups} key groups (its maximum parallelism). */
    IdLog(int capacity, int keyGroups) {
        if (capacity < 1) throw new IllegalArgumentException("capacity must be at least 1, got " + capacity);
        this.keyGroups = keyGroups;
        this.groups = new int[capacity];
        this.his = new long[capacity];
        this.los = new long[capacity];
        this.forgetAts = new long[capacity];
    }

    /** Holds an id of key group {@code keyGroup}; the caller drains first if full. */
    void add(int keyGroup, long hi, long lo, long forgetAt) {
        if (isFull()) throw new IllegalStateException("full: drain first");
        groups[size] = keyGroup;
        his[size] = hi;
        los[size] = lo;
        forgetAts[size++] = forgetAt;
    }

    boolean isFull() {
        return size == groups.length;
    }

    int size() {
        return size;
    }

    /** Writes one chunk per key group of the held ids, in key-group order, and holds none. */
    void drainTo(Target target) throws Exception {
        if (size == 0) return;
        int[] starts = new int[keyGroups + 1];
        for (int i = 0; i < size; i++) starts[groups[i] + 1]++;
        for (int g = 0; g < keyGroups; g++) starts[g + 1] += starts[g];
        int[] order = new int[size];
        int[] next = Arrays.copyOf(starts, keyGroups);
        for (int i = 0; i < size; i++) order[next[groups[i]]++] = i;
        for (int g = 0; g < keyGroups; g++) {
            int from = starts[g];
            int to = starts[g + 1];
            if (from == to) continue;
            ByteBuffer chunk = ByteBuffer.allocate((to - from) * ENTRY_BYTES);
            for (int k = from; k < to; k++) {
                int i = order[k];
                chunk.putLong(his[i]).putLong(los[i]).putLong(forgetAts[i]);
            }
            target.write(g, chunk.array());
        }
        size = 0;
    }

    /** Gives every id of a chunk to {@code entries}, in the order written. */
    static void read(byte[] chunk, Entries entries) throws Exception {
        if (chunk.length % ENTRY_BYTES != 0)
            throw new IllegalStateException(
                    "a chunk of deduplication's ids of " + chunk.length + " bytes, not a multiple of " + ENTRY_BYTES);
        ByteBuffer b = ByteBuffer.wrap(chunk);
        while (b.hasRemaining()) entries.accept(b.getLong(), b.getLong(), b.getLong());
    }
}
