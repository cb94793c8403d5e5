package io.rollcount.cli;

import io.rollcount.job.JobOptions;
import io.rollcount.job.Launcher;
import io.rollcount.job.RefusedStartException;
import io.rollcount.job.RollcountJob;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.metrics.LocalMetrics;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.ops.RouteEvents;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisNodes;
import io.rollcount.job.util.DurationConverter;
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
import java.util.UUID;
import java.util.concurrent.Callable;
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
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.commands.JedisCommands;

/**
 * {@code ./rollcount demo}: the whole system on one machine (contract section 5). An in-process Kafka broker
 * with its data in a fresh temporary folder, a generator thread producing the {@code viral} workload to
 * {@code counter-events} (2 partitions) at a paced rate with wall-clock event times, the job on a local
 * MiniCluster (RocksDB, checkpoints, the same {@link RollcountJob#assemble} as {@code ./rollcount run}) writing
 * to Redis, and a view refreshed every second. At the end of {@code --duration} or on Ctrl-C: the generator
 * stops, the job stops with a savepoint (its outputs flushed and committed), the broker stops, the folder is
 * deleted, and a summary is printed.
 */
@Command(
        name = "demo",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        description =
                "The whole system on one machine: an in-process Kafka broker, a generator of the skewed 'viral' workload, "
                        + "the job on a local Flink MiniCluster (RocksDB, checkpoints) writing to Redis, and a live view refreshed every second. "
                        + "Stops at the end of --duration or on Ctrl-C, and prints a summary. At start it clears the keys of the demo's counters "
                        + "under the key prefix (a fresh job's versioned writes would not replace what an earlier run left); "
                        + "give --redis.key-prefix to keep other data apart.")
public final class DemoCommand implements Callable<Integer> {
    static final String TOPIC = "counter-events";
    static final int PARTITIONS = 2;
    static final int HOT = 10;
    static final int SPARK_WINDOWS = 12;

    @Spec
    CommandSpec spec;

    @Option(
            names = "--duration",
            defaultValue = "60s",
            converter = DurationConverter.class,
            description = "How long to run (default: ${DEFAULT-VALUE}).")
    Duration duration;

    @Option(
            names = "--rate",
            defaultValue = "20000",
            description =
                    "Events per second the generator produces, at most: a busy machine may send fewer (default: ${DEFAULT-VALUE}).")
    double rate;

    @Option(
            names = "--counters",
            defaultValue = "100000",
            description = "Distinct counters of the workload (default: ${DEFAULT-VALUE}).")
    int counters;

    @Option(
            names = "--users",
            defaultValue = "10000",
            description = "Distinct users of the workload (default: ${DEFAULT-VALUE}).")
    int users;

    @Option(
            names = "--parallelism",
            defaultValue = "2",
            description = "Parallelism of the job (default: ${DEFAULT-VALUE}).")
    int parallelism;

    @Option(
            names = "--checkpoint.interval",
            converter = DurationConverter.class,
            defaultValue = "5s",
            description = "Checkpoint interval (default: ${DEFAULT-VALUE}).")
    Duration checkpointInterval;

    @picocli.CommandLine.Mixin
    RedisReadOptions redisOptions = new RedisReadOptions();

    @Option(
            names = "--metrics.port",
            paramLabel = "PORT",
            description =
                    "Serve Flink's and Rollcount's metrics for Prometheus at http://127.0.0.1:PORT/metrics; 0: off (default: "
                            + MetricsPort.DEFAULT_DEMO_PORT + ", or off when that port is taken).")
    Integer metricsPort;

    @Option(
            names = "--policies",
            paramLabel = "FILE",
            description = "Namespace policies (YAML), as for run; e.g. samples/policies.yaml.")
    String policies;

    @Option(
            names = "--seed",
            defaultValue = "42",
            description = "Random seed of the generator (default: ${DEFAULT-VALUE}).")
    long seed;

    /** For tests: the temporary folder of the last run (deleted at its end). */
    volatile Path workDir;
    /** For tests: the figures of the last run. */
    volatile Summary summary;

    private final CountDownLatch finished = new CountDownLatch(1);
    private volatile boolean stopRequested;

    /** What the final summary says. */
    record Summary(
            long produced,
            long read,
            double steadyPerSecond,
            List<Long> checkpointMillis,
            long redisCommands,
            double seconds) {}

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        Duration runFor = duration;
        if (runFor.isZero() || runFor.isNegative()) throw new IllegalArgumentException("--duration must be positive");
        if (rate <= 0) throw new IllegalArgumentException("--rate must be positive");
        if (parallelism < 1) throw new IllegalArgumentException("--parallelism must be at least 1");
        int metrics = metricsPort == null ? MetricsPort.DEFAULT_DEMO_PORT : metricsPort;
        if (metrics != 0) {
            MetricsPort.validate("--metrics.port", metrics);
            if (!MetricsPort.isFree(metrics)) {
                if (metricsPort != null) {
                    err.println("rollcount demo: " + MetricsPort.inUse("--metrics.port", metrics));
                    err.flush();
                    return 2;
                }
                err.println("rollcount demo: metrics off: the default metrics port " + metrics
                        + " is in use (--metrics.port PORT picks another)");
                err.flush();
                metrics = 0;
            }
        }

        JobOptions options = new JobOptions();
        redisOptions.applyTo(options);
        String prefix = options.redisKeyPrefix;
        options.source = JobOptions.SourceKind.kafka;
        options.kafkaBootstrap = "127.0.0.1:9"; // replaced once the broker has its port; validate() needs one
        options.kafkaGroupId = "rollcount-demo";
        options.kafkaTransactionalIdPrefix =
                "rollcount-demo-" + UUID.randomUUID().toString().substring(0, 8);
        options.checkpointInterval = checkpointInterval;
        options.parallelism = parallelism;
        options.policiesFile = policies;
        // The start checks of every start of the job (Redis first: without it nothing starts). The demo clears its
        // own counters below, so an earlier job's keys do not refuse it; a job running on the prefix does.
        options.leaseToken = UUID.randomUUID().toString();
        Launcher launcher =
                Launcher.of(options, Launcher.Place.HERE, "./rollcount run").startingOver();
        try {
            launcher.checkStart(null, null);
        } catch (RefusedStartException | IllegalStateException e) {
            err.println("rollcount demo: " + e.getMessage());
            err.flush();
            return e instanceof RefusedStartException ? 2 : 1;
        }
        RedisEndpoint endpoint = RollcountJob.redisEndpoint(options);
        UnifiedJedis jedis = endpoint.client();

        EventGenerator workload = new EventGenerator(
                seed, EventGenerator.Workload.viral, counters, users, System.currentTimeMillis(), rate, 0, 0.02);
        RedisKeys keys = new RedisKeys(prefix);
        Thread hook = new Thread(this::onShutdown, "rollcount-demo-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        Path dir = Files.createTempDirectory("rollcount-demo-");
        workDir = dir;
        KafkaBroker broker = null;
        DemoGenerator generator = null;
        Admin admin = null;
        JobClient job = null;
        LocalMetrics jobMetrics = null;
        long started = System.nanoTime();
        List<long[]> samples = new ArrayList<>(); // {nanos, produced, read}
        CheckpointStats checkpoints = null;
        long read = 0;
        long generatorStoppedAt = -1;
        try (jedis) {
            long cleared = clearDemoCounters(endpoint, prefix, workload);
            if (cleared > 0) {
                out.printf(
                        "rollcount demo: cleared %,d keys of the demo's counters left by an earlier run under prefix '%s'%n",
                        cleared, prefix);
            }
            if (policies != null) options.policies().describe().forEach(line -> out.println("rollcount demo: " + line));
            out.printf(
                    "rollcount demo: starting Kafka, the generator and the job (Redis at %s, key prefix '%s') ...%n",
                    endpoint, prefix);
            out.flush();

            broker = new KafkaBroker(0, dir.resolve("kafka")).start();
            broker.createTopics(PARTITIONS, TOPIC);
            options.kafkaBootstrap = broker.bootstrap();
            options.checkpointDir = dir.resolve("checkpoints").toUri().toString();
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
            StreamExecutionEnvironment env = LocalFlink.environment(options, rest);
            launcher.assemble(env);
            if (stopRequested) return 130;
            job = env.executeAsync("rollcount-demo");
            checkpoints = new CheckpointStats(
                    "http://127.0.0.1:" + restPort, job.getJobID().toHexString());
            generator = new DemoGenerator(workload, broker.adminProperties(), TOPIC, rate).start();
            started = System.nanoTime();

            boolean terminal = System.console() != null && !"dumb".equals(System.getenv("TERM"));
            List<Long> commandSamples = new ArrayList<>();
            long deadline = started + runFor.toNanos();
            while (!stopRequested
                    && System.nanoTime() < deadline
                    && !job.getJobExecutionResult().isDone()) {
                sleepUntilNextTick(started);
                Map<String, Object> acc = accumulators(job);
                long now = System.nanoTime();
                long produced = generator.produced();
                long lag = lag(admin, options.kafkaGroupId);
                read = Math.max(read, RunCommand.longOf(acc, RouteEvents.EVENTS_READ));
                long commands = jobMetrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT);
                samples.add(new long[] {now, produced, read});
                commandSamples.add(commands);
                checkpoints.poll();
                // Rates over the last 3 s: the job's accumulators arrive with heartbeats, about once a second.
                int back = Math.max(0, samples.size() - 4);
                long[] then = back == 0 && samples.size() < 4 ? new long[] {started, 0, 0} : samples.get(back);
                long commandsThen = back == 0 && samples.size() < 4 ? 0 : commandSamples.get(back);
                double secs = Math.max(1e-3, (now - then[0]) / 1e9);
                View v = new View(
                        (now - started) / 1e9,
                        runFor.toSeconds(),
                        (produced - then[1]) / secs,
                        (read - then[2]) / secs,
                        produced,
                        read,
                        lag,
                        checkpoints.completedCount(),
                        checkpoints.lastDuration(),
                        (commands - commandsThen) / secs,
                        commands,
                        hotCounters(jedis, keys, workload),
                        trending(jedis, keys));
                if (terminal) {
                    out.print("\033[H\033[2J");
                    out.print(v.frame(broker.bootstrap(), endpoint.toString(), prefix, counters));
                } else {
                    out.println(v.line());
                }
                out.flush();
                if (generator.firstError() != null && generator.produced() == 0 && v.elapsed > 10) {
                    throw new IllegalStateException(
                            "the generator cannot produce to Kafka: " + Messages.oneLine(generator.firstError()));
                }
            }
            if (job.getJobExecutionResult().isDone()) {
                job.getJobExecutionResult().get(); // the job failed or ended on its own: say why
            }
        } finally {
            // Stop in order: generator, job (with a savepoint: outputs flushed and committed), broker, folder.
            if (generator != null) {
                generator.close();
                generatorStoppedAt = System.nanoTime();
            }
            // The REST API goes with the job's MiniCluster: read the checkpoints' figures before stopping it.
            if (checkpoints != null) checkpoints.poll();
            JobExecutionResult result = job == null ? null : stopJob(job, dir, err);
            if (result != null)
                read = Math.max(read, RunCommand.longOf(result.getAllAccumulatorResults(), RouteEvents.EVENTS_READ));
            if (admin != null) admin.close(Duration.ofSeconds(5));
            if (broker != null) broker.close();
            deleteRecursively(dir);
            if (generator != null) {
                double seconds = ((generatorStoppedAt > 0 ? generatorStoppedAt : System.nanoTime()) - started) / 1e9;
                summary = new Summary(
                        generator.produced(),
                        read,
                        steady(samples, runFor),
                        checkpoints == null ? List.of() : checkpoints.durations(),
                        jobMetrics == null ? 0 : jobMetrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT),
                        seconds);
                printSummary(out, summary, checkpoints);
                if (generator.failed() > 0) {
                    err.printf(
                            "rollcount demo: %,d events could not be produced (%s)%n",
                            generator.failed(), Messages.oneLine(generator.firstError()));
                }
            }
            out.flush();
            err.flush();
            finished.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // Ctrl-C: the hook is running and waits for this.
            }
        }
        return 0;
    }

    /** Ctrl-C: ask the loop to stop, and keep the JVM alive until everything is stopped (at most 60 s). */
    private void onShutdown() {
        stopRequested = true;
        try {
            finished.await(60, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Asks the demo to stop as Ctrl-C does (for tests). */
    void requestStop() {
        stopRequested = true;
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

    /** Consumer lag: end offsets of the topic minus the group's committed offsets (committed at each checkpoint); -1 when unknown. */
    static long lag(Admin admin, String group) {
        try {
            List<TopicPartition> parts = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) parts.add(new TopicPartition(TOPIC, p));
            var ends = admin.listOffsets(parts.stream().collect(Collectors.toMap(tp -> tp, tp -> OffsetSpec.latest())))
                    .all()
                    .get(2, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(2, TimeUnit.SECONDS);
            long lag = 0;
            for (TopicPartition tp : parts) {
                OffsetAndMetadata c = committed.get(tp);
                lag += ends.get(tp).offset() - (c == null ? 0 : c.offset());
            }
            return lag;
        } catch (Exception e) {
            return -1;
        }
    }

    /** The hottest counters (ranks 0..9 of the workload): total and the last 12 closed 5 s windows, from Redis. */
    static List<Hot> hotCounters(JedisCommands jedis, RedisKeys keys, EventGenerator workload) {
        long size = Resolution.S5.sizeMillis;
        long current = Resolution.S5.windowStart(System.currentTimeMillis());
        List<String> names = new ArrayList<>();
        for (int rank = 0; rank < HOT; rank++) {
            String c = workload.counterId(rank);
            names.add(keys.total(c));
            for (int i = SPARK_WINDOWS; i >= 1; i--) names.add(keys.window(c, Resolution.S5, current - i * size));
        }
        List<String> values = new ArrayList<>();
        try {
            // one MGET per counter: its keys share a Redis Cluster slot
            int perCounter = names.size() / HOT;
            for (int i = 0; i < names.size(); i += perCounter)
                values.addAll(jedis.mget(names.subList(i, i + perCounter).toArray(String[]::new)));
        } catch (RuntimeException e) {
            return List.of();
        }
        List<Hot> hot = new ArrayList<>();
        int k = 0;
        for (int rank = 0; rank < HOT; rank++) {
            String total = values.get(k++);
            long[] series = new long[SPARK_WINDOWS];
            for (int i = 0; i < SPARK_WINDOWS; i++) {
                String v = values.get(k++);
                series[i] = v == null ? 0 : Long.parseLong(v);
            }
            hot.add(new Hot(workload.counterId(rank), total == null ? null : Long.parseLong(total), series));
        }
        return hot;
    }

    record Hot(String counter, Long total, long[] windows) {}

    /** The head of the trending list across namespaces ({@code rc:trending:_all}), as "counter score". */
    static List<String> trending(JedisCommands jedis, RedisKeys keys) {
        try {
            List<String> out = new ArrayList<>();
            for (var t : jedis.zrevrangeWithScores(keys.trending("_all"), 0, TRENDING - 1)) {
                out.add(String.format("%-22s %,14.1f", t.getElement(), t.getScore()));
            }
            return out;
        } catch (RuntimeException e) {
            return List.of();
        }
    }

    private static final int TRENDING = 5;

    /** One refresh of the view. */
    record View(
            double elapsed,
            long duration,
            double inPerSecond,
            double outPerSecond,
            long produced,
            long read,
            long lag,
            long checkpoints,
            long lastCheckpointMillis,
            double commandsPerSecond,
            long commands,
            List<Hot> hot,
            List<String> trending) {

        String frame(String bootstrap, String redis, String prefix, int counters) {
            StringBuilder sb = new StringBuilder();
            sb.append(String.format(
                    "rollcount demo   viral workload, %,d counters   Kafka %s   Redis %s (prefix %s)%n",
                    counters, bootstrap, redis, prefix));
            sb.append(String.format("%.0f s of %d s   Ctrl-C stops%n%n", elapsed, duration));
            sb.append(String.format("events in     %,10.0f /s   produced %,d%n", inPerSecond, produced));
            sb.append(String.format("events out    %,10.0f /s   read by the job %,d%n", outPerSecond, read));
            sb.append(String.format(
                    "consumer lag  %10s      committed by the job at its last checkpoint; not yet read %,d%n",
                    lag < 0 ? "?" : String.format("%,d", lag), Math.max(0, produced - read)));
            sb.append(String.format(
                    "checkpoints   %,10d      last took %s%n",
                    checkpoints, lastCheckpointMillis < 0 ? "-" : lastCheckpointMillis + " ms"));
            sb.append(String.format("Redis         %,10.0f /s   commands sent %,d%n%n", commandsPerSecond, commands));
            sb.append(String.format(
                    "%-4s %-22s %14s   %s%n", "rank", "hottest counters", "total", "last 60 s in 5 s windows"));
            for (int i = 0; i < hot.size(); i++) {
                Hot h = hot.get(i);
                long max = java.util.Arrays.stream(h.windows()).max().orElse(0);
                sb.append(String.format(
                        "%4d %-22s %14s   %s  max %,d%n",
                        i,
                        h.counter(),
                        h.total() == null ? "-" : String.format("%,d", h.total()),
                        Sparkline.of(h.windows()),
                        max));
            }
            sb.append(String.format("%ntrending now (decayed score, half-life 1 h; rc:trending:_all)%n"));
            if (trending.isEmpty()) sb.append("     (not yet written)\n");
            for (int i = 0; i < trending.size(); i++) sb.append(String.format("%4d %s%n", i, trending.get(i)));
            return sb.toString();
        }

        String line() {
            Hot top = hot.isEmpty() ? null : hot.get(0);
            return String.format(
                            "rollcount demo: %3.0f s  in %,.0f/s  out %,.0f/s  produced %,d  read %,d  consumer lag %s  checkpoints %d (last %s)  Redis %,.0f cmd/s%s",
                            elapsed,
                            inPerSecond,
                            outPerSecond,
                            produced,
                            read,
                            lag < 0 ? "?" : String.format("%,d", lag),
                            checkpoints,
                            lastCheckpointMillis < 0 ? "-" : lastCheckpointMillis + " ms",
                            commandsPerSecond,
                            top == null
                                    ? ""
                                    : String.format(
                                            "  %s total %s %s",
                                            top.counter(),
                                            top.total() == null ? "-" : String.format("%,d", top.total()),
                                            Sparkline.of(top.windows())))
                    + (trending.isEmpty()
                            ? ""
                            : "  trending #1 " + trending.get(0).replaceAll("\\s+", " "));
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

    private static void printSummary(PrintWriter out, Summary s, CheckpointStats checkpoints) {
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
