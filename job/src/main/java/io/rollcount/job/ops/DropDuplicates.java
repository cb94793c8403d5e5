package io.rollcount.job.ops;

import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Counts each {@code (counter, event_id)} once while the dedup horizon (event time, default 24 h) holds
 * it. Keyed by that pair; the state is one long (the event time the key is forgotten at) and an
 * event-time timer clears it, so state does not grow without bound. Event time, not Flink's processing
 * time TTL, so that a backfill deduplicates as the live run did.
 */
public final class DropDuplicates extends KeyedProcessFunction<String, Event, Event> {
    private static final long serialVersionUID = 1L;

    public static final String DUPLICATES = "events.duplicates";

    private final long horizonMillis;
    private transient ValueState<Long> forgetAt;
    private transient LongCounter duplicates;

    public DropDuplicates(long horizonMillis) {
        this.horizonMillis = horizonMillis;
    }

    /** The key of an event: counter and event_id, separated by a byte that neither may contain. */
    public static String keyOf(Event e) {
        return e.counter + '\u0000' + e.eventId;
    }

    @Override
    public void open(OpenContext ctx) {
        forgetAt = getRuntimeContext().getState(new ValueStateDescriptor<>("forget-at", Types.LONG));
        duplicates = getRuntimeContext().getLongCounter(DUPLICATES);
        RollcountMetrics.counter(getRuntimeContext().getMetricGroup(), RollcountMetrics.EVENTS_DEDUPLICATED, duplicates);
    }

    @Override
    public void processElement(Event e, Context ctx, Collector<Event> out) throws Exception {
        if (forgetAt.value() != null) {
            duplicates.add(1);
            return;
        }
        long at = saturatedAdd(e.ts, horizonMillis);
        forgetAt.update(at);
        ctx.timerService().registerEventTimeTimer(at);
        out.collect(e);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<Event> out) throws Exception {
        forgetAt.clear(); // the only timer of this key: its forget-at never moves (a duplicate changes nothing)
    }

    private static long saturatedAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }
}
