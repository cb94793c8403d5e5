package io.rollcount.cli;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Launcher;
import io.rollcount.job.RefusedStartException;
import io.rollcount.job.util.DurationConverter;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ./rollcount demo}: the whole system on one machine (contract section 5). An in-process Kafka broker
 * with its data in a fresh temporary folder, a generator thread producing the {@code viral} workload to
 * {@code counter-events} (2 partitions) at a paced rate with wall-clock event times, the job on a local
 * MiniCluster (RocksDB, checkpoints, the same {@link JobConnectors#assemble} as {@code ./rollcount run}) writing
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

    /** Set by Ctrl-C ({@link DemoRun}) and {@link #requestStop}: the running demo stops at its next tick. */
    volatile boolean stopRequested;

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

        JobSettings settings;
        try {
            settings = jobSettings();
        } catch (IllegalArgumentException e) {
            err.println("rollcount demo: " + e.getMessage());
            err.flush();
            return 2;
        }
        // The start checks of every start of the job (Redis first: without it nothing starts). The demo clears its
        // own counters as it starts (DemoRun), so an earlier job's keys do not refuse it; a job running on the
        // prefix does.
        Launcher launcher = Launcher.of(settings, Launcher.Place.HERE, "./rollcount run")
                .startingOver()
                .holdingLease(UUID.randomUUID().toString());
        try {
            launcher.checkStart(null, null);
        } catch (RefusedStartException | IllegalStateException e) {
            err.println("rollcount demo: " + e.getMessage());
            err.flush();
            return e instanceof RefusedStartException ? 2 : 1;
        }
        return new DemoRun(this, settings, launcher, metrics, out, err).run();
    }

    /**
     * The job's settings from the command line's options, for a Kafka broker whose address {@link DemoRun} gives
     * them once it has started it; a refused option is an {@link IllegalArgumentException} naming it.
     */
    private JobSettings jobSettings() {
        return redisOptions
                .applyTo(JobSettings.builder())
                .set("--source", JobSettings.SourceKind.kafka)
                .set("--kafka.bootstrap", "127.0.0.1:9") // replaced once the broker has its port; a Kafka job needs one
                .set("--kafka.group-id", "rollcount-demo")
                .set(
                        "--kafka.transactional-id-prefix",
                        "rollcount-demo-" + UUID.randomUUID().toString().substring(0, 8))
                .set("--checkpoint.interval", checkpointInterval)
                .set("--parallelism", parallelism)
                .set("--policies", policies)
                .build();
    }

    /** Asks the demo to stop as Ctrl-C does (for tests). */
    void requestStop() {
        stopRequested = true;
    }
}
