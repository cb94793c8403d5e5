package io.rollcount.bench;

import io.rollcount.job.metrics.LocalMetrics;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.accumulators.StringifiedAccumulatorResult;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.CompletedCheckpointStats;
import org.apache.flink.runtime.checkpoint.SubtaskStateStats;
import org.apache.flink.runtime.checkpoint.TaskStateStats;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.jobmaster.JobResult;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

/**
 * One local Flink MiniCluster for the whole benchmark (one TaskManager, {@code parallelism} slots), so
 * every variant runs on the same cluster in the same JVM; jobs run one after another.
 */
final class BenchCluster implements AutoCloseable {
    private final MiniCluster cluster;
    private final Path checkpoints;
    final int parallelism;
    /** The metrics of the jobs run on this cluster, e.g. the Redis writers' commands sent. */
    final LocalMetrics metrics;

    BenchCluster(int parallelism, Path workDir) throws Exception {
        this.parallelism = parallelism;
        this.checkpoints = workDir.resolve("checkpoints");
        Configuration conf = new Configuration();
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, parallelism);
        conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.ofMebiBytes(256L * parallelism));
        conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
        conf.set(RestOptions.BIND_PORT, "0");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        // every checkpoint of a run of hours at 5 s in the stats (Run.completed), not Flink's last 10
        conf.set(org.apache.flink.configuration.WebOptions.CHECKPOINTS_HISTORY_SIZE, 5_000);
        // accumulators travel with heartbeats: read them about a second after the end of input
        conf.set(org.apache.flink.configuration.HeartbeatManagerOptions.HEARTBEAT_INTERVAL, Duration.ofMillis(500));
        metrics = LocalMetrics.addTo(conf);
        cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(conf)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(parallelism)
                .build());
        cluster.start();
    }

    /** The job settings every variant shares: the job's own (RocksDB, incremental checkpoints every 10 s, no Kryo). */
    Configuration jobConfiguration(Configuration base) {
        Configuration conf = new Configuration(base);
        conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, checkpoints.toUri().toString());
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        return conf;
    }

    /**
     * One completed checkpoint: its trigger (epoch ms), end-to-end duration, full state size, the bytes it
     * uploaded (its incremental size) and where its slowest subtask's time went ({@link #slowest}).
     */
    record Checkpoint(long id, long triggerMillis, long millis, long fullBytes, long uploadedBytes, String slowest) {}

    /** What one job run measured. */
    static final class Run {
        String name;
        double seconds;
        boolean finished;
        Map<String, Long> accumulators = new LinkedHashMap<>();
        int checkpoints;
        long lastCheckpointMillis = -1;
        long maxCheckpointMillis = -1;
        long lastCheckpointFullBytes = -1;
        long lastCheckpointIncrementalBytes = -1;
        long lastCheckpointTriggerMillis = -1;
        Map<String, Long> stateBytesByOperator = new LinkedHashMap<>();
        /** The completed checkpoints of the run, oldest first. */
        java.util.List<Checkpoint> completed = new java.util.ArrayList<>();
        /** CPU of the job's JVM ({@link JobCpu}) from the first event to the end, seconds; NaN if not measured. */
        double jobCpuSeconds = Double.NaN;
        /** CPU of the Kafka broker's process over the same span, seconds; NaN without a broker. */
        double brokerCpuSeconds = Double.NaN;
        /** CPU ns by kind of thread ({@link ThreadCpu}) over the same span as {@link #jobCpuSeconds}; empty if not measured. */
        Map<String, Long> threadCpuNanos = new LinkedHashMap<>();

        long acc(String name) {
            return accumulators.getOrDefault(name, 0L);
        }

        /** The state bytes at the last checkpoint of the operators whose name contains {@code operator}. */
        long stateBytesOf(String operator) {
            return stateBytesByOperator.entrySet().stream()
                    .filter(e -> e.getKey().contains(operator))
                    .mapToLong(Map.Entry::getValue)
                    .sum();
        }
    }

    /**
     * Runs the job built in {@code env} until its {@code expectedEnds} stamping sink subtasks have seen the end
     * of their input (then cancels it unless {@code untilFinished}: a bounded job would otherwise wait for
     * one more checkpoint), and returns the time from its first event to that end.
     *
     * @param whileRunning called about every 100 ms while the job runs (pollers, samplers)
     */
    Run run(
            StreamExecutionEnvironment env,
            String name,
            int expectedEnds,
            boolean untilFinished,
            Duration timeout,
            Consumer<Long> whileRunning)
            throws Exception {
        BenchClock.reset();
        JobCpu.exclude(Thread.currentThread()); // the harness waits and samples; it is not the job
        StreamGraph graph = env.getStreamGraph();
        graph.setJobName(name);
        long submitted = System.nanoTime();
        JobID id = cluster.submitJob(graph).get(60, TimeUnit.SECONDS).getJobID();
        CompletableFuture<JobResult> result = cluster.requestJobResult(id);
        long deadline = submitted + timeout.toNanos();
        Run run = new Run();
        run.name = name;
        while (!result.isDone() && BenchClock.ENDS.get() < expectedEnds) {
            if (System.nanoTime() > deadline) {
                cluster.cancelJob(id).get(30, TimeUnit.SECONDS);
                throw new IllegalStateException(name + ": no end of input after " + timeout.toSeconds() + " s");
            }
            if (whileRunning != null) whileRunning.accept(System.nanoTime() - submitted);
            Thread.sleep(20);
        }
        long end = BenchClock.LAST_END_NANOS.get();
        if (end == 0) end = System.nanoTime();
        long first = BenchClock.FIRST_EVENT_NANOS.get();
        run.seconds = (end - (first == 0 ? submitted : first)) / 1e9;
        long firstCpu = BenchClock.FIRST_EVENT_CPU.get();
        long endCpu = BenchClock.lastEndCpu;
        if (first != 0 && firstCpu > 0 && endCpu > 0) {
            run.jobCpuSeconds = (endCpu - firstCpu) / 1e9;
            run.threadCpuNanos = ThreadCpu.byKind(BenchClock.firstEventThreads, BenchClock.lastEndThreads);
        }
        long firstBroker = BenchClock.FIRST_EVENT_BROKER_CPU.get();
        long endBroker = BenchClock.lastEndBrokerCpu;
        if (firstBroker >= 0 && endBroker >= 0) run.brokerCpuSeconds = (endBroker - firstBroker) / 1e9;
        if (untilFinished || result.isDone()) {
            JobResult r = result.get(timeout.toSeconds(), TimeUnit.SECONDS);
            if (!r.isSuccess()) {
                Throwable t = r.getSerializedThrowable()
                        .map(s -> s.deserializeError(getClass().getClassLoader()))
                        .orElse(null);
                throw new IllegalStateException(name + " failed: " + r.getApplicationStatus(), t);
            }
            run.finished = true;
        } else {
            Thread.sleep(1_200);
        }
        collect(id, run);
        if (!result.isDone()) {
            cluster.cancelJob(id).get(30, TimeUnit.SECONDS);
            result.get(60, TimeUnit.SECONDS);
        }
        if (System.getenv("ROLLCOUNT_BENCH_VERBOSE") != null) {
            System.err.printf(
                    "  [%s: %.1f s measured, %.1f s wall]%n", name, run.seconds, (System.nanoTime() - submitted) / 1e9);
        }
        return run;
    }

    private void collect(JobID id, Run run) throws Exception {
        AccessExecutionGraph g = cluster.getExecutionGraph(id).get(30, TimeUnit.SECONDS);
        for (StringifiedAccumulatorResult a : g.getAccumulatorResultsStringified()) {
            try {
                run.accumulators.put(a.getName(), Long.parseLong(a.getValue()));
            } catch (NumberFormatException ignored) {
                // not a count
            }
        }
        CheckpointStatsSnapshot stats = g.getCheckpointStatsSnapshot();
        if (stats == null) return;
        run.checkpoints = (int) stats.getCounts().getNumberOfCompletedCheckpoints();
        run.maxCheckpointMillis = run.checkpoints == 0
                ? -1
                : stats.getSummaryStats().getEndToEndDurationStats().getMaximum();
        for (var c : stats.getHistory().getCheckpoints())
            if (c instanceof CompletedCheckpointStats done)
                run.completed.add(new Checkpoint(
                        done.getCheckpointId(),
                        done.getTriggerTimestamp(),
                        done.getEndToEndDuration(),
                        done.getStateSize(),
                        done.getCheckpointedSize(),
                        slowest(done, g)));
        run.completed.sort(java.util.Comparator.comparingLong(Checkpoint::id));
        CompletedCheckpointStats last = stats.getHistory().getLatestCompletedCheckpoint();
        if (last == null) return;
        run.lastCheckpointMillis = last.getEndToEndDuration();
        run.lastCheckpointFullBytes = last.getStateSize();
        run.lastCheckpointIncrementalBytes = last.getCheckpointedSize();
        run.lastCheckpointTriggerMillis = last.getTriggerTimestamp();
        Map<org.apache.flink.runtime.jobgraph.JobVertexID, ? extends AccessExecutionJobVertex> vertices =
                g.getAllVertices();
        for (TaskStateStats t : last.getAllTaskStateStats()) {
            AccessExecutionJobVertex v = vertices.get(t.getJobVertexId());
            run.stateBytesByOperator.merge(
                    v == null ? t.getJobVertexId().toString() : v.getName(), t.getStateSize(), Long::sum);
        }
    }

    /**
     * The subtask that acknowledged {@code c} last, and where its time went: from the trigger to the barrier's
     * arrival ({@code start delay}: the barrier queued behind records, or the task busy), the alignment of its
     * inputs' barriers, the synchronous part (state flushed and snapshotted on the task thread) and the
     * asynchronous one (files uploaded).
     */
    static String slowest(CompletedCheckpointStats c, AccessExecutionGraph g) {
        String name = null;
        SubtaskStateStats worst = null;
        for (TaskStateStats t : c.getAllTaskStateStats()) {
            for (SubtaskStateStats s : t.getSubtaskStats()) {
                if (s == null) continue;
                if (worst == null || s.getAckTimestamp() > worst.getAckTimestamp()) {
                    worst = s;
                    AccessExecutionJobVertex v = g.getAllVertices().get(t.getJobVertexId());
                    name = v == null ? t.getJobVertexId().toString() : v.getName();
                }
            }
        }
        if (worst == null) return "no subtask stats";
        return String.format(
                java.util.Locale.ROOT,
                "slowest %s #%d: start delay %d ms, alignment %d ms, sync %d ms, async %d ms",
                name.length() > 40 ? name.substring(0, 40) + "..." : name,
                worst.getSubtaskIndex(),
                worst.getCheckpointStartDelay(),
                worst.getAlignmentDuration(),
                worst.getSyncCheckpointDuration(),
                worst.getAsyncCheckpointDuration());
    }

    @Override
    public void close() throws Exception {
        cluster.closeAsync().get(60, TimeUnit.SECONDS);
    }
}
