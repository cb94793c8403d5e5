package io.rollcount.job.ops;

import java.util.Arrays;

/** A small open-addressing set of longs (linear probing, power-of-two table), for user hashes in a partial sum. */
final class LongSet {
    private long[] table = new long[16];
    private boolean hasZero;
    private int size;

    /** Adds {@code v}; returns whether it was new. */
    boolean add(long v) {
        if (v == 0) {
            if (hasZero) return false;
            hasZero = true;
            size++;
            return true;
        }
        int mask = table.length - 1;
        int i = (int) mix(v) & mask;
        while (table[i] != 0) {
            if (table[i] == v) return false;
            i = (i + 1) & mask;
        }
        table[i] = v;
        if (++size * 2 > table.length) rehash();
        return true;
    }

    int size() {
        return size;
    }

    long[] toArray() {
        long[] out = new long[size];
        int n = 0;
        if (hasZero) out[n++] = 0;
        for (long v : table) if (v != 0) out[n++] = v;
        return out;
    }

    private void rehash() {
        long[] old = table;
        table = new long[old.length * 2];
        int mask = table.length - 1;
        for (long v : old) {
            if (v == 0) continue;
            int i = (int) mix(v) & mask;
            while (table[i] != 0) i = (i + 1) & mask;
            table[i] = v;
        }
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        return z ^ (z >>> 33);
    }

    @Override
    public String toString() {
        return Arrays.toString(toArray());
    }
}
