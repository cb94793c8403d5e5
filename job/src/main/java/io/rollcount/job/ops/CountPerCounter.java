package io.rollcount.job.ops;

import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.model.WindowSum;
import io.rollcount.job.policy.NamespacePolicy;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisLossWatch;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.redis.RollupsRebuild;
import io.rollcount.sketches.RedisHyperLogLog;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.InternalTimer;
import org.apache.flink.streaming.api.operators.InternalTimerService;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.Triggerable;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.util.OutputTag;

/**
 * The exact counts of one counter, keyed by counter id: all five resolutions and the all-time total in
 * one {@link CounterState}, and the unique-users sketches of its open 1h and 1d windows in Redis's own
 * HyperLogLog format, for the {@code uniques} of the rollups.
 *
 * <p><b>State.</b> Keyed state is the truth at every checkpoint: a {@code ValueState<CounterState>}
 * ("counter") and a {@code MapState<String, byte[]>} ("uniques") per counter. Between checkpoints the
 * counters in use live on the heap ({@link CounterCache}, {@value #DEFAULT_CACHE_BYTES} bytes per
 * subtask by default, least recently used out first): a partial sum of a cached counter costs no state
 * access and no (de)serialisation of its sketches; a counter is read from RocksDB when it is first
 * needed and written back only when it is evicted and, if it changed since, in {@link #snapshotState},
 * before the keyed state is snapshotted. So state is as small as before and lives in RocksDB, while a hot
 * counter costs heap work only. When each counter is next due (a window closes, or its allowed lateness
 * ends) is a heap index per subtask ({@link DueIndex}), not a keyed timer per counter; it is rebuilt from
 * keyed state on restore, so it needs no state of its own and follows the key groups on a rescale.
 *
 * <p><b>Outputs</b>, on the main stream, {@link RedisWrite}s, each with the absolute expiry of its window
 * (its end plus the resolution's retention; none for the total and {@code u:all}): a value that only ever
 * received positive deltas is written monotone (every value written is a sum over a subset of the final
 * events, so the final value is the largest); any other value with a version, the number of events in it,
 * so that where the sink guards a key against a replay an older value never overwrites a newer one. The
 * users of each partial sum go out at once as USERS writes ({@code PFADD}) of its 1h, 1d and all-time
 * uniques keys. Counts are written:
 * <ul>
 *   <li>the total and every changed open window, at most once per flush interval (processing time,
 *       default 1 s: one callback per subtask for every changed counter, not a timer per counter);</li>
 *   <li>a window again when the watermark passes its end (closed: revision 0 goes to {@link #ROLLUPS} if
 *       its resolution is one of the rollups', {@code --rollups.resolutions}) and when it passes end plus
 *       the allowed lateness (final: its state is dropped).</li>
 * </ul>
 * A late event within the allowed lateness that changes a closed window makes a new revision, emitted at
 * the next flush. The lateness rule itself is applied upstream ({@link PreAggregate}), against a
 * watermark never behind this operator's, so a partial sum always finds its windows here. After a
 * restore, a counter whose last changes were not yet written is written at its next partial sum or,
 * without one, when the watermark reaches its next window end (every counter with a change in flight
 * has an open window, hence an entry in the due index).
 */
public final class CountPerCounter extends AbstractStreamOperator<RedisWrite>
        implements OneInputStreamOperator<PartialSum, RedisWrite>, Triggerable<String, VoidNamespace> {
    private static final long serialVersionUID = 1L;
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(CountPerCounter.class);

    public static final OutputTag<Rollup> ROLLUPS = new OutputTag<>("rollups") {};
    /** Sums of closed 1m, 1h and 1d windows, for the window top-K per namespace. */
    public static final OutputTag<WindowSum> CLOSED_WINDOWS = new OutputTag<>("closed-windows") {};
    /**
     * Partial sums that would take the counter's total or one of its windows past the 64-bit range: not
     * counted, each one dead letter with reason {@value #OVERFLOW_REASON} naming the counter. The payload
     * is {@code {"counter","delta","events","ts"}} (the partial's sum, how many events it combines, its
     * 5-second bucket); the source {@value #OVERFLOW_SOURCE}.
     */
    public static final OutputTag<Event> OVERFLOW = new OutputTag<>("overflow") {};

    public static final String OVERFLOW_REASON = "overflow";
    public static final String OVERFLOW_SOURCE = "count-per-counter";
    /** Heap for counters between snapshots, per subtask. */
    public static final long DEFAULT_CACHE_BYTES = 32L << 20;

    private static final Resolution[] UNIQUE_RESOLUTIONS = {Resolution.H1, Resolution.D1};
    private static final long NO_TIMESTAMP = Long.MIN_VALUE;

    private final RedisKeys keys;
    private final long lateness;
    private final long flushIntervalMillis;
    private final long cacheBytes;
    /** The resolutions whose closed windows and revisions go to {@link #ROLLUPS}: a bit per {@link Resolution#ordinal()}. */
    private final int rollupMask;
    /** What each namespace keeps (--policies): resolutions, retention, uniques. */
    private final Policies policies;

    private transient ValueStateDescriptor<CounterState> stateDescriptor;
    private transient ValueState<CounterState> state;
    /** Unique-users sketches in Redis's own format of open windows, "1h:<start>" / "1d:<start>", for the rollups. */
    private transient MapState<String, byte[]> uniques;
    /**
     * Only for timers restored from a savepoint of an earlier version, which kept one RocksDB event-time
     * timer per counter (and before that per-counter flush timers): they fire once and do what is due
     * (see {@link #onEventTime}); this version registers none.
     */
    private transient InternalTimerService<VoidNamespace> legacyTimers;
    /** When each counter of this subtask is next due (see {@link DueIndex}): on the heap, rebuilt from keyed state on restore. */
    private transient DueIndex due;
    /** The keyed state was restored: {@link #open} rebuilds {@link #due} from it. */
    private transient boolean restored;

    private transient CounterCache cache;
    /** Counters changed since the last flush, in the order of their first change. */
    private transient ArrayList<CachedCounter> changed;
    /** The keyed state backend keeps value objects (rather than serialising them). */
    private transient boolean heapBackend;
    /** The slot of each resolution's window for the partial sum at hand (scratch). */
    private transient int[] slots;

    private transient LongCounter overflowCount;
    /** The timestamp of records emitted now: the event-time timer's, else none. */
    private transient long stamp;

    /** Watches Redis for a loss of its data (see {@link #rebuildingAfterLoss}); null: no rebuild. */
    private RedisLossWatch lossWatch;
    /** Subtask 0 rebuilds the closed windows from counter-rollups after a loss; null: no such rebuild. */
    private RollupsRebuild rollupsRebuild;
    /** Counters per step of a rebuild, and the pause between steps: about 10,000 counters a second. */
    static final int REBUILD_COUNTERS_PER_STEP = 1_000;

    static final long REBUILD_STEP_MILLIS = 100;
    /** The counters still to write again after a loss, or null; the next to write. */
    private transient ArrayList<String> rebuildQueue;

    private transient int rebuildNext;
    private transient long rebuildStartNanos;
    private transient long rebuildKeys;
    private transient org.apache.flink.metrics.Counter rebuildsMetric;
    private transient org.apache.flink.metrics.Counter rebuildKeysMetric;
    /** Rebuilds finished (the rollups' thread counts its own too: thread-safe counters). */
    private transient org.apache.flink.metrics.Counter rebuildsFinishedMetric;
    /** The longest rebuild finished, ms (gauge {@code redisRebuildLongestMs}). */
    private transient java.util.concurrent.atomic.AtomicLong rebuildLongestMillis;

    private transient java.util.concurrent.ExecutorService rollupsThread;
    /** Whether the rebuild from counter-rollups of this subtask is under way (its thread sets it back). */
    private transient volatile boolean rollupsRunning;
    /**
     * Whether a rebuild was under way at the last checkpoint, in union operator state: a job restored from that
     * checkpoint starts it over (the restored writers find {@code P:_mark}, which the rebuild wrote again, so
     * nothing else would tell it that some counters are still missing in Redis).
     */
    private transient org.apache.flink.api.common.state.ListState<Boolean> rebuildPending;

    private transient boolean resumeRebuild;

    /** Rollups of every resolution. */
    public CountPerCounter(RedisKeys keys, long allowedLatenessMillis, long flushIntervalMillis) {
        this(keys, allowedLatenessMillis, flushIntervalMillis, DEFAULT_CACHE_BYTES, ALL_RESOLUTIONS);
    }

    /** Rollups of every resolution. */
    public CountPerCounter(RedisKeys keys, long allowedLatenessMillis, long flushIntervalMillis, long cacheBytes) {
        this(keys, allowedLatenessMillis, flushIntervalMillis, cacheBytes, ALL_RESOLUTIONS);
    }

    /**
     * @param rollupMask the resolutions whose closed windows go to {@link #ROLLUPS}, a bit per
     *     {@link Resolution#ordinal()} ({@code JobOptions#rollupResolutionMask}); the others are neither built nor revised
     */
    public CountPerCounter(
            RedisKeys keys, long allowedLatenessMillis, long flushIntervalMillis, long cacheBytes, int rollupMask) {
        this(keys, allowedLatenessMillis, flushIntervalMillis, cacheBytes, rollupMask, Policies.none(100, 1));
    }

    /**
     * @param policies what each namespace keeps: only the resolutions of its policy are counted, written
     *     (expiring after its retention) and rolled up; only its uniques are written and sketched. A window
     *     restored from a savepoint of a resolution the policies no longer keep is no longer written.
     */
    public CountPerCounter(
            RedisKeys keys,
            long allowedLatenessMillis,
            long flushIntervalMillis,
            long cacheBytes,
            int rollupMask,
            Policies policies) {
        if (flushIntervalMillis <= 0)
            throw new IllegalArgumentException("flush interval must be > 0 ms, got " + flushIntervalMillis);
        if ((rollupMask & ~ALL_RESOLUTIONS) != 0)
            throw new IllegalArgumentException("rollup resolutions: unknown bits in " + rollupMask);
        this.keys = keys;
        this.lateness = allowedLatenessMillis;
        this.flushIntervalMillis = flushIntervalMillis;
        this.cacheBytes = cacheBytes;
        this.rollupMask = rollupMask;
        this.policies = policies;
    }

    /**
     * After a loss of Redis's data ({@code watch}): writes every counter this subtask holds again (its total,
     * every window it keeps, the 1h and 1d unique-users sketches it keeps), and with {@code rollups}, from
     * subtask 0, the closed windows of {@code counter-rollups}. Returns this operator.
     */
    public CountPerCounter rebuildingAfterLoss(RedisLossWatch watch, RollupsRebuild rollups) {
        this.lossWatch = watch;
        this.rollupsRebuild = rollups;
        return this;
    }

    /** A mask with every resolution. */
    public static final int ALL_RESOLUTIONS = (1 << Resolution.all().length) - 1;

    private boolean rollsUp(Resolution r) {
        return (rollupMask & (1 << r.ordinal())) != 0;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        restored = context.isRestored();
        rebuildPending = context.getOperatorStateStore()
                .getUnionListState(new org.apache.flink.api.common.state.ListStateDescriptor<>(
                        "redis-rebuild-pending", Types.BOOLEAN));
        for (Boolean b : rebuildPending.get()) resumeRebuild |= Boolean.TRUE.equals(b);
    }

    @Override
    public void open() throws Exception {
        super.open();
        stateDescriptor = new ValueStateDescriptor<>("counter", TypeInformation.of(CounterState.class));
        state = getPartitionedState(stateDescriptor);
        uniques = getPartitionedState(new MapStateDescriptor<>(
                "uniques", Types.STRING, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
        legacyTimers = getInternalTimerService("user-timers", VoidNamespaceSerializer.INSTANCE, this);
        due = new DueIndex();
        if (restored) rebuildDueIndex();
        cache = new CounterCache(cacheBytes);
        changed = new ArrayList<>();
        stamp = NO_TIMESTAMP;
        slots = new int[Resolution.all().length];
        overflowCount = getRuntimeContext().getLongCounter(RouteEvents.DLQ_PREFIX + OVERFLOW_REASON);
        RollcountMetrics.deadLetters(getMetricGroup(), OVERFLOW_REASON, overflowCount);
        heapBackend = getKeyedStateBackend() instanceof org.apache.flink.runtime.state.heap.HeapKeyedStateBackend;
        rebuildsMetric = getMetricGroup()
                .counter(RollcountMetrics.REDIS_REBUILDS, new org.apache.flink.metrics.ThreadSafeSimpleCounter());
        rebuildKeysMetric = getMetricGroup()
                .counter(RollcountMetrics.REDIS_REBUILD_KEYS, new org.apache.flink.metrics.ThreadSafeSimpleCounter());
        rebuildsFinishedMetric = getMetricGroup()
                .counter(
                        RollcountMetrics.REDIS_REBUILDS_FINISHED,
                        new org.apache.flink.metrics.ThreadSafeSimpleCounter());
        java.util.concurrent.atomic.AtomicLong longest = new java.util.concurrent.atomic.AtomicLong();
        rebuildLongestMillis = longest;
        getMetricGroup().gauge(RollcountMetrics.REDIS_REBUILD_LONGEST_MS, longest::get);
        if (lossWatch != null)
            lossWatch.open(
                    "count-per-counter-" + getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(), restored);
        scheduleFlush();
    }

    // ------------------------------------------------------------------ counting

    @Override
    public void processElement(StreamRecord<PartialSum> record) throws Exception {
        PartialSum p = record.getValue();
        CachedCounter c = counter(p.counter);
        CounterState s = c.state;
        Resolution[] all = Resolution.all();
        int[] idx = slots;
        NamespacePolicy policy = c.policy;
        for (int k = 0; k < all.length; k++)
            idx[k] = policy.keeps(all[k]) ? s.find(all[k], all[k].windowStart(p.bucket)) : -1;
        // Nothing of a partial sum that would take the total or one of its windows past the 64-bit range
        // is counted (its users neither): it becomes one dead letter, and the counter keeps what it had.
        String overflows = overflows(s, p.sum, idx);
        if (overflows != null) {
            overflowed(p, s, overflows, record);
            return;
        }
        for (int k = 0; k < all.length; k++) {
            Resolution r = all[k];
            if (!policy.keeps(r)) continue;
            int i = idx[k];
            if (i < 0) {
                long start = r.windowStart(p.bucket);
                i = s.add(r, start);
                c.weightStale = true;
                // one index entry per counter, at its earliest due time (see dueNow), not two per window
                long at = start + r.sizeMillis - 1;
                if (at < s.nextTimer) {
                    due.add(at, c.id);
                    s.nextTimer = at;
                }
            }
            s.sum[i] += p.sum;
            s.events[i] += p.events;
            s.set(i, CounterState.DIRTY);
            if (p.negative) s.set(i, CounterState.NEGATIVE);
            if (s.has(i, CounterState.CLOSED) && rollsUp(r)) s.set(i, CounterState.REVISE);
        }
        if (p.users.length > 0 && policy.anyUniques()) addUsers(c, p);
        s.total += p.sum;
        s.totalEvents += p.events;
        s.negative |= p.negative;
        s.totalDirty = true;
        changedNow(c);
    }

    /** Whether {@code a + b} leaves the 64-bit range. */
    static boolean overflows(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0;
    }

    /** The value that adding {@code delta} would take past the 64-bit range ("total" or a window), or null. */
    private static String overflows(CounterState s, long delta, int[] idx) {
        if (overflows(s.total, delta)) return "total " + s.total;
        for (int i : idx) {
            if (i >= 0 && overflows(s.sum[i], delta)) {
                return s.resolution(i).label + " window " + RedisKeys.windowSuffix(s.resolution(i), s.start[i])
                        + " (sum " + s.sum[i] + ")";
            }
        }
        return null;
    }

    /** An {@code overflow} dead letter for a partial sum that is not counted, naming the counter. */
    private void overflowed(PartialSum p, CounterState s, String value, StreamRecord<PartialSum> record) {
        overflowCount.add(1);
        Event e = new Event();
        e.counter = p.counter;
        e.delta = p.sum;
        e.ts = p.bucket;
        e.payload = Json.write(g -> {
            g.writeStartObject();
            g.writeStringField("counter", p.counter);
            g.writeNumberField("delta", p.sum);
            g.writeNumberField("events", p.events);
            g.writeNumberField("ts", p.bucket);
            g.writeEndObject();
        });
        e.key = p.counter.getBytes(StandardCharsets.UTF_8);
        e.source = OVERFLOW_SOURCE;
        e.deadLetter(
                OVERFLOW_REASON,
                "counter " + p.counter + ": adding " + p.sum + " (" + (p.events == 1 ? "1 event" : p.events + " events")
                        + " of the 5 s bucket at " + p.bucket + ") to its " + value
                        + " would go past the 64-bit range; not counted");
        output.collect(
                OVERFLOW, record.hasTimestamp() ? new StreamRecord<>(e, record.getTimestamp()) : new StreamRecord<>(e));
    }

    /**
     * The counters due by the watermark, in order of their due times, before the watermark goes on (and
     * before the legacy timers of a restored earlier version fire in {@code super.processWatermark}).
     */
    @Override
    public void processWatermark(Watermark mark) throws Exception {
        long watermark = mark.getTimestamp();
        DueIndex.Entry e;
        while ((e = due.pollDue(watermark)) != null) {
            setCurrentKey(e.id());
            dueNow(e.id(), e.at(), watermark);
        }
        super.processWatermark(mark);
    }

    /** A timer of the earlier version's (restored from its savepoint): whatever of its counter is due now. */
    @Override
    public void onEventTime(InternalTimer<String, VoidNamespace> timer) throws Exception {
        dueNow(timer.getKey(), timer.getTimestamp(), Math.max(timer.getTimestamp(), legacyTimers.currentWatermark()));
    }

    /**
     * Everything of the counter (the current key) due by the watermark, not only at {@code at}: when a
     * watermark passes several due times at once (a close and an end of lateness, several resolutions, the
     * end of input) one call does them all. An index entry older than the counter's next due time (it
     * became due earlier and was done then) changes nothing.
     */
    private void dueNow(String id, long at, long watermark) throws Exception {
        CachedCounter c = counter(id);
        CounterState s = c.state;
        if (s.nextTimer > watermark) return;
        stamp = at;
        for (int i = 0; i < s.size; i++) {
            if (!s.has(i, CounterState.CLOSED) && watermark >= s.end(i) - 1) {
                s.set(i, CounterState.CLOSED);
                s.clear(i, CounterState.REVISE);
                Resolution r = s.resolution(i);
                if (!c.policy.keeps(r)) continue; // restored, of a resolution the policies no longer keep: not written
                if (rollsUp(r)) output.collect(ROLLUPS, stamped(rollup(c, i)));
                if ((r == Resolution.M1 || r == Resolution.H1 || r == Resolution.D1) && c.policy.topk() > 0) {
                    output.collect(CLOSED_WINDOWS, stamped(new WindowSum(c.id, r.label, s.start[i], s.sum[i])));
                }
            }
        }
        flush(c);
        for (int i = s.size - 1; i >= 0; i--) {
            if (watermark >= s.end(i) + lateness) {
                if (s.has(i, CounterState.HAS_USERS)) dropSketch(c, uniquesName(c, s.resolution(i), s.start[i]));
                s.remove(i);
                c.weightStale = true;
            }
        }
        // Every window due by the watermark was closed or dropped above: the next due time is after it.
        long next = nextDue(s);
        if (next != Long.MAX_VALUE) due.add(next, c.id);
        s.nextTimer = next;
        stamp = NO_TIMESTAMP;
        changedNow(c);
    }

    /** The counter's next due time: a window's close (end - 1) or, once closed, its end of lateness; Long.MAX_VALUE without windows. */
    private long nextDue(CounterState s) {
        long next = Long.MAX_VALUE;
        for (int i = 0; i < s.size; i++) {
            next = Math.min(next, s.has(i, CounterState.CLOSED) ? s.end(i) + lateness : s.end(i) - 1);
        }
        return next;
    }

    /** After a restore: every counter of this subtask's key groups with a window, at its next due time. */
    private void rebuildDueIndex() throws Exception {
        this.<String>getKeyedStateBackend()
                .applyToAllKeys(VoidNamespace.INSTANCE, VoidNamespaceSerializer.INSTANCE, stateDescriptor, (id, st) -> {
                    CounterState s = st.value();
                    long next = s == null ? Long.MAX_VALUE : nextDue(s);
                    if (next != Long.MAX_VALUE) due.add(next, id);
                });
    }

    /** Only a per-counter flush timer restored from a savepoint of the earlier version: that flush, now. */
    @Override
    public void onProcessingTime(InternalTimer<String, VoidNamespace> timer) throws Exception {
        CachedCounter c = counter(timer.getKey());
        flush(c);
        changedNow(c);
    }

    /**
     * The partial's users: written to Redis at once ({@code PFADD} of {@code u:1h:<start>},
     * {@code u:1d:<start>} and {@code u:all}; the sink's buffer gathers them per key until its next flush,
     * which comes before every checkpoint barrier, so no user waits in this operator's state), and added to
     * the 1h and 1d sketches this operator keeps for the {@code uniques} of the rollups.
     */
    private void addUsers(CachedCounter c, PartialSum p) throws Exception {
        CounterState s = c.state;
        NamespacePolicy policy = c.policy;
        String base = keys.counterBase(c.id);
        long[] hashes = null;
        for (Resolution r : UNIQUE_RESOLUTIONS) {
            if (!policy.uniques(r)) continue;
            long start = r.windowStart(p.bucket);
            emit(RedisWrite.users(
                    base + RedisKeys.uniquesSuffix(r, start), p.users, start, policy.expireAtMillis(r, start)));
            // The sketch in state serves the rollups' uniques of the window: kept only where its window sum is.
            if (!policy.keeps(r)) continue;
            int i = s.find(r, start);
            s.set(i, CounterState.HAS_USERS);
            if (hashes == null) hashes = hashes(p.users);
            addHashes(c, uniquesName(c, r, start), hashes);
        }
        if (policy.uniquesAll()) emit(RedisWrite.users(base + RedisKeys.UNIQUES_ALL, p.users, RedisWrite.NO_WINDOW, 0));
    }

    /** Redis's HyperLogLog hash of each user. */
    private static long[] hashes(String[] users) {
        long[] out = new long[users.length];
        for (int i = 0; i < users.length; i++) out[i] = RedisHyperLogLog.hash(users[i]);
        return out;
    }

    /** The state name of a window's sketch, {@code <res>:<start ms>}; the 1h and 1d names are kept in the counter. */
    private static String uniquesName(CachedCounter c, Resolution r, long start) {
        int slot = r == Resolution.H1 ? 0 : r == Resolution.D1 ? 1 : -1;
        if (slot >= 0 && c.nameStarts[slot] == start) return c.names[slot];
        String name = r.label + ":" + start;
        if (slot >= 0) {
            c.nameStarts[slot] = start;
            c.names[slot] = name;
        }
        return name;
    }

    private void addHashes(CachedCounter c, String name, long[] hashes) throws Exception {
        RedisHyperLogLog hll = sketch(c, name);
        boolean changed = hll == null;
        if (hll == null) {
            hll = new RedisHyperLogLog();
            c.sketches.put(name, hll);
        }
        for (long h : hashes) changed |= hll.addHash(h);
        if (changed) {
            c.unstoredSketches.add(name);
            c.weightStale = true;
        }
    }

    // ------------------------------------------------------------------ the heap and keyed state

    /** The counter of the current key, from the cache or else from keyed state. */
    private CachedCounter counter(String id) throws Exception {
        CachedCounter c = cache.get(id);
        if (c != null) return c;
        CounterState s = state.value();
        c = new CachedCounter(id, s == null ? new CounterState() : s, s == null);
        c.policy = policies.forCounter(id);
        cache.put(c);
        return c;
    }

    /** A sketch of the counter (the current key), read from keyed state on first use; null if it has none. */
    private RedisHyperLogLog sketch(CachedCounter c, String name) throws Exception {
        RedisHyperLogLog h = c.sketches.get(name);
        if (h != null || c.fresh || c.sketches.containsKey(name)) return h;
        byte[] bytes = uniques.get(name);
        h = bytes == null ? null : RedisHyperLogLog.fromRedisBytes(bytes);
        c.sketches.put(name, h);
        c.weightStale = true;
        return h;
    }

    private void dropSketch(CachedCounter c, String name) throws Exception {
        c.sketches.remove(name);
        c.unstoredSketches.remove(name);
        c.weightStale = true;
        uniques.remove(name);
    }

    /** After a change of {@code c} (the current key): due for the next flush and for the next snapshot. */
    private void changedNow(CachedCounter c) throws Exception {
        c.unstored = true;
        if (!c.flushPending) {
            c.flushPending = true;
            changed.add(c);
        }
        if (c.weightStale) {
            cache.reweigh(c);
            c.weightStale = false;
        }
        CachedCounter evicted = cache.pollEldestOverBudget(c);
        if (evicted == null) return;
        do {
            setCurrentKey(evicted.id);
            if (evicted.flushPending) flush(evicted);
            store(evicted);
        } while ((evicted = cache.pollEldestOverBudget(c)) != null);
        setCurrentKey(c.id);
    }

    /** Writes the counter (the current key) to keyed state if it changed since it was last stored. */
    private void store(CachedCounter c) throws Exception {
        if (!c.unstored) return;
        // RocksDB serialises the value here; a heap backend keeps the object, which the cache goes on changing
        state.update(heapBackend ? c.state.copy() : c.state);
        for (String name : c.unstoredSketches) {
            RedisHyperLogLog h = c.sketches.get(name);
            if (h != null) uniques.put(name, h.toRedisBytes());
        }
        c.unstoredSketches.clear();
        c.unstored = false;
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        rebuildPending.update(
                rebuildQueue != null || rollupsRunning || resumeRebuild
                        ? java.util.List.of(true)
                        : java.util.List.of());
        for (CachedCounter c : cache.all()) {
            if (c.unstored) {
                setCurrentKey(c.id);
                store(c);
            }
        }
    }

    // ------------------------------------------------------------------ Redis and rollups

    private void scheduleFlush() {
        long now = getProcessingTimeService().getCurrentProcessingTime();
        getProcessingTimeService().registerTimer((now / flushIntervalMillis + 1) * flushIntervalMillis, t -> {
            flushChanged();
            boolean lost = lossWatch != null && lossWatch.check();
            if (lost || resumeRebuild) {
                if (resumeRebuild && !lost)
                    LOG.warn(
                            "a rebuild after a loss of Redis's data was under way at the checkpoint this job restored: starting it over");
                resumeRebuild = false;
                startRebuild();
            }
            scheduleFlush();
        });
    }

    /**
     * Writes every counter changed since the last flush (once each, however often it changed). It stays on
     * the heap; keyed state gets it when it is evicted or at the next snapshot.
     */
    private void flushChanged() throws Exception {
        for (CachedCounter c : changed) {
            if (!c.flushPending) continue; // evicted in between, and flushed then
            setCurrentKey(c.id);
            flush(c);
        }
        changed.clear();
    }

    @Override
    public void finish() throws Exception {
        flushChanged();
        if ((lossWatch != null && lossWatch.lossSeen()) || resumeRebuild) {
            resumeRebuild = false;
            startRebuild();
        }
        // a bounded run that ends during a rebuild finishes it: the last writes go out before the sink's last flush
        while (rebuildQueue != null) rebuildStep();
        if (rollupsThread != null) {
            rollupsThread.shutdown();
            rollupsThread.awaitTermination(10, java.util.concurrent.TimeUnit.MINUTES);
        }
        super.finish();
    }

    @Override
    public void close() throws Exception {
        if (lossWatch != null) lossWatch.close();
        if (rollupsThread != null) rollupsThread.shutdownNow();
        super.close();
    }

    // ------------------------------------------------------------------ rebuild after a loss of Redis's data

    /**
     * Redis lost its data: every counter of this subtask's key groups (in keyed state or only on the heap yet)
     * goes into the queue that {@link #rebuildStep} writes again, {@value #REBUILD_COUNTERS_PER_STEP} counters
     * every {@value #REBUILD_STEP_MILLIS} ms, between the records and flushes the task goes on with, so that
     * the live values keep their freshness. A loss during a rebuild starts it over.
     */
    private void startRebuild() throws Exception {
        boolean running = rebuildQueue != null;
        ArrayList<String> ids = new ArrayList<>();
        java.util.HashSet<String> seen = new java.util.HashSet<>();
        try (java.util.stream.Stream<String> s =
                this.<String>getKeyedStateBackend().getKeys("counter", VoidNamespace.INSTANCE)) {
            s.forEach(id -> {
                if (seen.add(id)) ids.add(id);
            });
        }
        for (CachedCounter c : cache.all()) {
            if (seen.add(c.id)) ids.add(c.id);
        }
        rebuildQueue = ids;
        rebuildNext = 0;
        rebuildStartNanos = System.nanoTime();
        rebuildKeys = 0;
        rebuildsMetric.inc();
        LOG.warn("Redis lost its data: writing the {} counters of this subtask again from the job's state", ids.size());
        if (!running)
            getProcessingTimeService()
                    .registerTimer(getProcessingTimeService().getCurrentProcessingTime(), t -> rebuildStep());
        if (rollupsRebuild != null && getRuntimeContext().getTaskInfo().getIndexOfThisSubtask() == 0) {
            if (rollupsThread == null) {
                rollupsThread = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
                    Thread t = new Thread(r, "rollups-rebuild");
                    t.setDaemon(true);
                    return t;
                });
            }
            rebuildsMetric.inc();
            RollupsRebuild rollups = rollupsRebuild;
            rollupsRunning = true;
            rollupsThread.submit(() -> {
                long t0 = System.nanoTime();
                try {
                    RollupsRebuild.Result r = rollups.run(Long.MIN_VALUE, Long.MAX_VALUE);
                    rebuildFinished(r.written(), System.nanoTime() - t0);
                } catch (RuntimeException e) {
                    LOG.error(
                            "rebuilding closed windows from counter-rollups failed; run ./rollcount rebuild-redis", e);
                    rebuildFinished(0, System.nanoTime() - t0);
                } finally {
                    rollupsRunning = false;
                }
            });
        }
    }

    /** Counts a rebuild finished in the metrics (from the task's thread or the rollups' thread). */
    private void rebuildFinished(long keysWritten, long nanos) {
        rebuildKeysMetric.inc(keysWritten);
        rebuildLongestMillis.accumulateAndGet(nanos / 1_000_000, Math::max);
        rebuildsFinishedMetric.inc();
    }

    /** Writes the next counters of the rebuild queue again; schedules the next step, or ends the rebuild. */
    private void rebuildStep() throws Exception {
        if (rebuildQueue == null) return;
        int end = Math.min(rebuildQueue.size(), rebuildNext + REBUILD_COUNTERS_PER_STEP);
        for (; rebuildNext < end; rebuildNext++) {
            String id = rebuildQueue.get(rebuildNext);
            setCurrentKey(id);
            rebuildKeys += rewrite(id);
        }
        if (rebuildNext < rebuildQueue.size()) {
            getProcessingTimeService()
                    .registerTimer(
                            getProcessingTimeService().getCurrentProcessingTime() + REBUILD_STEP_MILLIS,
                            t -> rebuildStep());
            return;
        }
        long nanos = System.nanoTime() - rebuildStartNanos;
        LOG.info(
                "wrote {} counters ({} keys) again after Redis lost its data, in {} ms",
                rebuildQueue.size(),
                rebuildKeys,
                nanos / 1_000_000);
        rebuildFinished(rebuildKeys, nanos);
        rebuildQueue = null;
    }

    /**
     * Everything Redis shows of the counter (the current key) as this operator holds it: the total, every
     * window it keeps (open, and closed within the allowed lateness) and the sketches of its 1h and 1d windows.
     * Read from the heap if the counter is there, else from keyed state (without caching it). Returns the keys.
     */
    private int rewrite(String id) throws Exception {
        CachedCounter c = cache.get(id);
        CounterState s = c != null ? c.state : state.value();
        if (s == null) return 0;
        String base = keys.counterBase(id);
        emit(count(base, RedisKeys.TOTAL, s.total, s.totalEvents, s.negative, RedisWrite.NO_WINDOW, 0));
        int n = 1;
        for (int i = 0; i < s.size; i++) {
            Resolution r = s.resolution(i);
            long start = s.start[i];
            emit(count(
                    base,
                    RedisKeys.windowSuffix(r, start),
                    s.sum[i],
                    s.events[i],
                    s.has(i, CounterState.NEGATIVE),
                    start,
                    r.expireAtMillis(start)));
            n++;
            if ((r == Resolution.H1 || r == Resolution.D1) && s.has(i, CounterState.HAS_USERS)) {
                String name = r.label + ":" + start;
                RedisHyperLogLog h = c != null ? c.sketches.get(name) : null;
                byte[] bytes = h != null ? h.toRedisBytes() : uniques.get(name);
                if (bytes != null) {
                    emit(RedisWrite.sketch(
                            base + RedisKeys.uniquesSuffix(r, start), bytes, start, r.expireAtMillis(start)));
                    n++;
                }
            }
        }
        return n;
    }

    /** Revisions due and every changed value of the counter (the current key) to Redis. */
    private void flush(CachedCounter c) throws Exception {
        c.flushPending = false;
        c.unstored = true; // flags change
        reviseChangedWindows(c);
        writeDirty(c);
    }

    private void reviseChangedWindows(CachedCounter c) throws Exception {
        CounterState s = c.state;
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.REVISE)) {
                s.revision[i]++;
                s.clear(i, CounterState.REVISE);
                output.collect(ROLLUPS, stamped(rollup(c, i)));
            }
        }
    }

    private void writeDirty(CachedCounter c) {
        CounterState s = c.state;
        String base = keys.counterBase(c.id); // every key of the counter is this and a suffix
        if (s.totalDirty) {
            emit(count(base, RedisKeys.TOTAL, s.total, s.totalEvents, s.negative, RedisWrite.NO_WINDOW, 0));
            s.totalDirty = false;
        }
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.DIRTY)) {
                Resolution r = s.resolution(i);
                if (!c.policy.keeps(r)) continue; // restored, of a resolution the policies no longer keep: not written
                long start = s.start[i];
                emit(count(
                        base,
                        RedisKeys.windowSuffix(r, start),
                        s.sum[i],
                        s.events[i],
                        s.has(i, CounterState.NEGATIVE),
                        start,
                        c.policy.expireAtMillis(r, start)));
                s.clear(i, CounterState.DIRTY);
            }
        }
    }

    /**
     * Monotone while only positive deltas went in, versioned once one did not. The version key is named
     * either way: a guarded monotone write creates none but respects one that a versioned write left (a
     * replay of the counter's state from before its negative delta must not overwrite the newer value).
     */
    private static RedisWrite count(
            String base, String suffix, long value, long events, boolean negative, long windowStart, long expireAt) {
        return RedisWrite.count(
                base + suffix, RedisKeys.versionKey(base, suffix), value, events, !negative, windowStart, expireAt);
    }

    private Rollup rollup(CachedCounter c, int i) throws Exception {
        CounterState s = c.state;
        Long uniqueUsers = null;
        if (s.has(i, CounterState.HAS_USERS)) {
            RedisHyperLogLog sketch = sketch(c, uniquesName(c, s.resolution(i), s.start[i]));
            uniqueUsers = sketch == null ? null : sketch.count();
        }
        return new Rollup(
                c.id, s.resolution(i).label, s.start[i], s.end(i), s.sum[i], s.events[i], uniqueUsers, s.revision[i]);
    }

    private void emit(RedisWrite w) {
        output.collect(stamped(w));
    }

    private <T> StreamRecord<T> stamped(T value) {
        return stamp == NO_TIMESTAMP ? new StreamRecord<>(value) : new StreamRecord<>(value, stamp);
    }
}
