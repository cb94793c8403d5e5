package io.rollcount.job.redis;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * Rebuilds after a loss of Redis's data in this JVM (each subtask's rewrite of its state, and the rebuild
 * from counter-rollups): for a local run's summary and for tests.
 * Each Flink subtask also counts its own in the metrics {@code redisRebuilds} and {@code redisRebuildKeys}.
 */
public final class RedisRebuildStats {
    private static final AtomicInteger STARTED = new AtomicInteger();
    private static final AtomicInteger FINISHED = new AtomicInteger();
    private static final LongAdder KEYS = new LongAdder();
    private static final AtomicLong LONGEST_NANOS = new AtomicLong();

    private RedisRebuildStats() {}

    public static void started() {
        STARTED.incrementAndGet();
    }

    public static void finished(long keys, long nanos) {
        KEYS.add(keys);
        LONGEST_NANOS.accumulateAndGet(nanos, Math::max);
        FINISHED.incrementAndGet();
    }

    /** Rebuilds started (per subtask, plus the one from counter-rollups). */
    public static int startedCount() {
        return STARTED.get();
    }

    public static int finishedCount() {
        return FINISHED.get();
    }

    /** Keys written again by the rebuilds finished. */
    public static long keys() {
        return KEYS.sum();
    }

    /** The longest rebuild finished, in seconds. */
    public static double longestSeconds() {
        return LONGEST_NANOS.get() / 1e9;
    }

    public static void reset() {
        STARTED.set(0);
        FINISHED.set(0);
        KEYS.reset();
        LONGEST_NANOS.set(0);
    }
}
