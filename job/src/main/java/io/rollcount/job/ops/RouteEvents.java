package io.rollcount.job.ops;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
import io.rollcount.job.policy.Policies;
import java.util.HashMap;
import java.util.Map;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * Right after the source: dead letters go to {@link #DEAD_LETTERS}, every other event on the main output (to
 * {@link DropDuplicates}, which decides whether it deduplicates). Counts what it reads in accumulators
 * ({@code events.read}, {@code bytes.read}, {@code dlq.<reason>}) for the progress line and the end-of-run summary.
 */
public final class RouteEvents extends ProcessFunction<Event, Event> {
    private static final long serialVersionUID = 1L;

    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RouteEvents.class);

    public static final OutputTag<Event> DEAD_LETTERS = new OutputTag<>("dead-letters") {};

    public static final String BYTES_READ = "bytes.read";

    /** The namespace policies (--policies), logged once per job; null: none. */
    private final Policies policies;

    private transient LongCounter read;
    private transient LongCounter bytes;
    private transient Map<String, LongCounter> deadLetters;

    public RouteEvents() {
        this(null);
    }

    /** @param policies the namespace policies, logged by the first subtask (null: none) */
    public RouteEvents(Policies policies) {
        this.policies = policies;
    }

    @Override
    public void open(OpenContext ctx) {
        read = getRuntimeContext().getLongCounter(JobAccumulators.EVENTS_READ);
        bytes = getRuntimeContext().getLongCounter(JobAccumulators.BYTES_READ);
        RollcountMetrics.counter(getRuntimeContext().getMetricGroup(), RollcountMetrics.EVENTS_READ, read);
        deadLetters = new HashMap<>();
        // The rules in force, once per job in the TaskManagers' logs too (the client logs them at submission).
        if (policies != null
                && !policies.isEmpty()
                && getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0) {
            policies.describe().forEach(LOG::info);
        }
    }

    @Override
    public void processElement(Event e, Context ctx, Collector<Event> out) {
        read.add(1);
        // A payload cut to 64 KiB when read (Event.cutPayload) still counts with its whole size.
        bytes.add(e.payload == null ? 1 : (e.payloadSize >= 0 ? e.payloadSize : e.payload.length) + 1);
        if (e.isDeadLetter()) {
            countDeadLetter(e.reason);
            ctx.output(DEAD_LETTERS, e);
        } else {
            out.collect(e);
        }
    }

    private void countDeadLetter(String reason) {
        deadLetters
                .computeIfAbsent(
                        reason,
                        r -> RollcountMetrics.deadLetters(
                                getRuntimeContext().getMetricGroup(),
                                r,
                                getRuntimeContext().getLongCounter(JobAccumulators.deadLetters(r))))
                .add(1);
    }
}
