package io.rollcount.job.ops;

import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.model.WindowSum;
import io.rollcount.job.ops.CounterStore.CachedCounter;
import io.rollcount.job.policy.NamespacePolicy;
import io.rollcount.job.policy.Policies;
import io.rollcount.sketches.RedisHyperLogLog;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.state.MapStateDescriptor;
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
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.OutputTag;

/**
 * The exact counts of one counter, keyed by counter id: all five resolutions and the all-time total in
 * one {@link CounterState}, and the unique-users sketches of its open 1h and 1d windows in Redis's own
 * HyperLogLog format, for the {@code uniques} of the rollups. This operator owns the windows, when they
 * are due and what is emitted; where the counters live is {@link CounterStore}'s (keyed state, and the
 * counters in use on the heap between checkpoints, within a budget per subtask: {@code --counter-cache},
 * by default a quarter of the TaskManager's heap per slot, see {@link #autoCacheBytes}), and the rebuild after a loss of Redis's data is {@link CounterRebuild}'s. When each counter is
 * next due (a window whose close shows closes: a rollup, a window top-K entry; else the end of its windows'
 * lateness) is a heap index per subtask ({@link DueIndex}), not a keyed timer per counter; it is rebuilt
 * from keyed state on restore, so it needs no state of its own and follows the key groups on a rescale.
 * A counter is read from RocksDB for a close that shows and once for the windows that become final before
 * the next such close, together (see {@link #nextDue}), not once per window close and end of lateness.
 * The due work of one watermark is done in slices (see {@link #processWatermark}).
 *
 * <p><b>Outputs</b>, on the main stream, {@link CounterUpdate}s, neutral about where they go (the Redis
 * commands are made from them beside the sink, by {@code CounterUpdateWrites}), each with the absolute
 * expiry of its window (its end plus the resolution's retention; none for the total and the all-time
 * uniques) and the number of events in its value, so that a value written later never loses to one of
 * fewer events. The users of each partial sum go out at once as USERS updates of its 1h, 1d and all-time
 * uniques. Counts are emitted:
 * <ul>
 *   <li>the total and every changed open window, at most once per flush interval (processing time,
 *       default 1 s: one callback per subtask for every changed counter, not a timer per counter);</li>
 *   <li>a window again when the watermark passes its end (closed: revision 0 goes to {@link #ROLLUPS} if
 *       its resolution is one of the rollups', {@code --rollups.resolutions}), with whatever changed
 *       since the last flush; past its end plus the allowed lateness it is final and its state is dropped.</li>
 * </ul>
 * A late event within the allowed lateness that changes a closed window makes a new revision, emitted at
 * the next flush. The lateness rule itself is applied upstream ({@link PreAggregate}), against a
 * watermark never behind this operator's, so a partial sum always finds its windows here. After a
 * restore, a counter whose last changes were not yet written is written at the first flush (the restore
 * finds it while it rebuilds the due index).
 *
 * <p><b>Flags.</b> What is still to emit is in the counter's {@link CounterState}, checkpointed with it:
 * {@code totalDirty}, and per window slot {@link CounterState#DIRTY} (changed since emitted),
 * {@link CounterState#CLOSED}, {@link CounterState#REVISE} (a revision is due) and {@link CounterState#NEGATIVE},
 * {@link CounterState#HAS_USERS}. What is still to write back to keyed state is {@link CounterStore}'s alone.
 * {@link CachedCounter#flushPending} says the counter is in the list of the next flush.
 */
public final class CountPerCounter extends AbstractStreamOperator<CounterUpdate>
        implements OneInputStreamOperator<PartialSum, CounterUpdate>, Triggerable<String, VoidNamespace> {
    private static final long serialVersionUID = 1L;

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
    /** Heap for counters between snapshots, per subtask, where a size is given rather than {@link #AUTO_CACHE_BYTES}. */
    public static final long DEFAULT_CACHE_BYTES = 32L << 20;
    /**
     * A cache size that says: a quarter of the TaskManager's heap per slot, within {@link #MIN_AUTO_CACHE_BYTES}
     * and {@link #MAX_AUTO_CACHE_BYTES} ({@link #autoCacheBytes}), decided in {@link #open} where the heap and the
     * slots are known.
     */
    public static final long AUTO_CACHE_BYTES = -1;

    static final long MIN_AUTO_CACHE_BYTES = 16L << 20;
    static final long MAX_AUTO_CACHE_BYTES = 128L << 20;

    private static final Resolution[] UNIQUE_RESOLUTIONS = {Resolution.H1, Resolution.D1};
    private static final long NO_TIMESTAMP = Long.MIN_VALUE;
    /** The longest a slice of due counters runs by default before records and barriers get their turn. */
    public static final long DEFAULT_SLICE_MILLIS = 20;
    /** How many due counters between two looks at the clock. */
    private static final int SLICE_CHECK = 64;

    private final long lateness;
    private final long flushIntervalMillis;
    private final long cacheBytes;
    /** The resolutions whose closed windows and revisions go to {@link #ROLLUPS}: a bit per {@link Resolution#ordinal()}. */
    private final int rollupMask;
    /** What each namespace keeps (--policies): resolutions, retention, uniques. */
    private final Policies policies;

    /** The longest a slice of due counters runs (see {@link #processWatermark}); Long.MAX_VALUE: no slices. */
    private long sliceMillis = DEFAULT_SLICE_MILLIS;

    /** Watches Redis for a loss of its data (see {@link #rebuildingAfterLoss}); null: no rebuild. */
    private LossWatch lossWatch;
    /** Subtask 0 rebuilds the closed windows from counter-rollups after a loss; null: no such rebuild. */
    private ClosedWindowsRebuild rollupsRebuild;

    private transient CounterStore store;
    private transient CounterRebuild rebuild;
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
    /** The last watermark received; ahead of the one forwarded while due counters are drained in slices. */
    private transient long target;
    /** The watermark held back until the due counters are drained (see {@link #processWatermark}); null: none. */
    private transient Watermark heldMark;
    /** The last watermark status received while a watermark is held; null: none. */
    private transient WatermarkStatus heldStatus;
    /** A slice of the due counters is scheduled on the mailbox. */
    private transient boolean sliceScheduled;
    /** After a restore: counters with changes not yet emitted at the snapshot, for the first flush. */
    private transient ArrayList<String> dirtyAtRestore;
    /** Counters changed since the last flush, in the order of their first change. */
    private transient ArrayList<CachedCounter> changed;
    /** The slot of each resolution's window for the partial sum at hand (scratch). */
    private transient int[] slots;

    private transient LongCounter overflowCount;
    /** The timestamp of records emitted now: the event-time timer's, else none. */
    private transient long stamp;
    /** What {@link CounterStore#changed} does with a counter about to leave the heap: its pending flush. */
    private transient CounterStore.Eviction flushBeforeEviction;

    /** Rollups of every resolution. */
    public CountPerCounter(long allowedLatenessMillis, long flushIntervalMillis) {
        this(allowedLatenessMillis, flushIntervalMillis, DEFAULT_CACHE_BYTES, ALL_RESOLUTIONS);
    }

    /** Rollups of every resolution. */
    public CountPerCounter(long allowedLatenessMillis, long flushIntervalMillis, long cacheBytes) {
        this(allowedLatenessMillis, flushIntervalMillis, cacheBytes, ALL_RESOLUTIONS);
    }

    /**
     * @param rollupMask the resolutions whose closed windows go to {@link #ROLLUPS}, a bit per
     *     {@link Resolution#ordinal()} ({@code JobOptions#rollupResolutionMask}); the others are neither built nor revised
     */
    public CountPerCounter(long allowedLatenessMillis, long flushIntervalMillis, long cacheBytes, int rollupMask) {
        this(allowedLatenessMillis, flushIntervalMillis, cacheBytes, rollupMask, Policies.none(100, 1));
    }

    /**
     * @param policies what each namespace keeps: only the resolutions of its policy are counted, emitted
     *     (expiring after its retention) and rolled up; only its uniques are emitted and sketched. A window
     *     restored from a savepoint of a resolution the policies no longer keep is no longer emitted.
     */
    public CountPerCounter(
            long allowedLatenessMillis, long flushIntervalMillis, long cacheBytes, int rollupMask, Policies policies) {
        if (flushIntervalMillis <= 0)
            throw new IllegalArgumentException("flush interval must be > 0 ms, got " + flushIntervalMillis);
        if (cacheBytes <= 0 && cacheBytes != AUTO_CACHE_BYTES)
            throw new IllegalArgumentException(
                    "counter cache must be > 0 bytes or AUTO_CACHE_BYTES, got " + cacheBytes);
        if ((rollupMask & ~ALL_RESOLUTIONS) != 0)
            throw new IllegalArgumentException("rollup resolutions: unknown bits in " + rollupMask);
        this.lateness = allowedLatenessMillis;
        this.flushIntervalMillis = flushIntervalMillis;
        this.cacheBytes = cacheBytes;
        this.rollupMask = rollupMask;
        this.policies = policies;
    }

    /**
     * After a loss of Redis's data ({@code watch}): emits every counter this subtask holds again (its total,
     * every window it keeps, the 1h and 1d unique-users sketches it keeps), and with {@code rollups}, from
     * subtask 0, writes the closed windows of {@code counter-rollups} again. Returns this operator.
     */
    public CountPerCounter rebuildingAfterLoss(LossWatch watch, ClosedWindowsRebuild rollups) {
        this.lossWatch = watch;
        this.rollupsRebuild = rollups;
        return this;
    }

    /**
     * The longest one slice of due counters runs before records and checkpoint barriers get their turn
     * (see {@link #processWatermark}); {@code Long.MAX_VALUE}: all at once, as an operator test that does not
     * move processing time needs. Returns this operator.
     */
    public CountPerCounter slicingDueWork(long millis) {
        if (millis < 0) throw new IllegalArgumentException("due-work slice must be >= 0 ms, got " + millis);
        this.sliceMillis = millis;
        return this;
    }

    /**
     * The counter cache of {@link #AUTO_CACHE_BYTES}: a quarter of the heap per slot of the TaskManager
     * ({@code maxHeap}: the JVM's {@code -Xmx}, task and framework heap), at least
     * {@value #MIN_AUTO_CACHE_BYTES} and at most {@value #MAX_AUTO_CACHE_BYTES} bytes. Every counter a counting
     * subtask keeps on the heap saves a RocksDB read and a write each time it would otherwise come back from
     * RocksDB (bench job, zipf over 1,000,000 counters: 128 MB instead of 32 MB per subtask took the counting
     * thread from 5.3 to 2.9 us per event); the rest of the slot's heap is left to the other operators.
     */
    static long autoCacheBytes(long maxHeap, int slots) {
        long perSlot = maxHeap == Long.MAX_VALUE ? MAX_AUTO_CACHE_BYTES : maxHeap / Math.max(1, slots) / 4;
        return Math.max(MIN_AUTO_CACHE_BYTES, Math.min(MAX_AUTO_CACHE_BYTES, perSlot));
    }

    /** The TaskManager's slots ({@code taskmanager.numberOfTaskSlots}), 1 where the task cannot tell. */
    private int slots() {
        try {
            return getContainingTask()
                    .getEnvironment()
                    .getTaskManagerInfo()
                    .getConfiguration()
                    .get(org.apache.flink.configuration.TaskManagerOptions.NUM_TASK_SLOTS);
        } catch (RuntimeException e) {
            return 1;
        }
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
        rebuild = new CounterRebuild(context.getOperatorStateStore(), lossWatch, rollupsRebuild);
    }

    @Override
    public void open() throws Exception {
        super.open();
        ValueStateDescriptor<CounterState> stateDescriptor =
                new ValueStateDescriptor<>("counter", TypeInformation.of(CounterState.class));
        long budget = cacheBytes == AUTO_CACHE_BYTES
                ? autoCacheBytes(Runtime.getRuntime().maxMemory(), slots())
                : cacheBytes;
        LOG.info(
                "count-per-counter {}: {} MiB of heap for the counters in use{}",
                getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
                budget >> 20,
                cacheBytes == AUTO_CACHE_BYTES ? " (--counter-cache auto)" : "");
        store = new CounterStore(
                budget,
                stateDescriptor,
                getPartitionedState(stateDescriptor),
                getPartitionedState(new MapStateDescriptor<>(
                        "uniques", Types.STRING, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO)),
                getKeyedStateBackend(),
                this);
        legacyTimers = getInternalTimerService("user-timers", VoidNamespaceSerializer.INSTANCE, this);
        due = new DueIndex(getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks());
        target = Long.MIN_VALUE;
        dirtyAtRestore = new ArrayList<>();
        if (restored) rebuildDueIndex();
        changed = new ArrayList<>();
        stamp = NO_TIMESTAMP;
        slots = new int[Resolution.all().length];
        flushBeforeEviction = c -> {
            if (c.flushPending) flush(c);
        };
        overflowCount = getRuntimeContext().getLongCounter(RouteEvents.DLQ_PREFIX + OVERFLOW_REASON);
        RollcountMetrics.deadLetters(getMetricGroup(), OVERFLOW_REASON, overflowCount);
        int subtask = getRuntimeContext().getTaskInfo().getIndexOfThisSubtask();
        rebuild.open(
                "count-per-counter-" + subtask,
                restored,
                subtask,
                getMetricGroup(),
                getProcessingTimeService(),
                this,
                store,
                this::rewrite,
                getRuntimeContext());
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
            overflowed(p, overflows, record);
            return;
        }
        boolean added = false;
        for (int k = 0; k < all.length; k++) {
            Resolution r = all[k];
            if (!policy.keeps(r)) continue;
            int i = idx[k];
            if (i < 0) {
                i = s.add(r, r.windowStart(p.bucket));
                store.slotsChanged(c);
                added = true;
            }
            s.sum[i] += p.sum;
            s.events[i] += p.events;
            s.set(i, CounterState.DIRTY);
            if (p.negative) s.set(i, CounterState.NEGATIVE);
            if (s.has(i, CounterState.CLOSED) && rollsUp(r)) s.set(i, CounterState.REVISE);
        }
        if (added) {
            // a new window: the final ones go now, and the counter's next due time may be earlier (one index
            // entry per counter, at its earliest due time; see dueNow)
            dropFinal(c, target);
            long next = nextDue(s, policy);
            if (next < s.nextTimer) {
                due.add(next, c.id);
                s.nextTimer = next;
            }
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
                return s.resolution(i).label + " window " + s.resolution(i).windowName(s.start[i]) + " (sum " + s.sum[i]
                        + ")";
            }
        }
        return null;
    }

    /** An {@code overflow} dead letter for a partial sum that is not counted, naming the counter. */
    private void overflowed(PartialSum p, String value, StreamRecord<PartialSum> record) {
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
     *
     * <p>A watermark that crosses a 1h or 1d boundary makes every counter with a window there due at once,
     * millions at the scale this job is built for, each a RocksDB read. That work is done in slices of at
     * most {@link #slicingDueWork} ms (default {@value #DEFAULT_SLICE_MILLIS}) on the task's mailbox thread,
     * so that records and checkpoint barriers pass between them, and the watermark is held back until the
     * last slice: downstream sees it only after
     * every window it closes went out, as before. A later watermark while slices are pending only moves the
     * target. The end of input ({@code Long.MAX_VALUE}) and {@link #finish} drain at once.
     */
    @Override
    public void processWatermark(Watermark mark) throws Exception {
        target = mark.getTimestamp();
        heldMark = mark;
        if (mark.getTimestamp() == Long.MAX_VALUE) {
            drainDue(Long.MAX_VALUE);
            releaseHeld();
        } else if (!sliceScheduled) {
            drainSlice();
        }
    }

    /** Held back while slices are pending, then forwarded after the watermark (see {@link #processWatermark}). */
    @Override
    public void processWatermarkStatus(WatermarkStatus status) throws Exception {
        if (heldMark == null) super.processWatermarkStatus(status);
        else heldStatus = status;
    }

    /** One slice of the due counters; the next is scheduled if some remain, else the held watermark goes on. */
    private void drainSlice() throws Exception {
        sliceScheduled = false;
        if (heldMark == null) return;
        if (drainDue(sliceMillis)) {
            releaseHeld();
        } else {
            sliceScheduled = true;
            ProcessingTimeService time = getProcessingTimeService();
            time.registerTimer(time.getCurrentProcessingTime(), t -> drainSlice());
        }
    }

    /**
     * Does the counters due by {@link #target}, for at most {@code budgetMillis} (checked every
     * {@value #SLICE_CHECK} counters); returns whether none is left.
     */
    private boolean drainDue(long budgetMillis) throws Exception {
        long deadline = budgetMillis == Long.MAX_VALUE ? Long.MAX_VALUE : System.nanoTime() + budgetMillis * 1_000_000;
        int n = 0;
        DueIndex.Entry e;
        while ((e = due.pollDue(target)) != null) {
            setCurrentKey(e.id());
            dueNow(e.id(), e.at(), target);
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
        super.processWatermark(mark);
        if (status != null) super.processWatermarkStatus(status);
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
                if (topkOf(r, c.policy)) {
                    output.collect(CLOSED_WINDOWS, stamped(new WindowSum(c.id, r.label, s.start[i], s.sum[i])));
                }
            }
        }
        flush(c);
        dropFinal(c, watermark);
        // Every window due by the watermark was closed or dropped above: the next due time is after it.
        long next = nextDue(s, c.policy);
        if (next != Long.MAX_VALUE) due.add(next, c.id);
        s.nextTimer = next;
        stamp = NO_TIMESTAMP;
        // Flushed above: written back later, but not due for a flush. Listed for one (changedNow), it would stay
        // on the heap until the next flush even once evicted, and a drain of every counter at once (the end of
        // input, finish) would hold them all on the heap.
        store.changed(c, flushBeforeEviction);
    }

    /** Whether a closed window of {@code r} goes to the window top-K of the counter's namespace. */
    private static boolean topkOf(Resolution r, NamespacePolicy policy) {
        return (r == Resolution.M1 || r == Resolution.H1 || r == Resolution.D1) && policy.topk() > 0;
    }

    /**
     * Whether closing a window of {@code r} shows outside this operator (a rollup, a window top-K entry):
     * only then is its close a due time. Closing a 5 s or 5 m window by default changes nothing but a flag
     * (its value was written while it was open), so it waits for the counter's next visit.
     */
    private boolean closeShows(Resolution r, NamespacePolicy policy) {
        return policy.keeps(r) && (rollsUp(r) || topkOf(r, policy));
    }

    /**
     * Drops the windows of the counter past their end plus the allowed lateness ({@code watermark}: no partial
     * sum for them can come any more, upstream applies the lateness against a watermark never behind this
     * one), except one whose close shows and has not been done yet.
     */
    private void dropFinal(CachedCounter c, long watermark) throws Exception {
        CounterState s = c.state;
        for (int i = 0; i < s.size; i++) {
            // a change not yet emitted (a late event's, within the lateness) goes out before its window goes
            if (isFinal(s, i, watermark, c.policy) && (s.has(i, CounterState.DIRTY) || s.has(i, CounterState.REVISE))) {
                flush(c);
                break;
            }
        }
        for (int i = s.size - 1; i >= 0; i--) {
            if (isFinal(s, i, watermark, c.policy)) {
                if (s.has(i, CounterState.HAS_USERS)) store.dropSketch(c, uniquesName(c, s.resolution(i), s.start[i]));
                s.remove(i);
                store.slotsChanged(c);
            }
        }
    }

    /** Whether window {@code i} is past its end plus the lateness, and its close, if it shows, was done. */
    private boolean isFinal(CounterState s, int i, long watermark, NamespacePolicy policy) {
        return watermark >= s.end(i) + lateness
                && (s.has(i, CounterState.CLOSED) || !closeShows(s.resolution(i), policy));
    }

    /**
     * The counter's next due time: the earliest close that shows ({@link #closeShows}), or before it the
     * last end of lateness of the windows that become final before it, so that one visit drops them all
     * (a counter touched once is visited at its 1m close, once to drop its 5 s, 1m and 5m windows, and at
     * its 1h and 1d closes and ends of lateness, where a visit per close and end of lateness made about ten);
     * Long.MAX_VALUE without windows. A window final before that visit leaves at the counter's next new window
     * ({@link #processElement}) if that comes first.
     */
    private long nextDue(CounterState s, NamespacePolicy policy) {
        long close = Long.MAX_VALUE;
        for (int i = 0; i < s.size; i++) {
            if (!s.has(i, CounterState.CLOSED) && closeShows(s.resolution(i), policy)) {
                close = Math.min(close, s.end(i) - 1);
            }
        }
        long drop = Long.MIN_VALUE;
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.CLOSED) || !closeShows(s.resolution(i), policy)) {
                long at = s.end(i) + lateness;
                if (at <= close) drop = Math.max(drop, at);
            }
        }
        return drop != Long.MIN_VALUE ? drop : close;
    }

    /** After a restore: every counter of this subtask's key groups with a window, at its next due time. */
    private void rebuildDueIndex() throws Exception {
        store.forEachStored((id, s) -> {
            if (s == null) return;
            long next = nextDue(s, policies.forCounter(id));
            if (next != Long.MAX_VALUE) due.add(next, id);
            if (s.totalDirty || anyDirty(s)) dirtyAtRestore.add(id);
        });
    }

    private static boolean anyDirty(CounterState s) {
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.DIRTY) || s.has(i, CounterState.REVISE)) return true;
        }
        return false;
    }

    /** Only a per-counter flush timer restored from a savepoint of the earlier version: that flush, now. */
    @Override
    public void onProcessingTime(InternalTimer<String, VoidNamespace> timer) throws Exception {
        CachedCounter c = counter(timer.getKey());
        flush(c);
        changedNow(c);
    }

    /**
     * The partial's users: emitted at once (USERS of its 1h and 1d windows and of all time; the sink's buffer
     * gathers them per key until its next flush, which comes before every checkpoint barrier, so no user
     * waits in this operator's state), and added to the 1h and 1d sketches this operator keeps for the
     * {@code uniques} of the rollups.
     */
    private void addUsers(CachedCounter c, PartialSum p) throws Exception {
        CounterState s = c.state;
        NamespacePolicy policy = c.policy;
        long[] hashes = null;
        for (Resolution r : UNIQUE_RESOLUTIONS) {
            if (!policy.uniques(r)) continue;
            long start = r.windowStart(p.bucket);
            emit(CounterUpdate.windowUsers(c.id, r, start, p.users, policy.expireAtMillis(r, start)));
            // The sketch in state serves the rollups' uniques of the window: kept only where its window sum is.
            if (!policy.keeps(r)) continue;
            int i = s.find(r, start);
            s.set(i, CounterState.HAS_USERS);
            if (hashes == null) hashes = hashes(p.users);
            store.addHashes(c, uniquesName(c, r, start), hashes);
        }
        if (policy.uniquesAll()) emit(CounterUpdate.allTimeUsers(c.id, p.users));
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

    // ------------------------------------------------------------------ the store

    /** The counter of the current key, from the heap or else from keyed state, with its namespace's policy. */
    private CachedCounter counter(String id) throws Exception {
        CachedCounter c = store.get(id);
        if (c.policy == null) c.policy = policies.forCounter(id);
        return c;
    }

    /** After a change of {@code c} (the current key): due for the next flush, and for the store's next write-back. */
    private void changedNow(CachedCounter c) throws Exception {
        if (!c.flushPending) {
            c.flushPending = true;
            changed.add(c);
        }
        store.changed(c, flushBeforeEviction);
    }

    /** Counters listed for the next flush (tests: the due work lists none, so evicted counters leave the heap). */
    int listedForFlush() {
        return changed.size();
    }

    /** Counters in the store's heap cache (tests). */
    int cached() {
        return store.size();
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        rebuild.snapshotState(context.getCheckpointId());
        store.writeBackAll();
    }

    // ------------------------------------------------------------------ emission

    private void scheduleFlush() {
        long now = getProcessingTimeService().getCurrentProcessingTime();
        getProcessingTimeService().registerTimer((now / flushIntervalMillis + 1) * flushIntervalMillis, t -> {
            flushChanged();
            rebuild.check();
            scheduleFlush();
        });
    }

    /**
     * Emits every counter changed since the last flush (once each, however often it changed). It stays on
     * the heap; keyed state gets it when it is evicted or at the next snapshot.
     */
    private void flushChanged() throws Exception {
        if (!dirtyAtRestore.isEmpty()) {
            for (String id : dirtyAtRestore) {
                setCurrentKey(id);
                changedNow(counter(id));
            }
            dirtyAtRestore = new ArrayList<>();
        }
        for (CachedCounter c : changed) {
            if (!c.flushPending) continue; // evicted in between, and flushed then
            setCurrentKey(c.id);
            flush(c);
        }
        changed.clear();
    }

    @Override
    public void finish() throws Exception {
        if (heldMark != null) {
            drainDue(Long.MAX_VALUE);
            releaseHeld();
        }
        flushChanged();
        // a bounded run that ends during a rebuild finishes it from the state: the last writes go out before the
        // sink's last flush; the rebuild from counter-rollups ends in close, after the final checkpoint
        rebuild.finish();
        super.finish();
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) throws Exception {
        super.notifyCheckpointComplete(checkpointId);
        rebuild.notifyCheckpointComplete(checkpointId);
    }

    @Override
    public void close() throws Exception {
        if (rebuild != null) rebuild.close();
        super.close();
    }

    /** Revisions due and every changed value of the counter (the current key). */
    private void flush(CachedCounter c) throws Exception {
        c.flushPending = false;
        store.touched(c); // its flags change
        reviseChangedWindows(c);
        emitDirty(c);
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

    private void emitDirty(CachedCounter c) {
        CounterState s = c.state;
        if (s.totalDirty) {
            emit(CounterUpdate.total(c.id, s.total, s.totalEvents, s.negative));
            s.totalDirty = false;
        }
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.DIRTY)) {
                Resolution r = s.resolution(i);
                if (!c.policy.keeps(r)) continue; // restored, of a resolution the policies no longer keep: not written
                long start = s.start[i];
                emit(CounterUpdate.window(
                        c.id,
                        r,
                        start,
                        s.sum[i],
                        s.events[i],
                        s.has(i, CounterState.NEGATIVE),
                        c.policy.expireAtMillis(r, start)));
                s.clear(i, CounterState.DIRTY);
            }
        }
    }

    /**
     * Everything Redis shows of the counter (the current key) as this operator holds it: the total, every
     * window it keeps (open, and closed within the allowed lateness) and the sketches of its 1h and 1d windows.
     * Read from the heap if the counter is there, else from keyed state (without caching it). Returns how many
     * updates it emitted (one key each).
     */
    private int rewrite(String id) throws Exception {
        CachedCounter c = store.cached(id);
        CounterState s = c != null ? c.state : store.peek(id);
        if (s == null) return 0;
        NamespacePolicy policy = c != null && c.policy != null ? c.policy : policies.forCounter(id);
        emit(CounterUpdate.total(id, s.total, s.totalEvents, s.negative));
        int n = 1;
        for (int i = 0; i < s.size; i++) {
            Resolution r = s.resolution(i);
            long start = s.start[i];
            emit(CounterUpdate.window(
                    id,
                    r,
                    start,
                    s.sum[i],
                    s.events[i],
                    s.has(i, CounterState.NEGATIVE),
                    policy.expireAtMillis(r, start)));
            n++;
            if ((r == Resolution.H1 || r == Resolution.D1) && s.has(i, CounterState.HAS_USERS)) {
                byte[] bytes = store.sketchBytes(c, r.label + ":" + start);
                if (bytes != null) {
                    emit(CounterUpdate.sketch(id, r, start, bytes, policy.expireAtMillis(r, start)));
                    n++;
                }
            }
        }
        return n;
    }

    private Rollup rollup(CachedCounter c, int i) throws Exception {
        CounterState s = c.state;
        Long uniqueUsers = null;
        if (s.has(i, CounterState.HAS_USERS)) {
            RedisHyperLogLog sketch = store.sketch(c, uniquesName(c, s.resolution(i), s.start[i]));
            uniqueUsers = sketch == null ? null : sketch.count();
        }
        return new Rollup(
                c.id, s.resolution(i).label, s.start[i], s.end(i), s.sum[i], s.events[i], uniqueUsers, s.revision[i]);
    }

    private void emit(CounterUpdate u) {
        output.collect(stamped(u));
    }

    private <T> StreamRecord<T> stamped(T value) {
        return stamp == NO_TIMESTAMP ? new StreamRecord<>(value) : new StreamRecord<>(value, stamp);
    }
}
