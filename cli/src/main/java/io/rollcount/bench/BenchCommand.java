package io.rollcount.bench;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code rollcount bench job [--quick]}, {@code bench peers}, {@code bench growth}; {@code rollcount bench sketches} is
 * routed by the root script.
 */
@Command(
        name = "bench",
        mixinStandardHelpOptions = true,
        description = "Benchmarks, side by side with their references (see docs/benchmarks.md).",
        footer = {
            "",
            "Also: ./rollcount bench sketches [--quick] [--only REGEX], the sketches' JMH benchmarks against Apache"
                    + " DataSketches (--help: its options)."
        },
        subcommands = {BenchCommand.Job.class, PeersCommand.class, GrowthBench.class})
public final class BenchCommand implements Callable<Integer> {

    @Override
    public Integer call() {
        new CommandLine(this).usage(System.out);
        return 0;
    }

    @Command(
            name = "job",
            mixinStandardHelpOptions = true,
            description =
                    "Rollcount against a textbook DataStream job and Flink SQL (discarding their results, and delivering ours' count outputs in Redis and Kafka), the Redis INCRBY design and the per-event limit, with CPU per event of the job, Redis and the Kafka broker; prints RESULT lines.")
    static final class Job implements Callable<Integer> {
        @Option(
                names = "--quick",
                description =
                        "30,000 events per workload and one round: not a steady state (about 4 minutes on 2 shared cores).")
        boolean quick;

        @Option(
                names = "--tiny",
                hidden = true,
                description = "Seconds: for the automated test only; the figures mean nothing.")
        boolean tiny;

        @Option(
                names = "--only-ours",
                hidden = true,
                description = "Only Rollcount on this workload, twice: for profiling.")
        io.rollcount.job.gen.EventGenerator.Workload onlyOurs;

        @Option(
                names = "--no-redis",
                hidden = true,
                description =
                        "With --only-ours: Redis writes discarded instead of sent, to tell the job's own cost from Redis's.")
        boolean noRedis;

        @Option(
                names = "--with-floor",
                hidden = true,
                description =
                        "With --only-ours: after a warm-up, Rollcount and its plain-writes floor, alternated (ours, floor, floor, ours,"
                                + " ours, floor), each with Redis's CPU per event: to compare write paths.")
        boolean withFloor;

        @Option(
                names = "--only-kafka",
                hidden = true,
                description =
                        "Only the Kafka mode (its warm-up, ours and the textbook job): to compare Kafka settings.")
        boolean onlyKafka;

        @Option(
                names = "--kafka-properties",
                hidden = true,
                paramLabel = "FILE",
                description = "The Kafka mode's --kafka.properties, for both jobs: to compare producer settings.")
        Path kafkaProperties;

        @Option(names = "--no-kafka", description = "Skip the Kafka mode.")
        boolean noKafka;

        @Option(
                names = "--redis",
                paramLabel = "URL",
                description = "Redis to write to (default: $ROLLCOUNT_REDIS or redis://127.0.0.1:6379).")
        String redis;

        @picocli.CommandLine.Spec
        picocli.CommandLine.Model.CommandSpec spec;

        @Option(
                names = "--policies",
                paramLabel = "FILE",
                defaultValue = "samples/policies.yaml",
                description =
                        "Run the zipf workload once more under these namespace policies, beside the default, and print their savings; 'none' skips it (default: ${DEFAULT-VALUE}).")
        String policies;

        @Option(
                names = "--work-dir",
                paramLabel = "DIR",
                description = "Checkpoints, broker data (default: .rollcount/bench).")
        Path workDir;

        @Override
        public Integer call() throws Exception {
            JobBench.Size size = tiny ? JobBench.Size.TINY : quick ? JobBench.Size.QUICK : JobBench.Size.FULL;
            String url =
                    redis != null ? redis : System.getenv().getOrDefault("ROLLCOUNT_REDIS", "redis://127.0.0.1:6379");
            Path dir = workDir != null
                    ? workDir
                    : Path.of(
                            ".rollcount",
                            "bench",
                            String.valueOf(ProcessHandle.current().pid()));
            try {
                BenchPlan.Mode mode = mode();
                Path comparePolicies = null;
                if (!"none".equals(policies)) {
                    Path p = Path.of(policies);
                    if (!java.nio.file.Files.isRegularFile(p)
                            && spec.commandLine().getParseResult().hasMatchedOption("--policies")) {
                        System.err.println("rollcount bench: --policies " + policies
                                + " does not exist ('none' skips the policies run)");
                        return 2;
                    }
                    if (java.nio.file.Files.isRegularFile(p)) {
                        io.rollcount.job.policy.PoliciesFile.load(
                                p, 100, 86_400_000L); // a bad file: one line, exit 2, before anything runs
                        comparePolicies = p.toAbsolutePath();
                    } else {
                        System.out.println(
                                "bench job: no " + policies
                                        + " here (run from the repository root, or --policies FILE): the policies run is skipped");
                    }
                }
                if (mode == null) mode = new BenchPlan.Full(!noKafka, comparePolicies);
                String kafka = kafkaProperties == null
                        ? null
                        : kafkaProperties.toAbsolutePath().toString();
                new JobBench(new BenchPlan(size, url, dir.toAbsolutePath(), kafka, mode), System.out).run();
            } finally {
                deleteQuietly(dir);
            }
            return 0;
        }

        /**
         * The mode the profiling options ask for, their combinations checked; null: none, the full run.
         * {@code --only-kafka} goes before {@code --only-ours}.
         */
        private BenchPlan.Mode mode() {
            if (withFloor && (onlyOurs == null || noRedis))
                throw new CommandLine.ParameterException(
                        spec.commandLine(), "--with-floor needs --only-ours and Redis (not --no-redis)");
            if (noRedis && onlyOurs == null)
                throw new CommandLine.ParameterException(spec.commandLine(), "--no-redis needs --only-ours");
            if (onlyKafka) return new BenchPlan.OnlyKafka();
            if (onlyOurs != null) return new BenchPlan.OnlyOurs(onlyOurs, withFloor, noRedis);
            return null;
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
}
