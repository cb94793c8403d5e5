package io.rollcount.cli;

import io.rollcount.job.gen.EventGenerator;
import java.io.BufferedOutputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.zip.GZIPOutputStream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ./rollcount generate}: a seeded input file of the benchmark workloads, for trying the job on files. */
@Command(
        name = "generate",
        mixinStandardHelpOptions = true,
        description =
                "Write a seeded .jsonl or .jsonl.gz file of skewed events (with redeliveries, decrements and, with --bad, bad lines).")
final class GenerateCommand implements Callable<Integer> {

    @Option(names = "--out", required = true, paramLabel = "FILE", description = "Output file; .gz compresses.")
    Path out;

    @Option(names = "--events", defaultValue = "200000", description = "Number of records (default: ${DEFAULT-VALUE}).")
    long events;

    @Option(
            names = "--workload",
            defaultValue = "zipf",
            description = "uniform, zipf or viral (default: ${DEFAULT-VALUE}).")
    EventGenerator.Workload workload;

    @Option(
            names = "--counters",
            defaultValue = "10000",
            description = "Distinct counters (default: ${DEFAULT-VALUE}).")
    int counters;

    @Option(names = "--users", defaultValue = "5000", description = "Distinct users (default: ${DEFAULT-VALUE}).")
    int users;

    @Option(
            names = "--rate",
            defaultValue = "1000",
            description = "Events per second of event time (default: ${DEFAULT-VALUE}).")
    double rate;

    @Option(
            names = "--start",
            defaultValue = "1764000000000",
            description = "Event time of the first record, epoch ms (default: ${DEFAULT-VALUE}, 2025-11-24T16:00:00Z).")
    long start;

    @Option(
            names = "--bad",
            defaultValue = "0.001",
            description = "Share of bad lines, of every kind in turn (default: ${DEFAULT-VALUE}).")
    double bad;

    @Option(
            names = "--no-ts",
            description = "Leave out 'ts': event time is then the time a line is read (the bundled sample).")
    boolean noTs;

    @Option(names = "--seed", defaultValue = "42", description = "Random seed (default: ${DEFAULT-VALUE}).")
    long seed;

    @Override
    public Integer call() throws Exception {
        EventGenerator gen = new EventGenerator(seed, workload, counters, users, start, rate, 3_000, 0.02);
        String[][] badLines = EventGenerator.badLines(start);
        long every = bad > 0 ? Math.max(1, Math.round(1 / bad)) : Long.MAX_VALUE;
        if (out.toAbsolutePath().getParent() != null)
            Files.createDirectories(out.toAbsolutePath().getParent());
        OutputStream file = new BufferedOutputStream(Files.newOutputStream(out), 1 << 16);
        if (out.getFileName().toString().endsWith(".gz")) file = new GZIPOutputStream(file, 1 << 16);
        long badCount = 0;
        try (OutputStream o = file) {
            for (long i = 1; i <= events; i++) {
                if (i % every == 0) {
                    o.write(badLines[(int) (badCount++ % badLines.length)][0].getBytes(StandardCharsets.UTF_8));
                } else {
                    String line = gen.next().line();
                    if (noTs) line = line.replaceFirst(",\"ts\":\\d+", "");
                    o.write(line.getBytes(StandardCharsets.UTF_8));
                }
                o.write('\n');
            }
        }
        System.out.printf("rollcount: wrote %,d records (%,d bad) to %s%n", events, badCount, out);
        return 0;
    }
}
