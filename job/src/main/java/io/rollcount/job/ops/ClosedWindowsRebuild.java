package io.rollcount.job.ops;

import java.io.Serializable;
import java.util.concurrent.CompletableFuture;

/**
 * Writes the closed windows (their sums and window top-K lists) to the job's store again after it lost them, from
 * where the job recorded them outside its state ({@code counter-rollups}). {@link CounterRebuild} runs it from
 * subtask 0, on a thread of its own, after a loss. It travels in the job graph.
 */
public interface ClosedWindowsRebuild extends Serializable {
    /**
     * Writes every closed window recorded (and committed) so far; then, once {@code readOn} completes, also those
     * recorded since, up to the records in flight at that moment. Returns how many keys it wrote.
     */
    long rebuild(CompletableFuture<Void> readOn);
}
