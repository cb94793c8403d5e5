package io.rollcount.job.redis.internal;

import io.rollcount.sketches.RedisHyperLogLog;

/**
 * The keys a {@link MarkGuard} no longer guards: those where one guarded write was applied (Redis
 * was not ahead of this writer), kept as 64-bit hashes of the key (MurmurHash64A of its UTF-8 bytes) in an
 * open-addressing table of primitive longs (linear probing, power-of-two size, no boxing). It holds at most
 * {@code maxKeys} keys: beyond, a further key is not added and simply stays guarded, which costs a script
 * call per write of it but never correctness. Two keys with the same hash would let the second go unguarded:
 * at 64 bits and a few million keys, a chance of about 10^-6 over a writer's life.
 */
public final class ConfirmedKeys {
    private long[] table = new long[1024];
    private boolean hasZero;
    private int size;
    private final int maxKeys;

    public ConfirmedKeys(int maxKeys) {
        this.maxKeys = maxKeys;
    }

    public static long hash(String key) {
        return RedisHyperLogLog.hash(key);
    }

    public int size() {
        return size;
    }

    public boolean contains(long h) {
        if (h == 0) return hasZero;
        int mask = table.length - 1;
        for (int i = (int) mix(h) & mask; table[i] != 0; i = (i + 1) & mask) {
            if (table[i] == h) return true;
        }
        return false;
    }

    /** Adds the hash unless the set is full; returns whether it is in the set now. */
    public boolean add(long h) {
        if (contains(h)) return true;
        if (size >= maxKeys) return false;
        if (h == 0) {
            hasZero = true;
            size++;
            return true;
        }
        if ((size + 1) * 2 > table.length) rehash();
        int mask = table.length - 1;
        int i = (int) mix(h) & mask;
        while (table[i] != 0) i = (i + 1) & mask;
        table[i] = h;
        size++;
        return true;
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
}
