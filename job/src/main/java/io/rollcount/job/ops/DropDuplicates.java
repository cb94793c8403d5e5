package io.rollcount.job.ops;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
import io.rollcount.job.policy.Policies;
import java.time.Duration;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Counts each {@code (counter, event_id)} once while the dedup horizon (event time, default 24 h) holds
 * it: an event is a duplicate while the watermark is before its first delivery's time plus the horizon.
 * Keyed by that pair; the state is one long per pair, the event time the pair is forgotten at, compared
 * with the watermark when the pair is seen again (event time, so that a backfill deduplicates as the live
 * run did). No timer and no delete per pair: a pair past its time is simply overwritten when seen again,
 * and the state of pairs never seen again is dropped by RocksDB's compaction through Flink's state TTL,
 * {@value #TTL_HORIZONS} horizons of wall-clock time after it was written. So the job remembers an
 * event_id exactly within the horizon as long as its event time lags the wall clock by less than one
 * horizon (a job stopped for longer than that may count a redelivery of an event from before the stop
 * twice); the state holds about two horizons of pairs.
 *
 * <p>A savepoint of the version that kept a timer per pair ("forget-at" and its timers) restores: a pair
 * not in the new state is looked up there too, and its timers clear it as before, so that state drains
 * within one horizon. Those second lookups happen only in a job restored from such a savepoint, until its
 * watermark is two horizons past the first watermark it saw ({@code legacy-until}, operator state, the
 * same in every subtask); a job started empty or from this version's state never makes them.
 */
public final class DropDuplicates extends KeyedProcessFunction<String, Event, Event> implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;

    /** The state TTL, in horizons of wall-clock time. */
    static final int TTL_HORIZONS = 2;

    private final long horizonMillis;
    /** The horizon of each namespace (--policies); null: {@link #horizonMillis} for all. */
    private final Policies policies;

    private transient ValueState<Long> forgetAt;
    /** The earlier version's state: pairs it saw, each cleared by its own timer. */
    private transient ValueState<Long> legacyForgetAt;

    private transient LongCounter duplicates;
    /** Until which watermark the earlier version's state is looked up: NONE, PENDING (until the first watermark), or a time. */
    private transient long legacyUntil;

    private transient ListState<Long> legacyUntilState;
    private static final long NONE = Long.MIN_VALUE;
    private static final long PENDING = Long.MAX_VALUE;

    public DropDuplicates(long horizonMillis) {
        if (horizonMillis <= 0)
            throw new IllegalArgumentException("dedup horizon must be > 0 ms, got " + horizonMillis);
        this.horizonMillis = horizonMillis;
        this.policies = null;
    }

    /**
     * The horizon of each counter's namespace policy. The state's TTL follows the longest horizon; a
     * namespace whose policy does not dedup sends nothing here ({@link RouteEvents}), and an event of one
     * that arrives anyway (routed before a restore with other policies) is counted.
     */
    public DropDuplicates(Policies policies) {
        long max = policies.maxDedupMillis();
        this.horizonMillis = max > 0 ? max : 1;
        this.policies = policies;
    }

    /** The key of an event: counter and event_id, separated by a byte that neither may contain. */
    public static String keyOf(Event e) {
        return e.counter + '\u0000' + e.eventId;
    }

    @Override
    public void open(OpenContext ctx) {
        ValueStateDescriptor<Long> descriptor = new ValueStateDescriptor<>("forget-at-ttl", Types.LONG);
        long ttl = horizonMillis > Long.MAX_VALUE / TTL_HORIZONS ? Long.MAX_VALUE : horizonMillis * TTL_HORIZONS;
        descriptor.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofMillis(ttl))
                .updateTtlOnCreateAndWrite()
                .returnExpiredIfNotCleanedUp() // the event-time check below decides; the TTL only bounds the space
                .build());
        forgetAt = getRuntimeContext().getState(descriptor);
        legacyForgetAt = getRuntimeContext().getState(new ValueStateDescriptor<>("forget-at", Types.LONG));
        duplicates = getRuntimeContext().getLongCounter(JobAccumulators.DUPLICATES);
        RollcountMetrics.counter(
                getRuntimeContext().getMetricGroup(), RollcountMetrics.EVENTS_DEDUPLICATED, duplicates);
    }

    @Override
    public void initializeState(FunctionInitializationContext ctx) throws Exception {
        legacyUntilState =
                ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("legacy-until", Types.LONG));
        legacyUntil = NONE;
        if (!ctx.isRestored()) return;
        boolean any = false;
        for (Long until : legacyUntilState.get()) {
            any = true;
            legacyUntil = Math.max(legacyUntil, until);
        }
        if (!any) legacyUntil = PENDING; // restored state without this list: the earlier version's
    }

    @Override
    public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
        legacyUntilState.update(java.util.List.of(legacyUntil));
    }

    @Override
    public void processElement(Event e, Context ctx, Collector<Event> out) throws Exception {
        long horizon = policies == null
                ? horizonMillis
                : policies.forCounter(e.counter).dedupMillis();
        if (horizon <= 0) {
            out.collect(e);
            return;
        }
        long watermark = ctx.timerService().currentWatermark();
        Long at = forgetAt.value();
        if (at == null && legacyUntil != NONE) at = legacy(watermark);
        if (at != null && watermark < at) {
            duplicates.add(1);
            return;
        }
        forgetAt.update(saturatedAdd(e.ts, horizon));
        out.collect(e);
    }

    /** The pair's time in the earlier version's state while it may hold any (see the class comment); null otherwise. */
    private Long legacy(long watermark) throws Exception {
        if (legacyUntil == PENDING && watermark != Long.MIN_VALUE)
            legacyUntil = saturatedAdd(saturatedAdd(watermark, horizonMillis), horizonMillis); // two horizons
        if (legacyUntil != PENDING && watermark >= legacyUntil) {
            legacyUntil = NONE;
            return null;
        }
        return legacyForgetAt.value();
    }

    /** Only timers of the earlier version (restored from its savepoint): its pair is forgotten, as it was then. */
    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<Event> out) throws Exception {
        legacyForgetAt.clear();
    }

    private static long saturatedAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }
}
