package io.rollcount.job.ops;

import static io.rollcount.job.ops.CountPerCounter.ALL_RESOLUTIONS;
import static io.rollcount.job.ops.CountPerCounter.AUTO_CACHE_BYTES;
import static io.rollcount.job.ops.CountPerCounter.DEFAULT_CACHE_BYTES;
import static io.rollcount.job.ops.CountPerCounter.DEFAULT_SLICE_MILLIS;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.policy.Policies;
import java.io.Serializable;

/**
 * What a {@link CountPerCounter} is built with. {@link #of} gives the defaults for the rest; the withers
 * change one setting each.
 *
 * @param allowedLatenessMillis how long after its end a window still takes late events
 * @param flushIntervalMillis how often changed counters are emitted (processing time), > 0
 * @param cacheBytes heap for the counters in use per subtask, > 0, or {@link CountPerCounter#AUTO_CACHE_BYTES}
 * @param rollupMask the resolutions whose closed windows and revisions go to {@link CountPerCounter#ROLLUPS},
 *     a bit per {@link Resolution#ordinal()} ({@code JobSettings#rollupResolutionMask})
 * @param policies what each namespace keeps: only the resolutions of its policy are counted, emitted (expiring
 *     after its retention) and rolled up; only its uniques are emitted and sketched. A window restored from a
 *     savepoint of a resolution the policies no longer keep is no longer emitted.
 * @param sliceMillis the longest one slice of due counters runs before records and checkpoint barriers get their
 *     turn, as long again while records come in (see {@link DueWork}); {@code Long.MAX_VALUE}: all at once, as an operator
 *     test that does not move processing time needs
 */
public record CountPerCounterSettings(
        long allowedLatenessMillis,
        long flushIntervalMillis,
        long cacheBytes,
        int rollupMask,
        Policies policies,
        long sliceMillis)
        implements Serializable {
    /** The counter cache's bounds where its size is {@link CountPerCounter#AUTO_CACHE_BYTES} ({@link #autoCacheBytes}). */
    static final long MIN_AUTO_CACHE_BYTES = 16L << 20;

    static final long MAX_AUTO_CACHE_BYTES = 128L << 20;

    public CountPerCounterSettings {
        if (flushIntervalMillis <= 0)
            throw new IllegalArgumentException("flush interval must be > 0 ms, got " + flushIntervalMillis);
        if (cacheBytes <= 0 && cacheBytes != AUTO_CACHE_BYTES)
            throw new IllegalArgumentException(
                    "counter cache must be > 0 bytes or AUTO_CACHE_BYTES, got " + cacheBytes);
        if ((rollupMask & ~ALL_RESOLUTIONS) != 0)
            throw new IllegalArgumentException("rollup resolutions: unknown bits in " + rollupMask);
        if (policies == null) throw new IllegalArgumentException("policies: null");
        if (sliceMillis < 0) throw new IllegalArgumentException("due-work slice must be >= 0 ms, got " + sliceMillis);
    }

    /**
     * {@code allowedLatenessMillis} and {@code flushIntervalMillis}, {@link CountPerCounter#DEFAULT_CACHE_BYTES}, rollups of every
     * resolution, no policies (every namespace keeps everything), slices of {@link CountPerCounter#DEFAULT_SLICE_MILLIS}.
     */
    public static CountPerCounterSettings of(long allowedLatenessMillis, long flushIntervalMillis) {
        return new CountPerCounterSettings(
                allowedLatenessMillis,
                flushIntervalMillis,
                DEFAULT_CACHE_BYTES,
                ALL_RESOLUTIONS,
                Policies.none(100, 1),
                DEFAULT_SLICE_MILLIS);
    }

    public CountPerCounterSettings withCacheBytes(long bytes) {
        return new CountPerCounterSettings(
                allowedLatenessMillis, flushIntervalMillis, bytes, rollupMask, policies, sliceMillis);
    }

    public CountPerCounterSettings withRollupMask(int mask) {
        return new CountPerCounterSettings(
                allowedLatenessMillis, flushIntervalMillis, cacheBytes, mask, policies, sliceMillis);
    }

    public CountPerCounterSettings withPolicies(Policies p) {
        return new CountPerCounterSettings(
                allowedLatenessMillis, flushIntervalMillis, cacheBytes, rollupMask, p, sliceMillis);
    }

    public CountPerCounterSettings withSliceMillis(long millis) {
        return new CountPerCounterSettings(
                allowedLatenessMillis, flushIntervalMillis, cacheBytes, rollupMask, policies, millis);
    }

    /** The window rules of these settings. */
    WindowRules windowRules() {
        return new WindowRules(allowedLatenessMillis, rollupMask);
    }

    /** The counter cache's size in bytes on a TaskManager of {@code maxHeap} bytes and {@code slots} slots. */
    long cacheBudget(long maxHeap, int slots) {
        return cacheBytes == AUTO_CACHE_BYTES ? autoCacheBytes(maxHeap, slots) : cacheBytes;
    }

    /**
     * The counter cache of {@link CountPerCounter#AUTO_CACHE_BYTES}: a quarter of the heap per slot of the TaskManager
     * ({@code maxHeap}: the JVM's {@code -Xmx}, task and framework heap), at least
     * {@value #MIN_AUTO_CACHE_BYTES} and at most {@value #MAX_AUTO_CACHE_BYTES} bytes. Every counter a counting
     * subtask keeps on the heap saves a RocksDB read and a write each time it would otherwise come back from
     * RocksDB (bench job, zipf over 1,000,000 counters: 128 MB instead of 32 MB per subtask took the counting
     * thread from 5.3 to 2.9 us per event); the rest of the slot's heap is left to the other operators.
     */
    static long autoCacheBytes(long maxHeap, int slots) {
        long perSlot = maxHeap == Long.MAX_VALUE ? MAX_AUTO_CACHE_BYTES : maxHeap / Math.max(1, slots) / 4;
        return Math.max(MIN_AUTO_CACHE_BYTES, Math.min(MAX_AUTO_CACHE_BYTES, perSlot));
    }
}
