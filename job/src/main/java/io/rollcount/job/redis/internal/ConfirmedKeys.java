package io.rollcount.job.redis.internal;

import io.rollcount.sketches.RedisHyperLogLog;

/**
 * The keys a {@link MarkGuard} no longer guards: those where one guarded write was applied (Redis was not
 * ahead of this writer), kept as 64-bit hashes of the key (MurmurHash64A of its UTF-8 bytes) in a
 * {@link LongHashSet}. It holds at most {@code maxKeys} keys: beyond, a further key is not added and simply
 * stays guarded, which costs a script call per write of it but never correctness. Two keys with the same hash
 * would let the second go unguarded: at 64 bits and a few million keys, a chance of about 10^-6 over a
 * writer's life.
 */
public final class ConfirmedKeys {
    private final LongHashSet hashes = new LongHashSet(512);
    private final int maxKeys;

    public ConfirmedKeys(int maxKeys) {
        this.maxKeys = maxKeys;
    }

    public static long hash(String key) {
        return RedisHyperLogLog.hash(key);
    }

    public int size() {
        return hashes.size();
    }

    public boolean contains(long h) {
        return hashes.contains(h);
    }

    /** Adds the hash unless the set is full; returns whether it is in the set now. */
    public boolean add(long h) {
        if (hashes.size() >= maxKeys) return hashes.contains(h);
        hashes.add(h);
        return true;
    }
}
