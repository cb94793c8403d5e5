package io.rollcount.bench;

import io.rollcount.job.gen.EventGenerator.Workload;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code rollcount bench growth}: the zipf workload of {@code bench job} over a growing number of counters (by
 * default 1M, 4M and 16M), each on a fresh MiniCluster (parallelism 2, RocksDB, checkpoints every 5 s), to show
 * how each cost grows: events per second, job CPU per event, checkpoint duration and size, keyed state bytes
 * and Redis memory per distinct counter, and the peak heap. Each size opens with a touch pass, one event per
 * counter ({@link BenchEvents#withTouchPass}), then zipf draws: zipf alone would need many events per counter to
 * reach most of a 16M tail. With {@code --no-redis} the Redis writes are built and discarded (Redis memory is
 * not measured): 16M counters' keys need more memory than a small machine has. One {@code RESULT bench.growth} line per size, one
 * {@code RESULT bench.growth.ratio} of the largest size to the smallest, and one
 * {@code RESULT bench.growth.extrapolated} for {@code --target} counters, along the straight line through the
 * smallest and the largest size (state and Redis memory grow with the counters; the per-event costs do not).
 *
 * <p>{@code --scenario tail} runs the long tail instead ({@link TailBench}): zipf 1.1 at 1.5 events per counter
 * per hour over two hours of event time, Redis and the Kafka outputs written as in production, one
 * {@code RESULT bench.tail} line per size.
 */
@Command(
        name = "growth",
        mixinStandardHelpOptions = true,
        description =
                "The zipf workload over 1M, 4M and 16M counters: events/s, job CPU per event, checkpoint duration and size, state and Redis memory per counter, heap; RESULT lines per size, the ratio of the largest to the smallest, and an extrapolation to --target counters. --scenario tail: the long tail (1.5 events per counter per hour over 2 h of event time, windows closing, Redis and counter-rollups written), one RESULT bench.tail line per size.")
final class GrowthBench implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** What runs: the growth of the zipf workload, or the long tail ({@link TailBench}). */
    enum Scenario {
        growth,
        tail
    }

    @Option(
            names = "--scenario",
            defaultValue = "growth",
            description =
                    "growth: zipf events per counter after a touch pass; tail: zipf 1.1 at --events-per-counter-hour over --hours of event time, every window closing, Redis and counter-rollups written as in production (default: ${DEFAULT-VALUE}).")
    Scenario scenario;

    @Option(
            names = "--events-per-counter-hour",
            defaultValue = "1.5",
            description =
                    "Tail: events per counter per hour of event time, on average over the counters (default: ${DEFAULT-VALUE}).")
    double eventsPerCounterHour;

    @Option(
            names = "--hours",
            defaultValue = "2",
            description = "Tail: hours of event time, at least 2 (default: ${DEFAULT-VALUE}).")
    double hours;

    @Option(
            names = "--sizes",
            defaultValue = "1M,4M,16M",
            split = ",",
            description = "Counter counts, e.g. 100k,400k or 1M,4M,16M (default: ${DEFAULT-VALUE}).")
    List<String> sizes;

    @Option(
            names = "--events-per-counter",
            defaultValue = "1",
            description =
                    "Zipf events per counter of a size, after the touch pass (default: ${DEFAULT-VALUE}); zipf touches the head often and leaves most of a large tail untouched: the figures are per distinct counter touched.")
    double eventsPerCounter;

    @Option(
            names = "--touch-pass",
            negatable = true,
            defaultValue = "true",
            fallbackValue = "true",
            description =
                    "Open each size with one event per counter, so that every counter is touched (default: on; --no-touch-pass: zipf alone).")
    boolean touchPass;

    @Option(
            names = "--no-redis",
            description =
                    "Build the Redis writes and discard them (Redis memory not measured): for sizes whose Redis keys would not fit this machine's memory.")
    boolean noRedis;

    @Option(
            names = "--target",
            defaultValue = "100M",
            description = "The counter count to extrapolate to (default: ${DEFAULT-VALUE}).")
    String target;

    @Option(
            names = "--redis",
            paramLabel = "URL",
            description = "Redis to write to (default: $ROLLCOUNT_REDIS or redis://127.0.0.1:6379).")
    String redis;

    @Option(names = "--work-dir", paramLabel = "DIR", description = "Checkpoints (default: .rollcount/bench-growth).")
    Path workDir;

    /** What one size measured. */
    record Figures(
            long counters,
            long distinct,
            long events,
            double eps,
            double jobMicros,
            long checkpointMillis,
            long checkpointMaxMillis,
            long checkpointBytes,
            double stateBytesPerCounter,
            double redisBytesPerCounter,
            long heapPeakBytes,
            boolean checkpointAfterPass) {}

    /**
     * The straight line through two sizes, carried to {@code target} counters. {@code stateSlope}: checkpoint
     * bytes per additional distinct counter; {@code redisSlope}: Redis bytes per additional distinct counter
     * (NaN, and {@code redisBytes} -1, where Redis memory was not measured); {@code redisNodes}: Redis
     * masters of 64 GiB used to 75 % (0 if not measured); {@code jobCoresPer100kEps}: the job's cores for
     * 100,000 events/s at the larger size's CPU per event.
     */
    record Extrapolation(
            double stateSlope,
            double stateBytes,
            double redisSlope,
            double redisBytes,
            long redisNodes,
            double jobCoresPer100kEps) {}

    static final double GIB = 1024.0 * 1024 * 1024;

    static Extrapolation extrapolate(Figures small, Figures large, long target) {
        double dn = large.distinct() - small.distinct();
        double stateSlope = (large.checkpointBytes() - small.checkpointBytes()) / dn;
        double stateBytes = large.checkpointBytes() + stateSlope * (target - large.distinct());
        double redisSlope = Double.NaN, redisBytes = -1;
        long nodes = 0;
        if (small.redisBytesPerCounter() >= 0 && large.redisBytesPerCounter() >= 0) {
            double smallRedis = small.redisBytesPerCounter() * small.distinct();
            double largeRedis = large.redisBytesPerCounter() * large.distinct();
            redisSlope = (largeRedis - smallRedis) / dn;
            redisBytes = largeRedis + redisSlope * (target - large.distinct());
            nodes = (long) Math.ceil(redisBytes / (0.75 * 64 * GIB));
        }
        return new Extrapolation(
                stateSlope, stateBytes, redisSlope, redisBytes, nodes, large.jobMicros() * 100_000 / 1e6);
    }

    static long parseCount(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        long mult = 1;
        if (t.endsWith("k")) mult = 1_000;
        else if (t.endsWith("m")) mult = 1_000_000;
        else if (t.endsWith("g") || t.endsWith("b")) mult = 1_000_000_000;
        String digits = mult == 1 ? t : t.substring(0, t.length() - 1);
        try {
            long n = Math.round(Double.parseDouble(digits) * mult);
            if (n < 1_000) throw new NumberFormatException();
            return n;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    "'" + s + "' is not a counter count of at least 1000, such as 100k, 4M or 100M");
        }
    }

    /** The options of the other scenario, given: a usage error. */
    private void refuseOptionsOfTheOtherScenario() {
        List<String> others = scenario == Scenario.tail
                ? List.of("--events-per-counter", "--touch-pass", "--target")
                : List.of("--events-per-counter-hour", "--hours");
        for (String o : others)
            if (spec.commandLine().getParseResult().hasMatchedOption(o))
                throw new CommandLine.ParameterException(
                        spec.commandLine(), o + " does not apply to --scenario " + scenario);
    }

    @Override
    public Integer call() throws Exception {
        refuseOptionsOfTheOtherScenario();
        List<Long> counts = new ArrayList<>();
        long targetCount;
        try {
            for (String s : sizes) counts.add(parseCount(s));
            targetCount = parseCount(target);
            if (eventsPerCounter < 0 || (!touchPass && eventsPerCounter == 0))
                throw new IllegalArgumentException("--events-per-counter must be positive");
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        String url = redis != null ? redis : System.getenv().getOrDefault("ROLLCOUNT_REDIS", "redis://127.0.0.1:6379");
        Path dir = (workDir != null
                        ? workDir
                        : Path.of(
                                ".rollcount",
                                "bench-growth",
                                String.valueOf(ProcessHandle.current().pid())))
                .toAbsolutePath();
        PrintStream out = System.out;
        if (scenario == Scenario.tail) return tail(counts, url, dir, out);
        out.printf(
                Locale.ROOT,
                "bench growth: %szipf over %s counters, %.2f zipf events per counter, parallelism %d, RocksDB, checkpoints every 5 s, %s, max heap %d MiB%n",
                touchPass ? "one event per counter, then " : "",
                counts,
                eventsPerCounter,
                JobBench.PARALLELISM,
                noRedis ? "Redis writes built and discarded" : "Redis outputs",
                Runtime.getRuntime().maxMemory() >> 20);
        List<Figures> all = new ArrayList<>();
        try {
            for (long n : counts) all.add(measure(n, url, dir.resolve("n" + n), out));
        } finally {
            deleteQuietly(dir);
        }
        Figures small = all.get(0), large = all.get(all.size() - 1);
        if (all.size() > 1) {
            result(
                    out,
                    "bench.growth.ratio",
                    "from",
                    String.valueOf(small.counters()),
                    "to",
                    String.valueOf(large.counters()),
                    "counters_ratio",
                    f2(large.counters() / (double) small.counters()),
                    "distinct_ratio",
                    f2(large.distinct() / (double) small.distinct()),
                    "eps_ratio",
                    f2(large.eps() / small.eps()),
                    "job_cpu_per_event_ratio",
                    f2(large.jobMicros() / small.jobMicros()),
                    "checkpoint_ms_ratio",
                    f2(large.checkpointMillis() / (double) small.checkpointMillis()),
                    "checkpoint_bytes_ratio",
                    f2(large.checkpointBytes() / (double) small.checkpointBytes()),
                    "state_bytes_per_counter_ratio",
                    f2(large.stateBytesPerCounter() / small.stateBytesPerCounter()),
                    "redis_bytes_per_counter_ratio",
                    large.redisBytesPerCounter() < 0 || small.redisBytesPerCounter() < 0
                            ? "-1"
                            : f2(large.redisBytesPerCounter() / small.redisBytesPerCounter()),
                    "heap_peak_ratio",
                    f2(large.heapPeakBytes() / (double) small.heapPeakBytes()));
            Extrapolation x = extrapolate(small, large, targetCount);
            double gib = GIB;
            boolean redisMeasured = x.redisBytes() >= 0;
            result(
                    out,
                    "bench.growth.extrapolated",
                    "counters",
                    String.valueOf(targetCount),
                    "state_bytes_per_counter",
                    String.valueOf(Math.round(x.stateSlope())),
                    "state_gib",
                    f2(x.stateBytes() / gib),
                    "redis_bytes_per_counter",
                    redisMeasured ? String.valueOf(Math.round(x.redisSlope())) : "-1",
                    "redis_gib",
                    redisMeasured ? f2(x.redisBytes() / gib) : "-1",
                    "redis_nodes_64gib",
                    String.valueOf(x.redisNodes()),
                    "job_cores_per_100k_eps",
                    f2(x.jobCoresPer100kEps()),
                    "note",
                    "linear-from-" + small.distinct() + "-to-" + large.distinct() + "-distinct-counters"
                            + (redisMeasured ? "" : "-redis-not-measured"));
        }
        return 0;
    }

    /** The tail scenario over {@code counts} ({@link TailBench}). */
    private int tail(List<Long> counts, String url, Path dir, PrintStream out) throws Exception {
        TailBench tail = new TailBench(counts, eventsPerCounterHour, hours, noRedis, url, dir, out);
        try {
            tail.check();
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        try {
            tail.run();
        } finally {
            deleteQuietly(dir);
        }
        return 0;
    }

    private Figures measure(long counters, String url, Path dir, PrintStream out) throws Exception {
        long events = (touchPass ? counters + JobBench.PARALLELISM : 0) + Math.round(counters * eventsPerCounter);
        JobBench.Size size = new JobBench.Size(
                "growth", events, (int) Math.min(Integer.MAX_VALUE, counters), 100_000, 1, 10, 0, 0, 0, 50_000, 0);
        BenchRuns bench = new BenchRuns(size, url, dir, out);
        bench.checkpointInterval = java.time.Duration.ofSeconds(5);
        // a watermark that closes the windows of millions of counters holds the checkpoint barrier behind it for
        // minutes: measure that checkpoint rather than fail the job at Flink's default 10 minutes
        bench.checkpointTimeout = java.time.Duration.ofMinutes(60);
        Figures[] f = new Figures[1];
        bench.withCluster(() -> {
            BenchEvents zipf = bench.events(Workload.zipf, events);
            BenchEvents ev = touchPass ? zipf.withTouchPass() : zipf;
            long distinct = BenchRuns.distinctCounters(ev);
            bench.cleanRedis();
            System.gc();
            long memoryBefore = bench.redisUsedMemory();
            AtomicLong heapPeak = new AtomicLong();
            // the wall-clock time by which the source had made every event of the touch pass: a checkpoint
            // triggered after it holds every counter (its barrier follows those events)
            AtomicLong passMadeMillis = new AtomicLong(touchPass ? -1 : 0);
            BenchRuns.Measured m =
                    bench.measured(() -> bench.ours(ev, noRedis ? RedisWrites.DISCARDED : RedisWrites.SENT, t -> {
                        heapPeak.accumulateAndGet(
                                ManagementFactory.getMemoryMXBean()
                                        .getHeapMemoryUsage()
                                        .getUsed(),
                                Math::max);
                        if (passMadeMillis.get() < 0 && passMade(ev)) passMadeMillis.set(System.currentTimeMillis());
                    }));
            long redisBytes = bench.redisUsedMemory() - memoryBefore;
            BenchCluster.Run run = m.run();
            f[0] = new Figures(
                    counters,
                    distinct,
                    ev.count,
                    m.eps(ev.count),
                    m.jobMicros(ev.count),
                    run.lastCheckpointMillis,
                    run.maxCheckpointMillis,
                    run.lastCheckpointFullBytes,
                    run.lastCheckpointFullBytes < 0 ? -1 : run.lastCheckpointFullBytes / (double) distinct,
                    noRedis ? -1 : redisBytes / (double) distinct,
                    heapPeak.get(),
                    passMadeMillis.get() >= 0 && run.lastCheckpointTriggerMillis >= passMadeMillis.get());
        });
        print(f[0], out);
        return f[0];
    }

    /** The {@code RESULT bench.growth} line of one size. */
    private void print(Figures x, PrintStream out) {
        result(
                out,
                "bench.growth",
                "counters",
                String.valueOf(x.counters()),
                "distinct",
                String.valueOf(x.distinct()),
                "events",
                String.valueOf(x.events()),
                "eps",
                String.format(Locale.ROOT, "%.0f", x.eps()),
                "job_cpu_us_per_event",
                f2(x.jobMicros()),
                "checkpoint_ms",
                String.valueOf(x.checkpointMillis()),
                "checkpoint_max_ms",
                String.valueOf(x.checkpointMaxMillis()),
                "checkpoint_bytes",
                String.valueOf(x.checkpointBytes()),
                "state_bytes_per_counter",
                String.format(Locale.ROOT, "%.0f", x.stateBytesPerCounter()),
                "redis_bytes_per_counter",
                String.format(Locale.ROOT, "%.0f", x.redisBytesPerCounter()),
                "heap_peak_mb",
                String.valueOf(x.heapPeakBytes() / (1024 * 1024)),
                "checkpoint_after_pass",
                String.valueOf(x.checkpointAfterPass()),
                "redis",
                noRedis ? "discarded" : "written");
    }

    /** Whether every source subtask has made the last event of its part's touch pass (whichever part it reads). */
    private static boolean passMade(BenchEvents ev) {
        for (int subtask = 0; subtask < ev.parallelism; subtask++) {
            long last = BenchClock.LAST_INDEX.get(subtask);
            if (last < 0 || last % ev.partSize() < ev.touchPerPart() - 1) return false;
        }
        return true;
    }

    /** Deletes a folder of the benchmark and what it holds, as far as it can. */
    static void deleteQuietly(Path dir) {
        try (var paths = java.nio.file.Files.walk(dir)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList())
                java.nio.file.Files.deleteIfExists(p);
        } catch (java.io.IOException | RuntimeException ignored) {
            // a leftover folder of a benchmark is harmless
        }
    }

    private static String f2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    private static void result(PrintStream out, String benchmark, String... pairs) {
        StringBuilder sb = new StringBuilder("RESULT ").append(benchmark);
        for (int i = 0; i < pairs.length; i += 2)
            sb.append(' ').append(pairs[i]).append('=').append(pairs[i + 1]);
        out.println(sb);
        out.flush();
    }
}
