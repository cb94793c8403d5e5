package io.rollcount.job.ops;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
import io.rollcount.job.policy.Policies;
import io.rollcount.sketches.ExpiringIdFilter;
import io.rollcount.sketches.Hashing;
import java.time.Duration;
import java.util.Iterator;
import java.util.List;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.util.Collector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts each {@code (counter, event_id)} once while the dedup horizon (event time, default 24 h) holds
 * it: an event is a duplicate while the watermark is before its first delivery's time plus the horizon.
 * Keyed by that pair; the state is one long per pair, the event time the pair is forgotten at, compared
 * with the watermark when the pair is seen again (event time, so that a backfill deduplicates as the live
 * run did). No timer and no delete per pair: a pair past its time is simply overwritten when seen again,
 * and the state of pairs never seen again is dropped by RocksDB's compaction through Flink's state TTL,
 * {@value #TTL_HORIZONS} horizons of the job's running time after it was written. Flink's TTL counts wall-clock
 * time, stops included, so the TTL is two horizons plus the stops that a pair within it may have lived through
 * ({@link JobStops}: from each snapshot's wall-clock time to the restore that follows it). So the job remembers
 * an event_id exactly within the horizon as long as its event time lags its running time by less than one
 * horizon, however long it was stopped; the state holds about two horizons of pairs, more for two horizons
 * after a long stop.
 *
 * <p>Every valid event passes through (the job chains its pre-aggregation to this operator, so an event crosses
 * one shuffle before it is combined): one without an {@code event_id}, or of a namespace whose policy does not
 * dedup, goes on at once without touching the state or the filter ({@link #keyOf} spreads them).
 *
 * <p>Most events carry an id never seen, and a lookup in RocksDB costs more than the rest of the operator: an
 * {@link ExpiringIdFilter} of {@value #FILTER_SLOTS} slots ({@value #FILTER_MIB} MiB of heap per subtask) in
 * front of the state answers "never seen within its horizon" for those, and the state is read only when it says
 * "maybe". The filter holds every pair this subtask put, with the time it is forgotten at; where a pair finds no
 * room it answers "maybe" for every pair until the watermark passes that pair's time (so it stays exact at any
 * number of pairs, and answers again once a horizon's pairs fit). It is not checkpointed: after a restore the
 * operator ({@link #operator}) reads the restored pairs into it before the first event, at most
 * {@value #FILTER_SLOTS} of them; where there are more it answers "maybe" until the watermark passes the latest
 * time any subtask had put ({@code max-forget-at}, operator state). Run under another operator after a restore,
 * the function keeps no filter and reads the state for every event.
 *
 * <p>A first-seen pair's put in RocksDB costs more than the rest of the operator when the pairs come in random
 * order: each searches a large memtable from the top. The operator holds up to {@value #WRITES_HELD} pairs'
 * times on the heap ({@link KeyOrderedWrites}) and writes them in RocksDB's key order when that many are held
 * and before every snapshot, so that a snapshot holds every pair seen before its barrier; a lookup reads the held
 * pairs before the state. Run under another operator, the function writes each pair at once.
 *
 * <p>A savepoint of the version that kept a timer per pair ("forget-at" and its timers) restores: a pair
 * not in the new state is looked up there too, and its timers clear it as before, so that state drains
 * within one horizon. Those second lookups happen only in a job restored from such a savepoint, until its
 * watermark is two horizons past the first watermark it saw ({@code legacy-until}, operator state, the
 * same in every subtask); a job started empty or from this version's state never makes them.
 */
public final class DropDuplicates extends KeyedProcessFunction<String, Event, Event> implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(DropDuplicates.class);

    /** The state TTL, in horizons of the job's running time. */
    static final int TTL_HORIZONS = 2;

    /** The filter's slots per subtask. */
    static final int FILTER_SLOTS = 1 << 21;

    /** The filter's heap per subtask, in MiB. */
    static final int FILTER_MIB = FILTER_SLOTS * 8 >> 20;

    /** The pairs' writes held on the heap per subtask before they are written in key order. */
    static final int WRITES_HELD = 1 << 15;

    /** The seed of a pair's hash in the filter. */
    private static final long HASH_SEED = 0x5EED_D0D0L;

    private final long horizonMillis;
    /** The horizon of each namespace (--policies); null: {@link #horizonMillis} for all. */
    private final Policies policies;
    /** The filter's slots (tests make it small). */
    private final int filterSlots;
    /** The writes held before they are written in key order (tests make it small). */
    private final int writesHeld;

    /** Flink's identifier of the heap state backend, whose TTL reads may remove entries. */
    private static final String HEAP_BACKEND = "hashmap";

    /** The state's name: a pair's time to be forgotten at, with a TTL. */
    private static final String FORGET_AT = "forget-at-ttl";

    private transient ValueState<Long> forgetAt;
    /** The earlier version's state: pairs it saw, each cleared by its own timer. */
    private transient ValueState<Long> legacyForgetAt;

    private transient LongCounter duplicates;
    /** Until which watermark the earlier version's state is looked up: NONE, PENDING (until the first watermark), or a time. */
    private transient long legacyUntil;

    private transient ListState<Long> legacyUntilState;
    private static final long NONE = Long.MIN_VALUE;
    private static final long PENDING = Long.MAX_VALUE;

    /** The pairs put, in front of the state; null where the state is read for every event (not rebuilt). */
    private transient ExpiringIdFilter seen;
    /** Whether this subtask started from a checkpoint or savepoint (the filter then waits for {@link #rebuild}). */
    private transient boolean restored;
    /** The latest time a pair is forgotten at that any subtask put, restored and since. */
    private transient long maxForgetAt;

    private transient ListState<Long> maxForgetAtState;
    /** The wall-clock stops of the job and the TTL they make; restored in initializeState, measured in open. */
    private transient JobStops stops;
    /** The operator's processing time, set by {@link #operator}; null elsewhere. */
    private transient LongSupplier wallClock;
    /** Whether the log said that the filter is full. */
    private transient boolean saidFull;
    /** Keyed-state reads of pairs ({@link RollcountMetrics#DEDUP_STATE_READS}). */
    private transient Counter stateReads;
    /** The pairs' times not yet in the state; null where each is written at once (not under {@link #operator}). */
    private transient KeyOrderedWrites held;
    /** The state backend the held writes go to. */
    private transient KeyedStateBackend<String> backend;

    public DropDuplicates(long horizonMillis) {
        this(horizonMillis, FILTER_SLOTS, WRITES_HELD);
    }

    DropDuplicates(long horizonMillis, int filterSlots, int writesHeld) {
        if (horizonMillis <= 0)
            throw new IllegalArgumentException("dedup horizon must be > 0 ms, got " + horizonMillis);
        this.horizonMillis = horizonMillis;
        this.policies = null;
        this.filterSlots = filterSlots;
        this.writesHeld = writesHeld;
    }

    /**
     * The horizon of each counter's namespace policy. The state's TTL follows the longest horizon; an event of a
     * namespace whose policy does not dedup goes on at once, as one without an {@code event_id} does.
     */
    public DropDuplicates(Policies policies) {
        long max = policies.maxDedupMillis();
        this.horizonMillis = max > 0 ? max : 1;
        this.policies = policies;
        this.filterSlots = max > 0 ? FILTER_SLOTS : 0;
        this.writesHeld = WRITES_HELD;
    }

    /** The operator to run this function in: it reads the restored pairs into the filter before the first event. */
    public static KeyedProcessOperator<String, Event, Event> operator(DropDuplicates function) {
        return new RebuildingOperator(function);
    }

    /**
     * The key of an event: counter and event_id, separated by a byte that neither may contain. An event without an
     * event_id never reaches the state and its key only routes it: one of {@value #SPREAD_KEYS} short keys, chosen by
     * the counter's and the event time's hash, so that the events of a hot counter without ids spread over the
     * subtasks as those with ids do, and the key costs no allocation on either side of the shuffle.
     */
    public static String keyOf(Event e) {
        if (e.eventId != null) return e.counter + '\u0000' + e.eventId;
        int h = (e.counter.hashCode() * 31 + Long.hashCode(e.ts)) * 0x9E3779B9;
        return SPREAD[h >>> (Integer.SIZE - SPREAD_BITS)];
    }

    /** The keys of events without an event_id: a separator no counter contains, then a number. */
    private static final int SPREAD_BITS = 12;

    static final int SPREAD_KEYS = 1 << SPREAD_BITS;

    private static final String[] SPREAD = IntStream.range(0, SPREAD_KEYS)
            .mapToObj(i -> "\u0001" + Integer.toString(i, Character.MAX_RADIX))
            .toArray(String[]::new);

    /** The key of an event as a hash for the filter. */
    private static long hashOf(String key) {
        return Hashing.murmur64AUtf8(key, HASH_SEED);
    }

    @Override
    public void open(OpenContext ctx) {
        ValueStateDescriptor<Long> descriptor = new ValueStateDescriptor<>(FORGET_AT, Types.LONG);
        long running = horizonMillis > Long.MAX_VALUE / TTL_HORIZONS ? Long.MAX_VALUE : horizonMillis * TTL_HORIZONS;
        long ttl = stops.restart(wallClock(), running);
        if (ttl > running && getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0)
            LOG.info(
                    "drop-duplicates: the job stood still for {} ms of the last {} ms; event ids are kept that long"
                            + " (two horizons of running time)",
                    ttl - running,
                    ttl);
        descriptor.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofMillis(ttl))
                .updateTtlOnCreateAndWrite()
                .returnExpiredIfNotCleanedUp() // the event-time check below decides; the TTL only bounds the space
                .build());
        forgetAt = getRuntimeContext().getState(descriptor);
        legacyForgetAt = getRuntimeContext().getState(new ValueStateDescriptor<>("forget-at", Types.LONG));
        duplicates = getRuntimeContext().getLongCounter(JobAccumulators.DUPLICATES);
        RollcountMetrics.counter(
                getRuntimeContext().getMetricGroup(), RollcountMetrics.EVENTS_DEDUPLICATED, duplicates);
        stateReads = RollcountMetrics.counter(getRuntimeContext().getMetricGroup(), RollcountMetrics.DEDUP_STATE_READS);
        seen = filterSlots > 0 && !restored ? new ExpiringIdFilter(filterSlots) : null;
    }

    /**
     * Reads the restored pairs into a new filter, at most as many as it has slots; where there are more, the filter
     * answers "maybe" until the watermark passes {@link #maxForgetAt}. A state restored without that time (the
     * earlier version's) is read to its end once to find it.
     */
    void rebuild(KeyedStateBackend<String> backend) throws Exception {
        if (filterSlots <= 0) return;
        ExpiringIdFilter filter = new ExpiringIdFilter(filterSlots);
        boolean known = maxForgetAt != Long.MAX_VALUE;
        long read = 0;
        long max = Long.MIN_VALUE;
        try (Stream<String> keys = backend.getKeys(FORGET_AT, VoidNamespace.INSTANCE)) {
            // On the heap a read may clean up pairs past their TTL while the keys are iterated: read from a copy of
            // the keys there (references to the state's own), as Flink's applyToAllKeys does. Elsewhere (RocksDB) a
            // read changes nothing and every key is a new object: streamed, never all in memory at once.
            Iterator<String> it = HEAP_BACKEND.equals(backend.getBackendTypeIdentifier())
                    ? keys.collect(Collectors.toList()).iterator()
                    : keys.iterator();
            while (it.hasNext()) {
                boolean fits = read++ < filterSlots;
                if (!fits && known) break;
                String key = it.next();
                backend.setCurrentKey(key);
                Long at = forgetAt.value();
                if (at == null) continue;
                max = Math.max(max, at);
                // the watermark after a restore starts from the beginning: no pair has expired yet
                if (fits) filter.add(hashOf(key), at, Long.MIN_VALUE);
            }
        }
        if (!known) maxForgetAt = max;
        if (read > filterSlots) filter.maybeUntil(maxForgetAt);
        seen = filter;
    }

    @Override
    public void initializeState(FunctionInitializationContext ctx) throws Exception {
        legacyUntilState =
                ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("legacy-until", Types.LONG));
        maxForgetAtState =
                ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("max-forget-at", Types.LONG));
        legacyUntil = NONE;
        restored = ctx.isRestored();
        stops = JobStops.restore(ctx.getOperatorStateStore());
        // a restored state without the list (the earlier version's): unknown until rebuild() reads it
        maxForgetAt = restored ? Long.MAX_VALUE : Long.MIN_VALUE;
        if (!restored) return;
        boolean known = false;
        for (Long at : maxForgetAtState.get()) {
            maxForgetAt = known ? Math.max(maxForgetAt, at) : at;
            known = true;
        }
        boolean any = false;
        for (Long until : legacyUntilState.get()) {
            any = true;
            legacyUntil = Math.max(legacyUntil, until);
        }
        if (!any) legacyUntil = PENDING; // restored state without this list: the earlier version's
    }

    @Override
    public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
        // before the keyed state's snapshot, which Flink takes after this
        if (held != null && held.size() > 0) held.writeTo(this::put);
        legacyUntilState.update(List.of(legacyUntil));
        maxForgetAtState.update(List.of(maxForgetAt));
        stops.snapshot(wallClock());
    }

    /** The wall clock of Flink's state TTL: the operator's processing time, or the system's outside {@link #operator}. */
    private long wallClock() {
        return wallClock == null ? System.currentTimeMillis() : wallClock.getAsLong();
    }

    /** The TTL of the pairs' state in this run, in ms of wall-clock time (tests). */
    long ttlMillis() {
        return stops.ttlMillis();
    }

    @Override
    public void processElement(Event e, Context ctx, Collector<Event> out) throws Exception {
        if (e.eventId == null) {
            out.collect(e);
            return;
        }
        long horizon = policies == null
                ? horizonMillis
                : policies.forCounter(e.counter).dedupMillis();
        if (horizon <= 0) {
            out.collect(e);
            return;
        }
        long watermark = ctx.timerService().currentWatermark();
        String key = ctx.getCurrentKey();
        long hash = seen == null ? 0 : hashOf(key);
        Long at = null;
        if (seen == null || legacyUntil != NONE || seen.mayContain(hash, watermark)) {
            at = held == null ? null : held.get(key);
            if (at == null) {
                stateReads.inc();
                at = forgetAt.value();
                if (at == null && legacyUntil != NONE) at = legacy(watermark);
            }
        }
        if (at != null && watermark < at) {
            duplicates.add(1);
            return;
        }
        long next = saturatedAdd(e.ts, horizon);
        remember(key, next);
        if (seen != null && !seen.add(hash, next, watermark) && !saidFull) {
            saidFull = true;
            LOG.info(
                    "drop-duplicates subtask {}: its filter of the event ids it holds ({} slots) is full; ids are read"
                            + " from keyed state until the watermark passes {} (said once per run, see metric {})",
                    getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
                    seen.capacity(),
                    next,
                    RollcountMetrics.DEDUP_STATE_READS);
        }
        maxForgetAt = Math.max(maxForgetAt, next);
        out.collect(e);
    }

    /** Puts the pair's time, held or at once; the current key stays the pair's. */
    private void remember(String key, long at) throws Exception {
        if (held == null) {
            forgetAt.update(at);
            return;
        }
        if (held.isFull()) {
            held.writeTo(this::put);
            backend.setCurrentKey(key);
        }
        held.put(key, at);
    }

    /** Puts a pair's time in the state (sets the backend's current key). */
    private void put(String key, long at) throws Exception {
        backend.setCurrentKey(key);
        forgetAt.update(at);
    }

    /** Keyed-state reads of pairs since open (tests). */
    long lookups() {
        return stateReads.getCount();
    }

    /** The filter in front of the state, null where there is none. */
    ExpiringIdFilter filter() {
        return seen;
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

    /** {@link KeyedProcessOperator} that reads the restored pairs into the function's filter once it is open. */
    private static final class RebuildingOperator extends KeyedProcessOperator<String, Event, Event> {
        private static final long serialVersionUID = 1L;

        RebuildingOperator(DropDuplicates function) {
            super(function);
        }

        @Override
        public void open() throws Exception {
            DropDuplicates f = (DropDuplicates) userFunction;
            f.wallClock = getProcessingTimeService()::getCurrentProcessingTime;
            super.open();
            if (f.restored) f.rebuild(getKeyedStateBackend());
            if (f.writesHeld > 0) {
                f.backend = getKeyedStateBackend();
                f.held = new KeyOrderedWrites(
                        f.writesHeld, getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks());
            }
        }
    }

    /** {@code a + b}, or {@link Long#MAX_VALUE} where it overflows. */
    static long saturatedAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }
}
