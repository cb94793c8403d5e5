package io.rollcount.chaos;

import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.Callable;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code ./rollcount chaos}: a long run under overlapping faults that must end exact; see {@link ChaosRun}. */
@Command(
        name = "chaos",
        mixinStandardHelpOptions = true,
        description = {
            "Runs the job on a local multi-process Flink cluster (deploy/local-cluster) with its own Kafka broker and Redis,",
            "under a live stream and a seeded schedule of faults (kill -9 of a TaskManager, of the JobManager, of the broker;",
            "Redis stopped or stalled; stop-with-savepoint and rescale; malformed records; attack counter ids), then checks every",
            "total, window, rollup and dead letter against the truth. Writes chaos-report.txt and chaos-rate.png to --dir and",
            "ends with a RESULT chaos line; exit 0 when exact, 1 otherwise."
        })
public final class ChaosCommand implements Callable<Integer> {
    private static final Pattern DURATION = Pattern.compile("(\\d+)(s|m|h)");

    @Spec
    CommandSpec spec;

    @Option(
            names = "--duration",
            defaultValue = "20m",
            description =
                    "How long the stream runs, e.g. 90s, 20m, 2h (default: ${DEFAULT-VALUE}); 15m or more: a fault every 1 to 3 minutes, every kind at least twice; less: every 20 to 35 s, every kind once.")
    String duration;

    @Option(
            names = "--seed",
            defaultValue = "1",
            description = "Seed of the fault schedule and of the stream (default: ${DEFAULT-VALUE}).")
    long seed;

    @Option(
            names = "--rate",
            defaultValue = "500",
            description = "Events per second of the live stream (default: ${DEFAULT-VALUE}).")
    int rate;

    @Option(
            names = "--dir",
            paramLabel = "DIR",
            description = "Folder of the run: cluster, broker, Redis, report (default: .rollcount/chaos/seed-N-TIME).")
    Path dir;

    static Duration parseDuration(String s) {
        Matcher m = DURATION.matcher(s.trim());
        if (!m.matches())
            throw new IllegalArgumentException("--duration: '" + s + "' is not a duration such as 90s, 20m or 2h");
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "s" -> Duration.ofSeconds(n);
            case "m" -> Duration.ofMinutes(n);
            default -> Duration.ofHours(n);
        };
    }

    @Override
    public Integer call() throws Exception {
        Duration d;
        try {
            d = parseDuration(duration);
            if (d.toSeconds() < 180)
                throw new IllegalArgumentException("--duration: at least 3m (every fault kind needs a slot)");
            if (rate < 10) throw new IllegalArgumentException("--rate: at least 10 events per second");
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), e.getMessage());
        }
        Path folder = dir != null
                ? dir
                : Path.of(
                        ".rollcount",
                        "chaos",
                        "seed-" + seed + "-"
                                + LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
        ChaosRun.Options base = ChaosRun.Options.of(d, seed, folder.toAbsolutePath());
        ChaosRun.Options o = new ChaosRun.Options(
                base.duration(),
                base.seed(),
                rate,
                base.counters(),
                base.dir(),
                base.first(),
                base.minGap(),
                base.maxGap(),
                base.tail(),
                base.eachAtLeast(),
                base.taskmanagers());
        ChaosRun.Outcome outcome;
        try (ChaosRun run = new ChaosRun(o, System.out)) {
            outcome = run.run();
        }
        System.out.println("report: " + outcome.report() + " (chart " + outcome.chart() + ")");
        for (String p : outcome.problems()) System.out.println("problem: " + p);
        System.out.println(outcome.resultLine());
        return outcome.pass() ? 0 : 1;
    }
}
