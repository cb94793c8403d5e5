package io.rollcount.job.ops;

import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.redis.RedisLossWatch;
import io.rollcount.job.redis.RollupsRebuild;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.streaming.api.operators.KeyContext;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;

/**
 * The rebuild after a loss of Redis's data, for one {@link CountPerCounter} subtask: when {@link RedisLossWatch}
 * sees the loss (or a job restores a checkpoint taken while a rebuild was under way), every counter of the
 * subtask's key groups ({@link CounterStore#ids}) is written again through the operator's {@link Rewriter},
 * {@value #COUNTERS_PER_STEP} counters every {@value #STEP_MILLIS} ms, between the records and flushes the task
 * goes on with, so that the live values keep their freshness; a loss during a rebuild starts it over. With a
 * {@link RollupsRebuild}, subtask 0 also writes the closed windows of {@code counter-rollups} again, on a
 * thread of its own. Metrics {@code redisRebuilds}, {@code redisRebuildsFinished}, {@code redisRebuildKeys} and
 * the gauge {@code redisRebuildLongestMs}.
 */
final class CounterRebuild {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(CounterRebuild.class);

    /** Counters per step of a rebuild, and the pause between steps: about 10,000 counters a second. */
    static final int COUNTERS_PER_STEP = 1_000;

    static final long STEP_MILLIS = 100;

    /** Writes everything Redis shows of the counter (the current key) again; returns how many keys. */
    interface Rewriter {
        int rewrite(String id) throws Exception;
    }

    private final RedisLossWatch lossWatch;
    private final RollupsRebuild rollupsRebuild;
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

    /**
     * @param lossWatch null: no loss is noticed here (a restored pending rebuild still runs)
     * @param rollupsRebuild null: no rebuild from {@code counter-rollups}
     */
    CounterRebuild(OperatorStateStore operatorState, RedisLossWatch lossWatch, RollupsRebuild rollupsRebuild)
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
            Rewriter rewriter) {
        this.subtask = subtask;
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
        boolean lost = lossWatch != null && lossWatch.check();
        if (lost || resume) {
            if (resume && !lost)
                LOG.warn(
                        "a rebuild after a loss of Redis's data was under way at the checkpoint this job restored: starting it over");
            resume = false;
            start();
        }
    }

    void snapshotState() throws Exception {
        pending.update(queue != null || rollupsRunning || resume ? List.of(true) : List.of());
    }

    /** At the end of input: a loss seen (or a pending rebuild) is rebuilt whole, before the sink's last flush. */
    void finish() throws Exception {
        if ((lossWatch != null && lossWatch.lossSeen()) || resume) {
            resume = false;
            start();
        }
        while (queue != null) step();
        if (rollupsThread != null) {
            rollupsThread.shutdown();
            rollupsThread.awaitTermination(10, TimeUnit.MINUTES);
        }
    }

    void close() {
        if (lossWatch != null) lossWatch.close();
        if (rollupsThread != null) rollupsThread.shutdownNow();
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
        RollupsRebuild rollups = rollupsRebuild;
        rollupsRunning = true;
        rollupsThread.submit(() -> {
            long t0 = System.nanoTime();
            try {
                RollupsRebuild.Result r = rollups.run(Long.MIN_VALUE, Long.MAX_VALUE);
                finished(r.written(), System.nanoTime() - t0);
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
        queue = null;
    }

    /** Counts a rebuild finished in the metrics (from the task's thread or the rollups' thread). */
    private void finished(long keysWritten, long nanos) {
        rebuildKeysMetric.inc(keysWritten);
        rebuildLongestMillis.accumulateAndGet(nanos / 1_000_000, Math::max);
        rebuildsFinishedMetric.inc();
    }
}
