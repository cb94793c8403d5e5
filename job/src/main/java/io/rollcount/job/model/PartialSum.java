package io.rollcount.job.model;

import java.util.Objects;

/**
 * The increments of one counter within one 5-second bucket, combined by {@code PreAggregate} before the
 * shuffle by counter. Every coarser window is a whole number of 5-second buckets, so a partial sum lies
 * in exactly one window of each resolution.
 */
public class PartialSum {
    public String counter;
    /** Start of the 5-second bucket, epoch ms. */
    public long bucket;

    public long sum;
    /** Number of events combined. */
    public long events;
    /** Whether any combined delta was negative (such windows are not monotone in Redis). */
    public boolean negative;
    /**
     * Trending weight at the bucket's start: the sum over positive deltas {@code d} at event time {@code t}
     * of {@code d * 2^((t - bucket) / halfLife)} (forward decay with the bucket start as landmark), so that
     * the trending operator adds it exactly as if each event had been added at its own time.
     */
    public double trend;
    /**
     * The distinct {@code user} values of the combined events; empty if none. They go to Redis as they are
     * ({@code PFADD}), so that Redis builds its own HyperLogLog of them.
     */
    public String[] users = NO_USERS;

    public static final String[] NO_USERS = new String[0];

    public PartialSum() {}

    public PartialSum(String counter, long bucket) {
        this.counter = counter;
        this.bucket = bucket;
    }

    public void add(long delta) {
        sum = Math.addExact(sum, delta);
        events++;
        negative |= delta < 0;
    }

    /**
     * Whether {@code delta} can be added without taking {@link #sum} past the 64-bit range. A partial sum
     * that cannot take the next delta is sent on as it is and a new one takes the delta: combining never
     * overflows (a single delta, at most 10^12, always fits an empty partial); only the counter's own
     * total or window can, and there the event is dead-lettered ({@code CountPerCounter#OVERFLOW}).
     */
    public boolean fits(long delta) {
        long r = sum + delta;
        return ((sum ^ r) & (delta ^ r)) >= 0;
    }

    /** Adds an event at time {@code ts} with the trending weight of a positive delta. */
    public void add(long delta, long ts, double halfLifeMillis) {
        add(delta);
        if (delta > 0) trend += delta * Math.pow(2.0, (ts - bucket) / halfLifeMillis);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof PartialSum p)) return false;
        return bucket == p.bucket
                && sum == p.sum
                && events == p.events
                && negative == p.negative
                && Objects.equals(counter, p.counter);
    }

    @Override
    public int hashCode() {
        return Objects.hash(counter, bucket);
    }

    @Override
    public String toString() {
        return "PartialSum{" + counter + "@" + bucket + " sum=" + sum + " events=" + events + "}";
    }
}
