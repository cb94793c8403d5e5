package io.rollcount.job.model;

/**
 * What one trending shard reports to the merge step: its candidate counters (every item its Space-Saving
 * summary monitors) with scores and lower bounds decayed to {@link #at}. Counters of different shards are
 * disjoint (a counter lives in exactly one shard), so the merge step only has to rank the union.
 */
public class TrendCandidates {
    /** The trending shard, 0 .. shards - 1. */
    public int shard;
    /** The event time (epoch ms) the scores are decayed to. */
    public long at;

    public String[] counters = new String[0];
    /** Point estimates (Count-Min-tightened Space-Saving counts), decayed to {@link #at}. */
    public double[] scores = new double[0];
    /** Guaranteed lower bounds, decayed to {@link #at}. */
    public double[] lowers = new double[0];

    public TrendCandidates() {}

    @Override
    public String toString() {
        return "TrendCandidates{shard " + shard + " at=" + at + " " + counters.length + " items}";
    }
}
