package io.rollcount.job.ops;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.model.WindowSum;
import io.rollcount.job.ops.CounterStore.CachedCounter;
import io.rollcount.job.policy.NamespacePolicy;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.util.TaskManagerSlots;
import java.util.ArrayList;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.OutputTag;

/**
 * The exact counts of one counter, keyed by counter id: all five resolutions and the all-time total in
 * one {@link CounterState}, and the unique-users sketches of its open 1h and 1d windows in Redis's own
 * HyperLogLog format, for the {@code uniques} of the rollups. This operator owns the windows and what is
 * emitted; when a window closes, is final and when a counter is next due are {@link WindowRules}; where the
 * counters live is {@link CounterStore}'s (keyed state, and the counters in use on the heap between
 * checkpoints, within a budget per subtask: {@code --counter-cache}, see {@link CountPerCounterSettings});
 * the rebuild after a loss of Redis's data is {@link CounterRebuild}'s. When each counter is next due is a
 * heap index per subtask ({@link DueIndex}), not a keyed timer per counter; it is rebuilt from keyed state on
 * restore, so it needs no state of its own and follows the key groups on a rescale. A counter is read from
 * RocksDB for a close that shows; windows final before it are dropped then, or where that close is more than
 * an hour away, at one visit for all of them ({@link WindowRules#nextDue}): not once per window close and end
 * of lateness. The due work of one watermark is done in slices (see {@link #processWatermark}).
 *
 * <p><b>Outputs</b>, on the main stream, {@link CounterUpdate}s, neutral about where they go (the Redis
 * commands are made from them beside the sink, by {@code CounterUpdateWrites}), each with the absolute
 * expiry of its window (its end plus the resolution's retention; none for the total and the all-time
 * uniques) and the number of events in its value, so that a value written later never loses to one of
 * fewer events. The users of each partial sum go out as USERS updates of its 1h, 1d and all-time uniques with
 * the counter's next flush, and before every checkpoint barrier ({@link CounterEmission}). Counts are emitted:
 * <ul>
 *   <li>the total and every changed open window, at most once per flush interval (processing time,
 *       default 1 s: one callback per subtask for every changed counter, not a timer per counter);</li>
 *   <li>a window again when the watermark passes its end (closed: revision 0 goes to {@link #ROLLUPS} if
 *       its resolution is one of the rollups', {@code --rollups.resolutions}), with whatever changed
 *       since the last flush; once final its state is dropped.</li>
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
        implements OneInputStreamOperator<PartialSum, CounterUpdate> {
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
     * A cache size that says: a quarter of the TaskManager's heap per slot, within bounds
     * ({@link CountPerCounterSettings#autoCacheBytes}), decided in {@link #open} where the heap and the slots are
     * known.
     */
    public static final long AUTO_CACHE_BYTES = -1;
    /** A mask with every resolution. */
    public static final int ALL_RESOLUTIONS = (1 << Resolution.all().length) - 1;
    /** The longest a slice of due counters runs by default before records and barriers get their turn. */
    public static final long DEFAULT_SLICE_MILLIS = 20;

    private final CountPerCounterSettings settings;
    private final WindowRules rules;
    /** What each namespace keeps (--policies): resolutions, retention, uniques. */
    private final Policies policies;

    /** Watches Redis for a loss of its data (see {@link #rebuildingAfterLoss}); null: no rebuild. */
    private LossWatch lossWatch;
    /** Subtask 0 rebuilds the closed windows from counter-rollups after a loss; null: no such rebuild. */
    private ClosedWindowsRebuild rollupsRebuild;

    private transient CounterStore store;
    private transient CounterRebuild rebuild;
    /** When each counter of this subtask is next due (see {@link DueIndex}): on the heap, rebuilt from keyed state on restore. */
    private transient DueIndex due;
    /** The keyed state was restored: {@link #open} rebuilds {@link #due} from it. */
    private transient boolean restored;
    /** The due counters of each watermark, in slices (see {@link #processWatermark}). */
    private transient DueWork dueWork;
    /** After a restore: counters with changes not yet emitted at the snapshot, for the first flush. */
    private transient ArrayList<String> dirtyAtRestore;
    /** Counters changed since the last flush, in the order of their first change. */
    private transient ArrayList<CachedCounter> changed;
    /** The slot of each resolution's window for the partial sum at hand (scratch). */
    private transient int[] slots;

    private transient LongCounter overflowCount;
    /** Counters visited by the due work ({@link RollcountMetrics#DUE_VISITS}). */
    private transient org.apache.flink.metrics.Counter dueVisits;
    /** What is emitted of a counter (see {@link CounterEmission}). */
    private transient CounterEmission emission;
    /** What {@link CounterStore#changed} does with a counter about to leave the heap: its pending flush. */
    private transient CounterStore.Eviction flushBeforeEviction;

    /** The operator of {@code settings}. */
    public CountPerCounter(CountPerCounterSettings settings) {
        this.settings = settings;
        this.rules = settings.windowRules();
        this.policies = settings.policies();
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

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        restored = context.isRestored();
        rebuild = new CounterRebuild(context.getOperatorStateStore(), lossWatch, rollupsRebuild);
    }

    @Override
    public void open() throws Exception {
        super.open();
        long budget = settings.cacheBudget(Runtime.getRuntime().maxMemory(), TaskManagerSlots.of(this));
        LOG.info(
                "count-per-counter {}: {} MiB of heap for the counters in use{}",
                getRuntimeContext().getTaskInfo().getIndexOfThisSubtask(),
                budget >> 20,
                settings.cacheBytes() == AUTO_CACHE_BYTES ? " (--counter-cache auto)" : "");
        store = CounterStore.open(
                budget,
                this::getPartitionedState,
                getKeyedStateBackend(),
                getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks(),
                this);
        store.countReads(RollcountMetrics.counter(getMetricGroup(), RollcountMetrics.COUNTER_STATE_READS));
        dueVisits = RollcountMetrics.counter(getMetricGroup(), RollcountMetrics.DUE_VISITS);
        new RestoredCounterTimers(this, this::dueNow, this::flushNow);
        due = new DueIndex(getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks());
        dueWork = new DueWork(
                due,
                settings.sliceMillis(),
                this,
                getProcessingTimeService(),
                this::dueNow,
                super::processWatermark,
                super::processWatermarkStatus);
        dirtyAtRestore = new ArrayList<>();
        if (restored) rebuildDueIndex();
        changed = new ArrayList<>();
        emission = new CounterEmission(output, store, policies, rules);
        slots = new int[Resolution.all().length];
        flushBeforeEviction = c -> {
            if (c.flushPending) flush(c);
        };
        overflowCount = getRuntimeContext().getLongCounter(JobAccumulators.DEAD_LETTERS_PREFIX + OVERFLOW_REASON);
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
                emission::everything,
                getRuntimeContext());
        scheduleFlush();
    }

    // ------------------------------------------------------------------ counting

    @Override
    public void processElement(StreamRecord<PartialSum> record) throws Exception {
        dueWork.record();
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
        String overflows = CounterOverflow.overflowing(s, p.sum, idx);
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
            if (rules.revisesAfterClose(s, i)) s.set(i, CounterState.REVISE);
        }
        if (added) {
            // a new window: the final ones go now, and the counter's next due time may be earlier (one index
            // entry per counter, at its earliest due time; see dueNow)
            dropFinal(c, dueWork.target());
            long next = rules.nextDue(s, policy);
            if (next < s.nextTimer) {
                due.add(next, c.id);
                s.nextTimer = next;
            }
        }
        if (p.users.length > 0 && policy.anyUniques()) emission.users(c, p);
        s.total += p.sum;
        s.totalEvents += p.events;
        s.negative |= p.negative;
        s.totalDirty = true;
        changedNow(c);
    }

    /** An {@code overflow} dead letter for a partial sum that is not counted, naming the counter. */
    private void overflowed(PartialSum p, String value, StreamRecord<PartialSum> record) {
        overflowCount.add(1);
        Event e = CounterOverflow.deadLetter(p, value);
        output.collect(
                OVERFLOW, record.hasTimestamp() ? new StreamRecord<>(e, record.getTimestamp()) : new StreamRecord<>(e));
    }

    /**
     * The counters due by the watermark, in order of their due times, before the watermark goes on (and before
     * the per-counter timers of an earlier version's savepoint fire in {@code super.processWatermark}), in slices
     * of at most {@link CountPerCounterSettings#sliceMillis} ms (see {@link DueWork}).
     */
    @Override
    public void processWatermark(Watermark mark) throws Exception {
        dueWork.watermark(mark);
    }

    /** Held back while slices are pending, then forwarded after the watermark (see {@link DueWork}). */
    @Override
    public void processWatermarkStatus(WatermarkStatus status) throws Exception {
        dueWork.status(status);
    }

    /**
     * Everything of the counter (the current key) due by the watermark, not only at {@code at}: when a
     * watermark passes several due times at once (a close and an end of lateness, several resolutions, the
     * end of input) one call does them all. An index entry older than the counter's next due time (it
     * became due earlier and was done then) changes nothing.
     */
    private void dueNow(String id, long at, long watermark) throws Exception {
        dueVisits.inc();
        CachedCounter c = counter(id);
        CounterState s = c.state;
        if (s.nextTimer > watermark) return;
        emission.stampAt(at);
        for (int i = 0; i < s.size; i++) {
            if (WindowRules.closesBy(s, i, watermark)) {
                s.set(i, CounterState.CLOSED);
                s.clear(i, CounterState.REVISE);
                emission.closed(c, i);
            }
        }
        flush(c);
        dropFinal(c, watermark);
        // Every window due by the watermark was closed or dropped above: the next due time is after it.
        long next = rules.nextDue(s, c.policy);
        if (next != Long.MAX_VALUE) due.add(next, c.id);
        s.nextTimer = next;
        emission.unstamped();
        // Flushed above: written back later, but not due for a flush. Listed for one (changedNow), it would stay
        // on the heap until the next flush even once evicted, and a drain of every counter at once (the end of
        // input, finish) would hold them all on the heap.
        store.changed(c, flushBeforeEviction);
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
            if (rules.finalWithUnemitted(s, i, watermark, c.policy)) {
                flush(c);
                break;
            }
        }
        for (int i = s.size - 1; i >= 0; i--) {
            if (rules.isFinal(s, i, watermark, c.policy)) {
                emission.dropSketch(c, i);
                s.remove(i);
                store.slotsChanged(c);
            }
        }
    }

    /** After a restore: every counter of this subtask's key groups with a window, at its next due time. */
    private void rebuildDueIndex() throws Exception {
        store.forEachStored((id, s) -> {
            if (s == null) return;
            long next = rules.nextDue(s, policies.forCounter(id));
            if (next != Long.MAX_VALUE) due.add(next, id);
            if (WindowRules.hasUnemitted(s)) dirtyAtRestore.add(id);
        });
    }

    /** The counter {@code id} (the current key) emitted now (a per-counter flush timer of an earlier version's). */
    private void flushNow(String id) throws Exception {
        CachedCounter c = counter(id);
        flush(c);
        changedNow(c);
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

    /** Keyed-state reads and due visits so far ({@link RollcountMetrics#COUNTER_STATE_READS}, {@link RollcountMetrics#DUE_VISITS}; tests). */
    long[] readsAndVisits() {
        return new long[] {store.reads(), dueVisits.getCount()};
    }

    /**
     * The users held for the next flushes go out before the barrier: the sketches in this snapshot count them as
     * sent, so a restore from it would never send them again. (The changed values wait: keyed state holds them.)
     */
    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        for (CachedCounter c : changed) {
            if (c.flushPending) emission.heldUsers(c);
        }
        super.prepareSnapshotPreBarrier(checkpointId);
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
        long interval = settings.flushIntervalMillis();
        getProcessingTimeService().registerTimer((now / interval + 1) * interval, t -> {
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
        dueWork.finish();
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

    /** Revisions due, every changed value of the counter (the current key) and the users held for its keys. */
    private void flush(CachedCounter c) throws Exception {
        c.flushPending = false;
        store.touched(c); // its flags change
        emission.revisions(c);
        emission.changes(c);
        emission.heldUsers(c);
    }
}
