package io.rollcount.job.ops;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
import io.rollcount.job.policy.Policies;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.OutputTag;

/**
 * Right after the source: dead letters go to {@link #DEAD_LETTERS}, every other event on the main output (to
 * {@link DropDuplicates}, which decides whether it deduplicates). Counts what it reads in accumulators
 * ({@code events.read}, {@code bytes.read}, {@code dlq.<reason>}) for the progress line and the end-of-run summary.
 *
 * <p><b>The raw input.</b> A valid event needs its raw input (payload, record key, source) only if
 * {@link PreAggregate} dead-letters it as late: its time more than the allowed lateness behind that operator's
 * watermark. That watermark is the minimum over every input channel of the deduplication in front of it, this
 * subtask's among them, and an event reaches it after the watermarks this subtask sent before it, never after a
 * later one; so it is never ahead of this operator's watermark when the event was sent. An event at or after this
 * operator's watermark less the lateness therefore cannot turn late there, and goes on without its raw input
 * (about half of an event's bytes through the shuffle). One behind it keeps it.
 *
 * <p>That bound fails in one case: Flink's watermark valve leaves an idle channel out of the minimum, and a
 * channel that comes back stays out until it catches up, while its events are processed at once against the
 * others' watermark. So once this subtask's output has been idle, every valid event keeps its raw input for the
 * rest of the run.
 */
public final class RouteEvents extends AbstractStreamOperator<Event> implements OneInputStreamOperator<Event, Event> {
    private static final long serialVersionUID = 1L;

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RouteEvents.class);

    public static final OutputTag<Event> DEAD_LETTERS = new OutputTag<>("dead-letters") {};

    public static final String BYTES_READ = "bytes.read";

    /** The namespace policies (--policies), logged once per job; null: none. */
    private final Policies policies;
    /** The allowed lateness, ms ({@link PreAggregate}'s). */
    private final long latenessMillis;

    // ---- the raw input's rule (the task thread's)
    /** The watermark this operator last sent on. */
    private transient long watermark;
    /** Whether this subtask's output has been idle in this run: then every event keeps its raw input. */
    private transient boolean wasIdle;

    // ---- metrics
    private transient LongCounter read;
    private transient LongCounter bytes;
    private transient Map<String, LongCounter> deadLetters;

    /**
     * @param policies the namespace policies, logged by the first subtask (null: none)
     * @param latenessMillis the allowed lateness of {@link PreAggregate}, ms
     */
    public RouteEvents(Policies policies, long latenessMillis) {
        if (latenessMillis < 0)
            throw new IllegalArgumentException("allowed lateness must be >= 0 ms, got " + latenessMillis);
        this.policies = policies;
        this.latenessMillis = latenessMillis;
    }

    @Override
    public void open() throws Exception {
        super.open();
        watermark = Long.MIN_VALUE;
        read = getRuntimeContext().getLongCounter(JobAccumulators.EVENTS_READ);
        bytes = getRuntimeContext().getLongCounter(JobAccumulators.BYTES_READ);
        RollcountMetrics.counter(getMetricGroup(), RollcountMetrics.EVENTS_READ, read);
        deadLetters = new HashMap<>();
        // The rules in force, once per job in the TaskManagers' logs too (the client logs them at submission).
        if (policies != null
                && !policies.isEmpty()
                && getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0) {
            policies.describe().forEach(LOG::info);
        }
    }

    @Override
    public void processElement(StreamRecord<Event> record) {
        Event e = record.getValue();
        read.add(1);
        // A payload cut to 64 KiB when read (Event.cutPayload) still counts with its whole size.
        bytes.add(e.payload == null ? 1 : (e.payloadSize >= 0 ? e.payloadSize : e.payload.length) + 1);
        if (e.isDeadLetter()) {
            countDeadLetter(e.reason);
            output.collect(DEAD_LETTERS, record);
            return;
        }
        if (cannotTurnLate(e.ts)) e.dropRawInput();
        output.collect(record);
    }

    /** Whether an event of time {@code ts} sent now cannot be late at {@link PreAggregate} (see the class comment). */
    boolean cannotTurnLate(long ts) {
        // not late against this watermark: not late against the one downstream, which is never ahead of it
        return !wasIdle && !PreAggregate.isLate(ts, watermark, latenessMillis);
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        watermark = Math.max(watermark, mark.getTimestamp());
        super.processWatermark(mark);
    }

    @Override
    public void processWatermarkStatus(WatermarkStatus status) throws Exception {
        if (status.isIdle()) wasIdle = true;
        super.processWatermarkStatus(status);
    }

    private void countDeadLetter(String reason) {
        deadLetters
                .computeIfAbsent(
                        reason,
                        r -> RollcountMetrics.deadLetters(
                                getMetricGroup(),
                                r,
                                getRuntimeContext().getLongCounter(JobAccumulators.deadLetters(r))))
                .add(1);
    }
}
