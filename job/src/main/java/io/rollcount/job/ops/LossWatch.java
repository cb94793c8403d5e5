package io.rollcount.job.ops;

import java.io.Serializable;

/**
 * Tells an operator whose values the job's store shows (the counts, the lists) that the store lost them, so that
 * the operator writes them again ({@link CountPerCounter#rebuildingAfterLoss}, {@link TrendingMerge#rebuildingAfterLoss}).
 * It travels in the job graph: each operator instance opens a copy of its own. The operator's task thread never
 * waits for the store: checks run elsewhere and {@link #check} reports what they found.
 */
public interface LossWatch extends Serializable {
    /**
     * Starts watching for operator {@code name}. A {@code restored} operator (one that restored its state) also
     * learns of a loss while the job was down, before its first record where the store answers in time.
     */
    void open(String name, boolean restored);

    /** Starts a check unless one is under way; returns true once for each loss found since the last call. */
    boolean check();

    /** Returns true once for each loss found since the last call, without starting a check. */
    boolean lossSeen();

    /** Stops watching. */
    void close();
}
