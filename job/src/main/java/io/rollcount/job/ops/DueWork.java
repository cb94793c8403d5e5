package io.rollcount.job.ops;

import org.apache.flink.streaming.api.operators.KeyContext;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.function.ThrowingConsumer;

/**
 * The counters of one {@link CountPerCounter} subtask due by each watermark ({@link DueIndex}), done in order of
 * their due times before the watermark goes on.
 *
 * <p>A watermark that crosses a 1h or 1d boundary makes every counter with a window there due at once,
 * millions at the scale this job is built for, each a RocksDB read. That work is done in slices of at most
 * {@code sliceMillis} on the task's mailbox thread, so that records and checkpoint barriers pass between them,
 * and the watermark (with the last status that came in meanwhile) is held back until the last slice:
 * downstream sees it only after every window it closes went out. A later watermark while slices are pending
 * only moves the target. The end of input ({@code Long.MAX_VALUE}) and {@link #finish} drain at once.
 *
 * <p>A slice is a mail, and the task reads its input only while no mail waits: a next slice due at once
 * leaves the records about a millisecond between two slices, and a checkpoint barrier queued behind them
 * waits for most of the boundary's visits. So while records come in ({@link #record}: one came within the
 * last {@value #RECORDS_WITHIN_MILLIS} ms, as the slices see them), the next slice is {@code sliceMillis}
 * later: the records get as long as the due work, and the barrier passes during the visits, not after them.
 * The records arrive in bursts (an upstream subtask's buffers), so one gap without a record does not mean an
 * idle input; once none came for that long, the next slice is due at once, so an idle job closes its windows
 * at full speed.
 */
final class DueWork {
    /** What is due of one counter. */
    interface Due {
        /** Whatever of the counter {@code id} (the current key) is due by {@code watermark}, stamped {@code at}. */
        void dueNow(String id, long at, long watermark) throws Exception;
    }

    /** How many due counters between two looks at the clock. */
    private static final int SLICE_CHECK = 64;

    /** Records came in within this long before a slice: the records get their turn after it. */
    static final long RECORDS_WITHIN_MILLIS = 1_000;

    private final DueIndex index;
    private final long sliceMillis;
    private final KeyContext keys;
    private final ProcessingTimeService time;
    private final Due due;
    private final ThrowingConsumer<Watermark, Exception> forwardMark;
    private final ThrowingConsumer<WatermarkStatus, Exception> forwardStatus;

    /** The last watermark received; ahead of the one forwarded while due counters are drained in slices. */
    private long target = Long.MIN_VALUE;
    /** The watermark held back until the due counters are drained; null: none. */
    private Watermark heldMark;
    /** The last watermark status received while a watermark is held; null: none. */
    private WatermarkStatus heldStatus;
    /** A slice of the due counters is scheduled on the mailbox. */
    private boolean sliceScheduled;
    /** A record came in since the last slice (see the class comment). */
    private boolean recordSince;
    /** The processing time of the last slice that found {@link #recordSince}. */
    private long lastRecordsAt = Long.MIN_VALUE;

    /**
     * @param sliceMillis the longest one slice runs; {@code Long.MAX_VALUE}: all at once
     * @param forwardMark passes a watermark on downstream (and fires the operator's timers)
     * @param forwardStatus passes a watermark status on downstream
     */
    DueWork(
            DueIndex index,
            long sliceMillis,
            KeyContext keys,
            ProcessingTimeService time,
            Due due,
            ThrowingConsumer<Watermark, Exception> forwardMark,
            ThrowingConsumer<WatermarkStatus, Exception> forwardStatus) {
        this.index = index;
        this.sliceMillis = sliceMillis;
        this.keys = keys;
        this.time = time;
        this.due = due;
        this.forwardMark = forwardMark;
        this.forwardStatus = forwardStatus;
    }

    /** The last watermark received. */
    long target() {
        return target;
    }

    /** A watermark: the counters due by it, then the watermark itself (see the class comment). */
    void watermark(Watermark mark) throws Exception {
        target = mark.getTimestamp();
        heldMark = mark;
        if (mark.getTimestamp() == Long.MAX_VALUE) {
            drain(Long.MAX_VALUE);
            releaseHeld();
        } else if (!sliceScheduled) {
            slice();
        }
    }

    /** A record came in: the records get their turn between slices (see the class comment). */
    void record() {
        recordSince = true;
    }

    /** A watermark status: passed on, or held back with the watermark while slices are pending. */
    void status(WatermarkStatus status) throws Exception {
        if (heldMark == null) forwardStatus.accept(status);
        else heldStatus = status;
    }

    /** At the end of the input: what is still due, at once, and the held watermark. */
    void finish() throws Exception {
        if (heldMark == null) return;
        drain(Long.MAX_VALUE);
        releaseHeld();
    }

    /**
     * One slice of the due counters; if some remain, the next is scheduled (after the records' turn while records
     * come in), else the held watermark goes on.
     */
    private void slice() throws Exception {
        sliceScheduled = false;
        if (heldMark == null) return;
        if (drain(sliceMillis)) {
            releaseHeld();
        } else {
            sliceScheduled = true;
            long now = time.getCurrentProcessingTime();
            if (recordSince) lastRecordsAt = now;
            recordSince = false;
            boolean recordsComing = lastRecordsAt != Long.MIN_VALUE && now - lastRecordsAt < RECORDS_WITHIN_MILLIS;
            time.registerTimer(recordsComing ? now + sliceMillis : now, t -> slice());
        }
    }

    /**
     * Does the counters due by {@link #target}, for at most {@code budgetMillis} (checked every
     * {@value #SLICE_CHECK} counters); returns whether none is left.
     */
    private boolean drain(long budgetMillis) throws Exception {
        long deadline = budgetMillis == Long.MAX_VALUE ? Long.MAX_VALUE : System.nanoTime() + budgetMillis * 1_000_000;
        int n = 0;
        DueIndex.Entry e;
        while ((e = index.pollDue(target)) != null) {
            keys.setCurrentKey(e.id());
            due.dueNow(e.id(), e.at(), target);
            if (++n % SLICE_CHECK == 0 && deadline != Long.MAX_VALUE && System.nanoTime() > deadline) return false;
        }
        return true;
    }

    /** Forwards the held watermark, and the status that came in while it was held. */
    private void releaseHeld() throws Exception {
        Watermark mark = heldMark;
        WatermarkStatus status = heldStatus;
        heldMark = null;
        heldStatus = null;
        forwardMark.accept(mark);
        if (status != null) forwardStatus.accept(status);
    }
}
