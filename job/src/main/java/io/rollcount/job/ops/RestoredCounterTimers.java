package io.rollcount.job.ops;

import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.Triggerable;

/**
 * Per-counter timers in a savepoint of an earlier version of {@link CountPerCounter}, which kept one RocksDB
 * event-time timer per counter (and per-counter processing-time flush timers) in its timer service
 * {@value #NAME}. The operator keeps its due times in {@link DueIndex} and registers no timers; restored ones
 * fire once each and do what is due of their counter then.
 *
 * <p>Can be removed when no savepoint or checkpoint of a version with per-counter timers is to be restored
 * any more (those of this version hold none).
 */
final class RestoredCounterTimers implements Triggerable<String, VoidNamespace> {
    /** The timer service's name, as the earlier version's savepoints hold it. */
    static final String NAME = "user-timers";

    /** What the operator does when a restored flush timer fires. */
    interface Flush {
        /** The counter {@code id} (the current key) emitted now. */
        void flushNow(String id) throws Exception;
    }

    private final DueWork.Due due;
    private final Flush flush;
    private final InternalTimerService<VoidNamespace> timers;

    /** Registers the timer service of {@code operator}, restoring the timers its savepoint holds. */
    RestoredCounterTimers(AbstractStreamOperator<?> operator, DueWork.Due due, Flush flush) {
        this.due = due;
        this.flush = flush;
        this.timers = operator.getInternalTimerService(NAME, VoidNamespaceSerializer.INSTANCE, this);
    }

    /** An event-time timer: whatever of its counter is due now. */
    @Override
    public void onEventTime(InternalTimer<String, VoidNamespace> timer) throws Exception {
        due.dueNow(timer.getKey(), timer.getTimestamp(), Math.max(timer.getTimestamp(), timers.currentWatermark()));
    }

    /** A per-counter flush timer: that flush, now. */
    @Override
    public void onProcessingTime(InternalTimer<String, VoidNamespace> timer) throws Exception {
        flush.flushNow(timer.getKey());
    }
}
