package io.rollcount.job.ops;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.RollcountMetrics;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.streaming.api.operators.KeyContext;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;

/**
 * The rebuild after a loss of Redis's data, for one {@link CountPerCounter} subtask: when its {@link LossWatch}
 * sees the loss (or a job restores a checkpoint taken while a rebuild was under way), every counter of the
 * subtask's key groups ({@link CounterStore#ids}) is written again through the operator's {@link Rewriter},
 * {@value #COUNTERS_PER_STEP} counters every {@value #STEP_MILLIS} ms, between the records and flushes the task
 * goes on with, so that the live values keep their freshness; a loss during a rebuild starts it over. With a
 * {@link ClosedWindowsRebuild}, subtask 0 also writes the closed windows of {@code counter-rollups} again, on a
 * thread of its own: first what the topic holds committed when the rebuild starts, then, once a checkpoint
 * triggered after the loss was seen has completed (or, at the end of a bounded input, at {@link #close}, which
 * Flink calls after the final checkpoint), what was committed since up to the topic's end at that moment. So a
 * window that closed before the loss, and whose rollup was still in an open transaction when the rebuild
 * started, is written too. A bounded run waits in {@link #close} for that reading to end.
 *
 * <p>Metrics {@code redisRebuilds}, {@code redisRebuildsFinished}, {@code redisRebuildKeys} and the gauge
 * {@code redisRebuildLongestMs}; accumulators {@link JobAccumulators#REDIS_LOSSES} (losses seen, counted by subtask 0),
 * {@link JobAccumulators#REDIS_REBUILT_COUNTERS} (counters written again from the job's state) and {@link JobAccumulators#REDIS_REBUILT_ROLLUP_KEYS} (keys written
 * again from {@code counter-rollups}), for a run's summary.
 */
public final class CounterRebuild {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(CounterRebuild.class);

    /** Counters per step of a rebuild, and the pause between steps: about 10,000 counters a second. */
    static final int COUNTERS_PER_STEP = 1_000;

    static final long STEP_MILLIS = 100;

    /** Accumulator: counters written again from the job's state. */
    /** Accumulator: keys of closed windows and top-K lists written again from {@code counter-rollups}. */
    /** How long a bounded run waits at its end for the rebuild from {@code counter-rollups}. */
    static final long ROLLUPS_WAIT_MINUTES = 30;

    /** Writes everything Redis shows of the counter (the current key) again; returns how many keys. */
    interface Rewriter {
        int rewrite(String id) throws Exception;
    }

    private final LossWatch lossWatch;
    private final ClosedWindowsRebuild rollupsRebuild;
    /**
     * Whether a rebuild was under way at the last checkpoint, in union operator state: a job restored from that
     * checkpoint starts it over (the restored writers find {@code P:_mark}, which the rebuild wrote again, so
     * nothing else would tell it that some counters are still missing in Redis).
     */
    private final ListState<Boolean> pending;

    private boolean resume;

    private CounterStore store;
    private Rewriter rewriter;
    private KeyContext keyContext;
    private ProcessingTimeService time;
    private int subtask;
    private Counter rebuildsMetric;
    private Counter rebuildKeysMetric;
    /** Rebuilds finished (the rollups' thread counts its own too: thread-safe counters). */
    private Counter rebuildsFinishedMetric;
    /** The longest rebuild finished, ms (gauge {@code redisRebuildLongestMs}). */
    private java.util.concurrent.atomic.AtomicLong rebuildLongestMillis;

    /** The counters still to write again, or null; the next to write. */
    private List<String> queue;

    private int next;
    private long startNanos;
    private long keys;
    private ExecutorService rollupsThread;
    /** Whether the rebuild from counter-rollups of this subtask is under way (its thread sets it back). */
    private volatile boolean rollupsRunning;
    /** The latest checkpoint this subtask took. */
    private long lastCheckpoint;
    /**
     * Completed, for the rollups' thread to read on, once a checkpoint with an id of at least
     * {@link #readOnAfterCheckpoint} completes: one triggered after the loss was seen. Null: none waits.
     */
    private CompletableFuture<Void> readOn;

    private long readOnAfterCheckpoint;
    /** Whether the input ended ({@link #finish}): the next {@link #close} follows the final checkpoint. */
    private boolean ended;

    private LongCounter lossesSeen;
    private LongCounter countersWritten;
    private LongCounter rollupKeysWritten;
    /** Keys the rollups' thread wrote, not yet in {@link #rollupKeysWritten} (which the task's thread updates). */
    private final java.util.concurrent.atomic.AtomicLong rollupKeysPending =
            new java.util.concurrent.atomic.AtomicLong();

    /**
     * @param lossWatch null: no loss is noticed here (a restored pending rebuild still runs)
     * @param rollupsRebuild null: no rebuild from {@code counter-rollups}
     */
    CounterRebuild(OperatorStateStore operatorState, LossWatch lossWatch, ClosedWindowsRebuild rollupsRebuild)
            throws Exception {
        this.lossWatch = lossWatch;
        this.rollupsRebuild = rollupsRebuild;
        pending = operatorState.getUnionListState(new ListStateDescriptor<>("redis-rebuild-pending", Types.BOOLEAN));
        for (Boolean b : pending.get()) resume |= Boolean.TRUE.equals(b);
    }

    void open(
            String name,
            boolean restored,
            int subtask,
            MetricGroup metrics,
            ProcessingTimeService time,
            KeyContext keyContext,
            CounterStore store,
            Rewriter rewriter,
            RuntimeContext runtime) {
        this.subtask = subtask;
        lossesSeen = runtime.getLongCounter(JobAccumulators.REDIS_LOSSES);
        countersWritten = runtime.getLongCounter(JobAccumulators.REDIS_REBUILT_COUNTERS);
        rollupKeysWritten = runtime.getLongCounter(JobAccumulators.REDIS_REBUILT_ROLLUP_KEYS);
        this.time = time;
        this.keyContext = keyContext;
        this.store = store;
        this.rewriter = rewriter;
        rebuildsMetric = metrics.counter(
                RollcountMetrics.REDIS_REBUILDS, new org.apache.flink.metrics.ThreadSafeSimpleCounter());
        rebuildKeysMetric = metrics.counter(
                RollcountMetrics.REDIS_REBUILD_KEYS, new org.apache.flink.metrics.ThreadSafeSimpleCounter());
        rebuildsFinishedMetric = metrics.counter(
                RollcountMetrics.REDIS_REBUILDS_FINISHED, new org.apache.flink.metrics.ThreadSafeSimpleCounter());
        java.util.concurrent.atomic.AtomicLong longest = new java.util.concurrent.atomic.AtomicLong();
        rebuildLongestMillis = longest;
        metrics.gauge(RollcountMetrics.REDIS_REBUILD_LONGEST_MS, longest::get);
        if (lossWatch != null) lossWatch.open(name, restored);
    }

    /** After each flush: starts a rebuild if Redis lost its data since the last check, or one restored as pending. */
    void check() throws Exception {
        rollupKeysWritten.add(rollupKeysPending.getAndSet(0));
        boolean lost = lossWatch != null && lossWatch.check();
        if (lost || resume) {
            if (resume && !lost)
                LOG.warn(
                        "a rebuild after a loss of Redis's data was under way at the checkpoint this job restored: starting it over");
            resume = false;
            start();
        }
    }

    void snapshotState(long checkpointId) throws Exception {
        lastCheckpoint = checkpointId;
        pending.update(queue != null || rollupsRunning || resume ? List.of(true) : List.of());
    }

    /** A checkpoint completed: the rollups' thread reads on if it was triggered after the loss was seen. */
    void notifyCheckpointComplete(long checkpointId) {
        if (readOn != null && checkpointId >= readOnAfterCheckpoint) readOn.complete(null);
    }

    /**
     * At the end of input: a loss seen (or a pending rebuild) is rebuilt whole from the job's state, before the sink's
     * last flush; the rebuild from {@code counter-rollups} goes on, and {@link #close} waits for it.
     */
    void finish() throws Exception {
        if ((lossWatch != null && lossWatch.lossSeen()) || resume) {
            resume = false;
            start();
        }
        while (queue != null) step();
        ended = true;
    }

    /**
     * After the final checkpoint of a bounded input: the rebuild from {@code counter-rollups} reads on to the topic's
     * end and this waits for it. Otherwise (a cancel, a failure) it is stopped.
     */
    void close() throws InterruptedException {
        if (lossWatch != null) lossWatch.close();
        if (rollupsThread == null) return;
        if (ended) {
            if (readOn != null) readOn.complete(null);
            rollupsThread.shutdown();
            if (!rollupsThread.awaitTermination(ROLLUPS_WAIT_MINUTES, TimeUnit.MINUTES))
                LOG.error(
                        "the rebuild from counter-rollups did not end within {} minutes; run ./rollcount rebuild-redis",
                        ROLLUPS_WAIT_MINUTES);
            rollupKeysWritten.add(rollupKeysPending.getAndSet(0));
        }
        rollupsThread.shutdownNow();
    }

    /**
     * Redis lost its data: every counter of this subtask's key groups (in keyed state or only on the heap yet)
     * goes into the queue that {@link #step} writes again. A loss during a rebuild starts it over.
     */
    private void start() throws Exception {
        boolean running = queue != null;
        List<String> ids = store.ids();
        queue = ids;
        next = 0;
        startNanos = System.nanoTime();
        keys = 0;
        rebuildsMetric.inc();
        if (subtask == 0) lossesSeen.add(1);
        LOG.warn("Redis lost its data: writing the {} counters of this subtask again from the job's state", ids.size());
        if (!running) time.registerTimer(time.getCurrentProcessingTime(), t -> step());
        if (rollupsRebuild != null && subtask == 0) startRollups();
    }

    private void startRollups() {
        if (rollupsThread == null) {
            rollupsThread = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "rollups-rebuild");
                t.setDaemon(true);
                return t;
            });
        }
        rebuildsMetric.inc();
        ClosedWindowsRebuild rollups = rollupsRebuild;
        rollupsRunning = true;
        // a checkpoint triggered after now: the one after the next (the next may have been triggered before)
        CompletableFuture<Void> after = new CompletableFuture<>();
        if (readOn != null) readOn.complete(null);
        readOn = after;
        readOnAfterCheckpoint = lastCheckpoint + 2;
        rollupsThread.submit(() -> {
            long t0 = System.nanoTime();
            try {
                long written = rollups.rebuild(after);
                rollupKeysPending.addAndGet(written);
                finished(written, System.nanoTime() - t0);
            } catch (RuntimeException e) {
                LOG.error("rebuilding closed windows from counter-rollups failed; run ./rollcount rebuild-redis", e);
                finished(0, System.nanoTime() - t0);
            } finally {
                rollupsRunning = false;
            }
        });
    }

    /** Writes the next counters of the queue again; schedules the next step, or ends the rebuild. */
    private void step() throws Exception {
        if (queue == null) return;
        int end = Math.min(queue.size(), next + COUNTERS_PER_STEP);
        for (; next < end; next++) {
            String id = queue.get(next);
            keyContext.setCurrentKey(id);
            keys += rewriter.rewrite(id);
        }
        if (next < queue.size()) {
            time.registerTimer(time.getCurrentProcessingTime() + STEP_MILLIS, t -> step());
            return;
        }
        long nanos = System.nanoTime() - startNanos;
        LOG.info(
                "wrote {} counters ({} keys) again after Redis lost its data, in {} ms",
                queue.size(),
                keys,
                nanos / 1_000_000);
        finished(keys, nanos);
        countersWritten.add(queue.size());
        queue = null;
    }

    /** Counts a rebuild finished in the metrics (from the task's thread or the rollups' thread). */
    private void finished(long keysWritten, long nanos) {
        rebuildKeysMetric.inc(keysWritten);
        rebuildLongestMillis.accumulateAndGet(nanos / 1_000_000, Math::max);
        rebuildsFinishedMetric.inc();
    }
}
