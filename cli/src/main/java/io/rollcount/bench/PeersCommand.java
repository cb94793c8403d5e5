package io.rollcount.bench;

import io.rollcount.job.gen.EventGenerator.Workload;
import java.io.PrintStream;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code rollcount bench peers}: ours against Flink SQL doing the same work and against ours in full, in Kafka
 * mode ({@link PeersBench}).
 */
@Command(
        name = "peers",
        mixinStandardHelpOptions = true,
        description =
                "Kafka mode: Flink SQL with deduplication (sql-exact), ours without unique users, trending and top-K (ours-exact), and ours in full (ours-full), on the same topic; job, Redis and broker CPU per event, Redis values checked against the input's exact sums; prints RESULT lines.")
final class PeersCommand implements Callable<Integer> {
    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Option(
            names = "--workload",
            defaultValue = "zipf",
            paramLabel = "zipf|uniform|viral",
            description = "zipf, uniform or viral (default: ${DEFAULT-VALUE}).")
    Workload workload;

    @Option(
            names = "--events",
            defaultValue = "2000000",
            paramLabel = "N",
            description = "Measured events per variant and round (default: ${DEFAULT-VALUE}).")
    long events;

    @Option(
            names = "--warmup",
            defaultValue = "1000000",
            paramLabel = "N",
            description = "Events of each variant's unmeasured warm-up run (default: ${DEFAULT-VALUE}; 0: none).")
    long warmup;

    @Option(
            names = "--rounds",
            defaultValue = "1",
            paramLabel = "N",
            description =
                    "Measured rounds, the variants' order rotated each round; figures are medians (default: ${DEFAULT-VALUE}).")
    int rounds;

    @Option(
            names = "--users",
            defaultValue = "100000",
            paramLabel = "N",
            description =
                    "Distinct users the events draw theirs from, uniformly (default: ${DEFAULT-VALUE}; fewer: more repeat users per counter).")
    int users;

    @Option(
            names = "--redis",
            paramLabel = "URL",
            description = "Redis to write to (default: $ROLLCOUNT_REDIS or redis://127.0.0.1:6379).")
    String redis;

    @Option(
            names = "--work-dir",
            paramLabel = "DIR",
            description = "Checkpoints, broker data; deleted at the end (default: .rollcount/bench/peers-<pid>).")
    Path workDir;

    @Override
    public Integer call() throws Exception {
        if (events < 1_000 || events > 1_000_000_000L) throw usage("--events must be between 1000 and 1000000000");
        if (warmup < 0 || warmup > 1_000_000_000L) throw usage("--warmup must be between 0 and 1000000000");
        if (rounds < 1 || rounds > 20) throw usage("--rounds must be between 1 and 20");
        if (users < 1 || users > 100_000_000) throw usage("--users must be between 1 and 100000000");
        String url = redis != null ? redis : System.getenv().getOrDefault("ROLLCOUNT_REDIS", "redis://127.0.0.1:6379");
        Path dir = workDir != null
                ? workDir
                : Path.of(
                        ".rollcount",
                        "bench",
                        "peers-" + ProcessHandle.current().pid());
        run(workload, events, warmup, rounds, users, url, dir.toAbsolutePath(), System.out);
        return 0;
    }

    /** The benchmark with these settings, its lines to {@code out}; {@code dir} is deleted at the end. */
    static void run(
            Workload workload,
            long events,
            long warmup,
            int rounds,
            int users,
            String redisUrl,
            Path dir,
            PrintStream out)
            throws Exception {
        JobBench.Size size =
                new JobBench.Size("peers", events, 1_000_000, users, rounds, 0, events, 0, 0, 50_000, warmup);
        BenchRuns runs = new BenchRuns(size, redisUrl, dir, out);
        long started = System.nanoTime();
        try {
            runs.withCluster(() -> new PeersBench(runs, out, workload, events, warmup, rounds).run());
        } finally {
            deleteQuietly(dir);
        }
        out.printf("bench peers: done in %.0f s%n", (System.nanoTime() - started) / 1e9);
    }

    private CommandLine.ParameterException usage(String message) {
        return new CommandLine.ParameterException(spec.commandLine(), message);
    }

    private static void deleteQuietly(Path dir) {
        try (var files = java.nio.file.Files.walk(dir)) {
            files.sorted(java.util.Comparator.reverseOrder())
                    .forEach(p -> p.toFile().delete());
        } catch (java.io.IOException | RuntimeException ignored) {
            // best effort
        }
    }
}
