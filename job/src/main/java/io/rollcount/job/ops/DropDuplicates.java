package io.rollcount.job.ops;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.util.TaskManagerSlots;
import io.rollcount.sketches.ExpiringIdSet;
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
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.StateTtlConfig;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.Collector;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Counts each {@code (counter, event_id)} once while the dedup horizon (event time, default 24 h) holds
 * it: an event is a duplicate while the watermark is before its first delivery's time plus the horizon.
 * Keyed by that pair, so that Flink spreads the pairs over the subtasks and moves them with their key groups
 * when the job rescales; a pair is remembered as a 128-bit fingerprint (two 64-bit hashes of the key) with the
 * event time it is forgotten at, compared with the watermark when the pair is seen again (event time, so that a
 * backfill deduplicates as the live run did). Two pairs are confused only if both hashes collide, about once in
 * 2^64 pairs held.
 *
 * <p>Every valid event passes through (the job chains its pre-aggregation to this operator, so an event crosses
 * one shuffle before it is combined): one without an {@code event_id}, or of a namespace whose policy does not
 * dedup, goes on at once without touching the pairs ({@link #keyOf} spreads them).
 *
 * <p>Where the pairs live ({@link HeldPairs}): on the heap, in an {@link ExpiringIdSet} (grown with the pairs held
 * from 1.5 MiB up to {@link #autoSetSlots}: an eighth of the TaskManager's heap per slot, 6 MiB to 1.5 GiB) that
 * answers for every pair it holds, so that an event costs no state access; in keyed state, as a log of the pairs
 * added ({@code id-log}, a chunk per key group before every snapshot and every {@value #LOG_HELD} pairs: a handful
 * of appends per snapshot instead of a RocksDB write per pair); and, for a pair the set has no room for, in keyed state as it comes ({@code
 * id-overflow}), read for a pair the set does not hold until the watermark passes the latest time there ({@code
 * overflow-until}, operator state, the latest of every subtask's): exact at any number of pairs, at one state
 * read per event while the set is full.
 *
 * <p>After a restore, the operator ({@link #operator}) reads its key groups' chunks into the set before the first
 * event (a pair keeps its latest time), the pairs that do not fit going to {@code id-overflow}; pairs whose time
 * the watermark had passed at the snapshot ({@code watermark}, operator state, the earliest of every subtask's)
 * are skipped, as the job would have treated them had it run on. The log holds the pairs of the TTL (two
 * horizons of running time), and a restore reads all of it. The state of the version that kept one state entry
 * per pair ({@code forget-at-ttl}) is read the same way first, so that a savepoint of it restores.
 *
 * <p>No timer and no delete per pair: the set reuses a pair's slot once the watermark has passed its time, and
 * the state is dropped by RocksDB's compaction through Flink's state TTL, {@value #TTL_HORIZONS} horizons of the
 * job's running time after it was written. Flink's TTL counts wall-clock time, stops included, so the TTL is two
 * horizons plus the stops that a pair within it may have lived through ({@link JobStops}: from each snapshot's
 * wall-clock time to the restore that follows it). So the job remembers an event_id exactly within the horizon as
 * long as its event time lags its running time by less than one horizon, however long it was stopped.
 *
 * <p>A savepoint of the version that kept a timer per pair ("forget-at" and its timers) restores: a pair
 * not found is looked up there too, and its timers clear it as before, so that state drains
 * within one horizon. Those lookups happen only in a job restored from such a savepoint, until its
 * watermark is two horizons past the first watermark it saw ({@code legacy-until}, operator state, the
 * same in every subtask); a job started empty or from this version's state never makes them.
 */
public final class DropDuplicates extends KeyedProcessFunction<String, Event, Event> implements CheckpointedFunction {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(DropDuplicates.class);

    /** The state TTL, in horizons of the job's running time. */
    static final int TTL_HORIZONS = 2;

    /** The set's slots where the TaskManager's heap decides ({@link #autoSetSlots}). */
    static final int AUTO = 0;

    /** The bounds of {@link #autoSetSlots}: 6 MiB and 1.5 GiB of heap. */
    static final int MIN_AUTO_SLOTS = 1 << 18;

    static final int MAX_AUTO_SLOTS = 1 << 26;

    /** The slots the set starts with where the heap decides its bound (1.5 MiB); it grows with the pairs held. */
    static final int INITIAL_AUTO_SLOTS = 1 << 16;

    /** The pairs held before they are written to the state, per subtask. */
    static final int LOG_HELD = 1 << 16;

    /** The prefix of the key groups' own keys (a control character, which no counter id contains). */
    private static final String GROUP_KEY_PREFIX = "\u0002";

    private final long horizonMillis;
    /** The horizon of each namespace (--policies); null: {@link #horizonMillis} for all. */
    private final Policies policies;
    /** The set's slots, or {@link #AUTO} (tests make it small). */
    private final int setSlots;
    /** The pairs held before they are written out (tests make it small). */
    private final int logHeld;

    /** Flink's identifier of the heap state backend, whose TTL reads may remove entries. */
    private static final String HEAP_BACKEND = "hashmap";

    /** The earlier version's state: a pair's time to be forgotten at, one entry per pair, with a TTL. */
    private static final String FORGET_AT = "forget-at-ttl";

    // ---- keyed state (the pairs' own: HeldPairs)
    /** The version before the log's pairs, read once after a restore. */
    private transient ValueState<Long> forgetAt;
    /** The version before the TTL's pairs, each cleared by its own timer. */
    private transient ValueState<Long> legacyForgetAt;

    // ---- operator state
    private transient ListState<Long> legacyUntilState;
    private transient ListState<Long> overflowUntilState;
    /** Each subtask's watermark at its snapshot: a pair whose time is not after the earliest is not restored. */
    private transient ListState<Long> watermarkState;
    /** The wall-clock stops of the job and the TTL they make; restored in initializeState, measured in open. */
    private transient JobStops stops;

    // ---- the task thread's
    /** The pairs this subtask holds. */
    private transient HeldPairs pairs;
    /** The fingerprint of the current pair ({@link HeldPairs#fingerprint}). */
    private transient long[] fingerprint;
    /** Until which watermark the earlier version's state is looked up: NONE, PENDING (until the first watermark), or a time. */
    private transient long legacyUntil;
    /** The restored {@code overflow-until}, the latest of every subtask's, until {@link #pairs} takes it. */
    private transient long restoredOverflowUntil;
    /** The latest watermark an event saw, snapshotted; restored as the earliest of every subtask's. */
    private transient long watermark;
    /** Whether this subtask started from a checkpoint or savepoint ({@link #rebuild} then reads it). */
    private transient boolean restored;
    /** Whether the log said that the set is full. */
    private transient boolean saidFull;
    /** The state backend, set by {@link #operator}. */
    private transient KeyedStateBackend<String> backend;
    /** The operator's processing time, set by {@link #operator}. */
    private transient LongSupplier wallClock;
    /** The TaskManager's slots, set by {@link #operator}. */
    private transient int taskSlots;

    // ---- metrics
    private transient LongCounter duplicates;
    /** Keyed-state reads of pairs ({@link RollcountMetrics#DEDUP_STATE_READS}), the pairs' and the earlier versions'. */
    private transient Counter stateReads;

    private static final long NONE = Long.MIN_VALUE;
    private static final long PENDING = Long.MAX_VALUE;

    public DropDuplicates(long horizonMillis) {
        this(horizonMillis, AUTO, LOG_HELD);
    }

    DropDuplicates(long horizonMillis, int setSlots, int logHeld) {
        if (horizonMillis <= 0)
            throw new IllegalArgumentException("dedup horizon must be > 0 ms, got " + horizonMillis);
        this.horizonMillis = horizonMillis;
        this.policies = null;
        this.setSlots = setSlots;
        this.logHeld = logHeld;
    }

    /**
     * The horizon of each counter's namespace policy. The state's TTL follows the longest horizon; an event of a
     * namespace whose policy does not dedup goes on at once, as one without an {@code event_id} does.
     */
    public DropDuplicates(Policies policies) {
        long max = policies.maxDedupMillis();
        this.horizonMillis = max > 0 ? max : 1;
        this.policies = policies;
        this.setSlots = max > 0 ? AUTO : ExpiringIdSet.BUCKET;
        this.logHeld = max > 0 ? LOG_HELD : 1;
    }

    /** The operator to run this function in: it reads the restored pairs into the set before the first event. */
    public static KeyedProcessOperator<String, Event, Event> operator(DropDuplicates function) {
        return new PairsOperator(function);
    }

    /**
     * The key of an event: counter and event_id, separated by a byte that neither may contain. An event without an
     * event_id never reaches the pairs and its key only routes it: one of {@value #SPREAD_KEYS} short keys, chosen
     * by the counter's and the event time's hash, so that the events of a hot counter without ids spread over the
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

    @Override
    public void open(OpenContext ctx) {
        if (backend == null)
            throw new IllegalStateException("DropDuplicates runs in the operator DropDuplicates.operator(function)");
        long running = horizonMillis > Long.MAX_VALUE / TTL_HORIZONS ? Long.MAX_VALUE : horizonMillis * TTL_HORIZONS;
        long ttlMillis = stops.restart(wallClock.getAsLong(), running);
        if (ttlMillis > running && getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0)
            LOG.info(
                    "drop-duplicates: the job stood still for {} ms of the last {} ms; event ids are kept that long"
                            + " (two horizons of running time)",
                    ttlMillis - running,
                    ttlMillis);
        StateTtlConfig ttl = StateTtlConfig.newBuilder(Duration.ofMillis(ttlMillis))
                .updateTtlOnCreateAndWrite()
                .neverReturnExpired() // restored or not, a pair past its TTL is gone, on either backend
                .build();
        ListStateDescriptor<byte[]> log =
                new ListStateDescriptor<>("id-log", PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO);
        log.enableTimeToLive(ttl);
        MapStateDescriptor<Tuple2<Long, Long>, Long> overflow =
                new MapStateDescriptor<>("id-overflow", Types.TUPLE(Types.LONG, Types.LONG), Types.LONG);
        overflow.enableTimeToLive(ttl);
        ValueStateDescriptor<Long> entries = new ValueStateDescriptor<>(FORGET_AT, Types.LONG);
        entries.enableTimeToLive(StateTtlConfig.newBuilder(Duration.ofMillis(ttlMillis))
                .updateTtlOnCreateAndWrite()
                .returnExpiredIfNotCleanedUp() // as that version had it
                .build());
        forgetAt = getRuntimeContext().getState(entries);
        legacyForgetAt = getRuntimeContext().getState(new ValueStateDescriptor<>("forget-at", Types.LONG));
        duplicates = getRuntimeContext().getLongCounter(JobAccumulators.DUPLICATES);
        RollcountMetrics.counter(
                getRuntimeContext().getMetricGroup(), RollcountMetrics.EVENTS_DEDUPLICATED, duplicates);
        stateReads = RollcountMetrics.counter(getRuntimeContext().getMetricGroup(), RollcountMetrics.DEDUP_STATE_READS);
        var task = getRuntimeContext().getTaskInfo();
        int keyGroups = task.getMaxNumberOfParallelSubtasks();
        int slots = setSlots == AUTO ? autoSetSlots(Runtime.getRuntime().maxMemory(), taskSlots) : setSlots;
        ExpiringIdSet ids = new ExpiringIdSet(Math.min(INITIAL_AUTO_SLOTS, slots), slots);
        if (setSlots == AUTO)
            LOG.info(
                    "drop-duplicates {}: up to {} MiB of heap for {} event ids, grown with the ids held",
                    task.getIndexOfThisSubtask(),
                    (24L * slots) >> 20,
                    slots);
        KeyGroupKeys groupKeys = new KeyGroupKeys(
                GROUP_KEY_PREFIX,
                KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                        keyGroups, task.getNumberOfParallelSubtasks(), task.getIndexOfThisSubtask()),
                keyGroups);
        pairs = new HeldPairs(
                ids,
                new IdLog(logHeld, keyGroups),
                groupKeys,
                keyGroups,
                backend,
                getRuntimeContext().getListState(log),
                getRuntimeContext().getMapState(overflow),
                stateReads);
        pairs.overflowUntil(restoredOverflowUntil);
        fingerprint = new long[2];
    }

    /**
     * Reads the restored pairs of this subtask's key groups back ({@link HeldPairs}): first the earlier version's
     * ({@code forget-at-ttl}), then the log, so that a pair keeps its latest time. A pair whose time the watermark
     * had passed at the snapshot (every subtask's) is skipped: had the job run on, the watermark would have stayed
     * past it, and no redelivery of it would have been dropped.
     */
    void rebuild() throws Exception {
        try (Stream<String> keys = backend.getKeys(FORGET_AT, VoidNamespace.INSTANCE)) {
            // On the heap a read may clean up pairs past their TTL while the keys are iterated: read from a copy of
            // the keys there (references to the state's own), as Flink's applyToAllKeys does. Elsewhere (RocksDB) a
            // read changes nothing and every key is a new object: streamed, never all in memory at once.
            Iterator<String> it = HEAP_BACKEND.equals(backend.getBackendTypeIdentifier())
                    ? keys.collect(Collectors.toList()).iterator()
                    : keys.iterator();
            while (it.hasNext()) {
                String key = it.next();
                backend.setCurrentKey(key);
                Long at = forgetAt.value();
                if (at != null && at > watermark) pairs.restore(key, at);
            }
        }
        pairs.restoreLog(watermark);
    }

    @Override
    public void initializeState(FunctionInitializationContext ctx) throws Exception {
        legacyUntilState =
                ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("legacy-until", Types.LONG));
        overflowUntilState =
                ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("overflow-until", Types.LONG));
        watermarkState =
                ctx.getOperatorStateStore().getUnionListState(new ListStateDescriptor<>("watermark", Types.LONG));
        legacyUntil = NONE;
        restoredOverflowUntil = Long.MIN_VALUE;
        watermark = Long.MIN_VALUE;
        restored = ctx.isRestored();
        stops = JobStops.restore(ctx.getOperatorStateStore());
        if (!restored) return;
        for (Long until : overflowUntilState.get()) restoredOverflowUntil = Math.max(restoredOverflowUntil, until);
        boolean first = true;
        for (Long at : watermarkState.get()) {
            watermark = first ? at : Math.min(watermark, at);
            first = false;
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
        pairs.writeOut();
        legacyUntilState.update(List.of(legacyUntil));
        overflowUntilState.update(List.of(pairs.overflowUntil()));
        watermarkState.update(List.of(watermark));
        stops.snapshot(wallClock.getAsLong());
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
        if (watermark > this.watermark) this.watermark = watermark;
        // the operator sets no current key (PairsOperator#setKeyContextElement1): the set needs none, the state does
        String key = keyOf(e);
        HeldPairs.fingerprint(key, fingerprint);
        long hi = fingerprint[0];
        long lo = fingerprint[1];
        long next = saturatedAdd(e.ts, horizon);
        if (legacyUntil == NONE && pairs.setAnswersAt(watermark)) {
            // the set alone answers: one probe
            ExpiringIdSet.Added added = pairs.holdUnlessLive(key, hi, lo, next, watermark);
            if (added == ExpiringIdSet.Added.LIVE) {
                duplicates.add(1);
                return;
            }
            if (added == ExpiringIdSet.Added.REFUSED) sayFull(next);
            out.collect(e);
            return;
        }
        backend.setCurrentKey(key);
        long at = pairs.timeOf(key, hi, lo, watermark);
        if (at <= watermark && legacyUntil != NONE) at = Math.max(at, legacy(watermark));
        if (watermark < at) {
            duplicates.add(1);
            return;
        }
        if (!pairs.hold(key, hi, lo, next, watermark)) sayFull(next);
        out.collect(e);
    }

    private void sayFull(long next) {
        if (saidFull) return;
        saidFull = true;
        LOG.info(
                "drop-duplicates subtask {}: its set of the event ids it holds ({} slots) is full; ids are also read"
                        + " from keyed state until the watermark passes {} (said once per run, see metric {})",
                getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
                pairs.ids().capacity(),
                next,
                RollcountMetrics.DEDUP_STATE_READS);
    }

    /** Keyed-state reads of pairs since open (tests). */
    long lookups() {
        return stateReads.getCount();
    }

    /** The set of pairs on the heap (tests). */
    ExpiringIdSet ids() {
        return pairs.ids();
    }

    /** Until which watermark a pair not in the set is looked up in the state (tests). */
    long overflowUntil() {
        return pairs.overflowUntil();
    }

    /**
     * The pair's time in the earlier version's state while it may hold any (see the class comment);
     * {@link ExpiringIdSet#NONE} otherwise.
     */
    private long legacy(long watermark) throws Exception {
        if (legacyUntil == PENDING && watermark != Long.MIN_VALUE)
            legacyUntil = saturatedAdd(saturatedAdd(watermark, horizonMillis), horizonMillis); // two horizons
        if (legacyUntil != PENDING && watermark >= legacyUntil) {
            legacyUntil = NONE;
            return ExpiringIdSet.NONE;
        }
        stateReads.inc();
        Long at = legacyForgetAt.value();
        return at == null ? ExpiringIdSet.NONE : at;
    }

    /** Only timers of the earlier version (restored from its savepoint): its pair is forgotten, as it was then. */
    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<Event> out) throws Exception {
        legacyForgetAt.clear();
    }

    /**
     * {@link KeyedProcessOperator} that gives the function its backend, reads the restored pairs once open, and
     * leaves the current key to the function.
     */
    private static final class PairsOperator extends KeyedProcessOperator<String, Event, Event> {
        private static final long serialVersionUID = 1L;

        PairsOperator(DropDuplicates function) {
            super(function);
        }

        /**
         * Sets no current key. Flink would set the event's key before each event, which the RocksDB backend
         * serializes at once although most events touch no keyed state (the set answers, the log is written per key
         * group); {@link #processElement} sets it where it reads the pair's state.
         */
        @Override
        public void setKeyContextElement1(StreamRecord record) {}

        @Override
        public void open() throws Exception {
            DropDuplicates f = (DropDuplicates) userFunction;
            f.wallClock = getProcessingTimeService()::getCurrentProcessingTime;
            f.backend = getKeyedStateBackend();
            f.taskSlots = TaskManagerSlots.of(this);
            super.open();
            if (f.restored) f.rebuild();
        }
    }

    /**
     * The set's slots on a TaskManager of {@code maxHeap} bytes of heap and {@code slots} slots: an eighth of the
     * heap per slot (the counter cache takes a quarter), in a power of two of slots of 24 bytes, within
     * [{@value #MIN_AUTO_SLOTS}, {@value #MAX_AUTO_SLOTS}] (6 MiB to 1.5 GiB; about 0.23 to 59 million ids held before
     * the state is read too).
     */
    static int autoSetSlots(long maxHeap, int slots) {
        if (maxHeap == Long.MAX_VALUE) return MAX_AUTO_SLOTS;
        long fit = maxHeap / Math.max(1, slots) / 8 / 24;
        if (fit <= MIN_AUTO_SLOTS) return MIN_AUTO_SLOTS;
        return (int) Math.min(MAX_AUTO_SLOTS, Long.highestOneBit(fit));
    }

    /** {@code a + b}, or {@link Long#MAX_VALUE} where it overflows. */
    static long saturatedAdd(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0 ? Long.MAX_VALUE : r;
    }
}
