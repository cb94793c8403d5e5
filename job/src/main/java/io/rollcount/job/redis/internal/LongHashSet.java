package io.rollcount.job.redis.internal;

/**
 * A set of 64-bit hashes in an open-addressing table of primitive longs: linear probing, a power-of-two size
 * at most half full, no boxing and no node per element. The value 0 marks an empty slot, so a hash of 0 is
 * held apart in a flag. Nothing is ever removed; {@link #size} counts the hashes held.
 */
public final class LongHashSet {
    private long[] table;
    private boolean hasZero;
    private int size;

    /** A set that holds {@code expected} hashes without growing. */
    public LongHashSet(int expected) {
        table = new long[tableSizeFor(expected)];
    }

    public int size() {
        return size;
    }

    public boolean contains(long h) {
        if (h == 0) return hasZero;
        int mask = table.length - 1;
        for (int i = slot(h, mask); table[i] != 0; i = (i + 1) & mask) {
            if (table[i] == h) return true;
        }
        return false;
    }

    /** Adds {@code h}; true if it was not in the set before. */
    public boolean add(long h) {
        if (h == 0) {
            if (hasZero) return false;
            hasZero = true;
            size++;
            return true;
        }
        int mask = table.length - 1;
        int i = slot(h, mask);
        for (; table[i] != 0; i = (i + 1) & mask) {
            if (table[i] == h) return false;
        }
        table[i] = h;
        if (++size * 2 > table.length) grow();
        return true;
    }

    private void grow() {
        long[] old = table;
        table = new long[old.length * 2];
        int mask = table.length - 1;
        for (long v : old) {
            if (v == 0) continue;
            int i = slot(v, mask);
            while (table[i] != 0) i = (i + 1) & mask;
            table[i] = v;
        }
    }

    /** The first slot to probe: the hash mixed (its low bits may be what its user kept constant). */
    private static int slot(long z, int mask) {
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        return (int) (z ^ (z >>> 33)) & mask;
    }

    private static int tableSizeFor(int expected) {
        int n = Math.max(8, expected * 2);
        return Integer.highestOneBit(n - 1) << 1;
    }
}
