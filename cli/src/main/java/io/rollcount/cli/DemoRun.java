package io.rollcount.cli;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Launcher;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.LocalMetrics;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisNodes;
import io.rollcount.job.util.Messages;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.configuration.WebOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.admin.Admin;
import redis.clients.jedis.UnifiedJedis;

/**
 * One run of {@code ./rollcount demo} after its start checks ({@link DemoCommand}): it clears the demo's counters
 * under the key prefix, starts an in-process Kafka broker in a fresh temporary folder, the job on a local
 * MiniCluster and the generator, refreshes the {@link DemoView} every second, and at the end of
 * {@code --duration} or on Ctrl-C stops the generator, the job (with a savepoint), the broker, deletes the folder
 * and prints a summary.
 */
final class DemoRun {
    private final DemoCommand command;
    /** The job's settings; once the broker runs, with its address. */
    private JobSettings settings;
    /** The launcher whose start checks passed; once the broker runs, for the settings with its address. */
    private Launcher launcher;
    /** The metrics port; 0: off. */
    private final int metrics;

    private final PrintWriter out;
    private final PrintWriter err;
    private final CountDownLatch finished = new CountDownLatch(1);

    private Path dir;
    private EventGenerator workload;
    private KafkaBroker broker;
    private DemoGenerator generator;
    private Admin admin;
    private JobClient job;
    private LocalMetrics jobMetrics;
    private CheckpointStats checkpoints;
    private DemoView view;
    private long started = System.nanoTime();
    private long read;
    private long generatorStoppedAt = -1;

    /** A run of {@code command}'s demo, with the job's {@code settings} that passed {@code launcher}'s start checks. */
    DemoRun(
            DemoCommand command,
            JobSettings settings,
            Launcher launcher,
            int metrics,
            PrintWriter out,
            PrintWriter err) {
        this.command = command;
        this.settings = settings;
        this.launcher = launcher;
        this.metrics = metrics;
        this.out = out;
        this.err = err;
    }

    /** The demo after its start checks: start, watch until the end or Ctrl-C, stop, summary; its exit code. */
    int run() throws Exception {
        String prefix = settings.redis.keyPrefix();
        RedisEndpoint endpoint = JobConnectors.redisEndpoint(settings.redis);
        UnifiedJedis jedis = endpoint.client();

        workload = new EventGenerator(
                command.seed,
                EventGenerator.Workload.viral,
                command.counters,
                command.users,
                System.currentTimeMillis(),
                command.rate,
                0,
                0.02);
        Thread hook = new Thread(this::onShutdown, "rollcount-demo-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        dir = Files.createTempDirectory("rollcount-demo-");
        command.workDir = dir;
        try (jedis) {
            long cleared = clearDemoCounters(endpoint, prefix, workload);
            if (cleared > 0) {
                out.printf(
                        "rollcount demo: cleared %,d keys of the demo's counters left by an earlier run under prefix '%s'%n",
                        cleared, prefix);
            }
            if (command.policies != null)
                settings.policies().describe().forEach(line -> out.println("rollcount demo: " + line));
            out.printf(
                    "rollcount demo: starting Kafka, the generator and the job (Redis at %s, key prefix '%s') ...%n",
                    endpoint, prefix);
            out.flush();
            if (!start()) return 130;
            view = new DemoView(
                    out,
                    jedis,
                    workload,
                    started,
                    command.duration,
                    broker.bootstrap(),
                    endpoint.toString(),
                    prefix,
                    command.counters);
            watch();
            if (job.getJobExecutionResult().isDone()) {
                job.getJobExecutionResult().get(); // the job failed or ended on its own: say why
            }
        } finally {
            stop();
            finished.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // Ctrl-C: the hook is running and waits for this.
            }
        }
        return 0;
    }

    /**
     * Starts the broker, the job on a local MiniCluster and the generator, in {@code r}; false if Ctrl-C came
     * before the job was submitted.
     */
    private boolean start() throws Exception {
        broker = new KafkaBroker(0, dir.resolve("kafka")).start();
        broker.createTopics(DemoCommand.PARTITIONS, DemoCommand.TOPIC);
        settings = settings.toBuilder()
                .set("--kafka.bootstrap", broker.bootstrap())
                .set("--checkpoint.dir", dir.resolve("checkpoints").toUri())
                .build();
        launcher = launcher.withSettings(settings);
        admin = Admin.create(broker.adminProperties());

        int restPort = freePort();
        Configuration rest = new Configuration();
        rest.set(RestOptions.BIND_ADDRESS, "127.0.0.1");
        rest.set(RestOptions.ADDRESS, "127.0.0.1");
        rest.set(RestOptions.BIND_PORT, String.valueOf(restPort));
        rest.set(RestOptions.PORT, restPort);
        rest.set(WebOptions.UPLOAD_DIR, dir.resolve("web-upload").toString());
        if (metrics != 0) {
            MetricsPort.configure(rest, metrics);
            out.println("rollcount demo: " + MetricsPort.serving(metrics));
            out.flush();
        }
        jobMetrics = LocalMetrics.addTo(rest);
        StreamExecutionEnvironment env = LocalFlink.environment(settings, rest);
        launcher.assemble(env);
        if (command.stopRequested) return false;
        job = env.executeAsync("rollcount-demo");
        checkpoints = new CheckpointStats(
                "http://127.0.0.1:" + restPort, job.getJobID().toHexString());
        generator = new DemoGenerator(workload, broker.adminProperties(), DemoCommand.TOPIC, command.rate).start();
        started = System.nanoTime();
        return true;
    }

    /** Refreshes the view every second until the end of {@code --duration}, Ctrl-C, or the job's end. */
    private void watch() throws Exception {
        long deadline = started + command.duration.toNanos();
        while (!command.stopRequested
                && System.nanoTime() < deadline
                && !job.getJobExecutionResult().isDone()) {
            sleepUntilNextTick(started);
            Map<String, Object> acc = accumulators(job);
            long now = System.nanoTime();
            long produced = generator.produced();
            long lag = DemoView.lag(admin, settings.kafkaGroupId);
            read = Math.max(read, RunCommand.longOf(acc, JobAccumulators.EVENTS_READ));
            long commands = jobMetrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT);
            checkpoints.poll();
            double elapsed = view.refresh(now, produced, read, lag, commands, checkpoints);
            if (generator.firstError() != null && generator.produced() == 0 && elapsed > 10) {
                throw new IllegalStateException(
                        "the generator cannot produce to Kafka: " + Messages.oneLine(generator.firstError()));
            }
        }
    }

    /**
     * Stops in order: generator, job (with a savepoint: outputs flushed and committed), broker, folder; then
     * prints the summary if the generator ran.
     */
    private void stop() {
        if (generator != null) {
            generator.close();
            generatorStoppedAt = System.nanoTime();
        }
        // The REST API goes with the job's MiniCluster: read the checkpoints' figures before stopping it.
        if (checkpoints != null) checkpoints.poll();
        JobExecutionResult result = job == null ? null : stopJob(job, dir, err);
        if (result != null)
            read = Math.max(read, RunCommand.longOf(result.getAllAccumulatorResults(), JobAccumulators.EVENTS_READ));
        if (admin != null) admin.close(Duration.ofSeconds(5));
        if (broker != null) broker.close();
        deleteRecursively(dir);
        if (generator != null) {
            double seconds = ((generatorStoppedAt > 0 ? generatorStoppedAt : System.nanoTime()) - started) / 1e9;
            command.summary = new DemoCommand.Summary(
                    generator.produced(),
                    read,
                    steady(view == null ? List.of() : view.samples(), command.duration),
                    checkpoints == null ? List.of() : checkpoints.durations(),
                    jobMetrics == null ? 0 : jobMetrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT),
                    seconds);
            printSummary(out, command.summary, checkpoints);
            if (generator.failed() > 0) {
                err.printf(
                        "rollcount demo: %,d events could not be produced (%s)%n",
                        generator.failed(), Messages.oneLine(generator.firstError()));
            }
        }
        out.flush();
        err.flush();
    }

    /** Ctrl-C: ask the loop to stop, and keep the JVM alive until everything is stopped (at most 60 s). */
    private void onShutdown() {
        command.stopRequested = true;
        try {
            finished.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static void sleepUntilNextTick(long started) throws InterruptedException {
        long period = TimeUnit.SECONDS.toNanos(1);
        long elapsed = System.nanoTime() - started;
        long next = (elapsed / period + 1) * period;
        TimeUnit.NANOSECONDS.sleep(Math.max(1, next - elapsed));
    }

    /** Stops the job with a savepoint (no drain: windows stay open, as after a cancel); cancels it if that fails. */
    private static JobExecutionResult stopJob(JobClient job, Path dir, PrintWriter err) {
        if (!job.getJobExecutionResult().isDone()) {
            try {
                job.stopWithSavepoint(false, dir.resolve("savepoint").toUri().toString(), SavepointFormatType.CANONICAL)
                        .get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                err.println(
                        "rollcount demo: stop with savepoint failed (" + Messages.oneLine(e) + "), cancelling the job");
                try {
                    job.cancel().get(30, TimeUnit.SECONDS);
                } catch (Exception ignored) {
                    // reported below if the job does not end
                }
            }
        }
        try {
            return job.getJobExecutionResult().get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            return null;
        }
    }

    private static Map<String, Object> accumulators(JobClient job) {
        try {
            return job.getAccumulators().get(2, TimeUnit.SECONDS);
        } catch (Exception e) {
            return Map.of();
        }
    }

    /**
     * Events per second read by the job after a warm-up (a third of the run, at most 10 s) until the generator
     * stopped: the least-squares slope of the events read over time, since the accumulators arrive with heartbeats
     * (a tick may see two seconds of progress and the next none).
     */
    static double steady(List<long[]> samples, Duration runFor) {
        if (samples.size() < 2) return 0;
        long warmup = Math.min(TimeUnit.SECONDS.toNanos(10), runFor.toNanos() / 3);
        long t0 = samples.get(0)[0] - TimeUnit.SECONDS.toNanos(1);
        List<long[]> steady = samples.stream().filter(s -> s[0] - t0 >= warmup).toList();
        if (steady.size() < 2) steady = samples;
        double n = steady.size();
        double mt = steady.stream().mapToDouble(s -> (s[0] - t0) / 1e9).sum() / n;
        double mr = steady.stream().mapToDouble(s -> s[2]).sum() / n;
        double cov = 0;
        double var = 0;
        for (long[] s : steady) {
            double dt = (s[0] - t0) / 1e9 - mt;
            cov += dt * (s[2] - mr);
            var += dt * dt;
        }
        return var == 0 ? 0 : cov / var;
    }

    private static void printSummary(PrintWriter out, DemoCommand.Summary s, CheckpointStats checkpoints) {
        List<Long> d = s.checkpointMillis();
        out.printf("rollcount demo: stopped after %.1f s%n", s.seconds());
        out.printf("  events produced     %,d (%,.0f/s)%n", s.produced(), s.produced() / Math.max(1e-9, s.seconds()));
        out.printf(
                "  events read         %,d%s%n",
                s.read(),
                s.read() < s.produced()
                        ? String.format(" (%,d still unread in Kafka when the job stopped)", s.produced() - s.read())
                        : "");
        out.printf("  steady events/s     %,.0f (read by the job, after the warm-up)%n", s.steadyPerSecond());
        if (d.isEmpty()) {
            out.printf("  checkpoints         none completed%n");
        } else {
            long max = d.stream().mapToLong(Long::longValue).max().orElse(0);
            double avg = d.stream().mapToLong(Long::longValue).average().orElse(0);
            out.printf(
                    "  checkpoints         %d completed, %s ms (mean %.0f ms, max %d ms)%n",
                    d.size(), d.stream().map(String::valueOf).collect(Collectors.joining(", ")), avg, max);
        }
        if (checkpoints != null && checkpoints.failedCount() > 0) {
            out.printf(
                    "  checkpoints failed  %d%s%n",
                    checkpoints.failedCount(), " (" + String.join("; ", checkpoints.failures()) + ")");
        }
        out.printf("  Redis commands sent %,d%n", s.redisCommands());
    }

    private static final Pattern DEMO_COUNTER =
            Pattern.compile("(?:post|video|api|user):(\\d{1,9}):(?:likes|views|clicks)");

    /**
     * Deletes the keys of the workload's counters under {@code prefix} ({@code P:{C}:*}): a new job's versioned
     * writes would not replace the values and versions an earlier run left (its totals would look frozen).
     */
    static long clearDemoCounters(RedisEndpoint endpoint, String prefix, EventGenerator workload) {
        RedisKeys keys = new RedisKeys(prefix);
        long[] deleted = {0};
        Map<String, Boolean> isDemo = new HashMap<>();
        // every master of a Redis Cluster: SCAN sees one node's keys
        RedisNodes.scan(endpoint, keys.counterKeysPattern(), (node, page) -> {
            List<String> doomed = new ArrayList<>();
            for (String key : page) {
                String counter = keys.counterOf(key);
                if (counter == null) continue;
                boolean demo = isDemo.computeIfAbsent(counter, c -> {
                    Matcher m = DEMO_COUNTER.matcher(c);
                    return m.matches()
                            && workload.counterId(Integer.parseInt(m.group(1))).equals(c);
                });
                if (demo) doomed.add(key);
            }
            if (!doomed.isEmpty()) deleted[0] += RedisNodes.unlinkEach(node, doomed);
        });
        return deleted[0];
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByName("127.0.0.1"), 0));
            return s.getLocalPort();
        }
    }

    static void deleteRecursively(Path dir) {
        if (dir == null || !Files.exists(dir)) return;
        try (Stream<Path> paths = Files.walk(dir)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort; reported below if the folder stays
                }
            }
        } catch (IOException ignored) {
            // the folder vanished meanwhile
        }
    }
}
