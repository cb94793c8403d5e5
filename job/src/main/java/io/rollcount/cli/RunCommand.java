package io.rollcount.cli;

import io.rollcount.job.JobOptions;
import io.rollcount.job.RollcountJob;
import io.rollcount.job.files.InputFiles;
import io.rollcount.job.ops.DropDuplicates;
import io.rollcount.job.ops.PreAggregate;
import io.rollcount.job.ops.RouteEvents;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisSink;
import java.io.IOException;
import java.io.PrintStream;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import redis.clients.jedis.Jedis;

/** {@code ./rollcount run [options]}: the job on a local MiniCluster, with a progress line and a summary. */
@Command(name = "run", mixinStandardHelpOptions = true, sortOptions = false, showDefaultValues = false,
        description = "Run the job on a local Flink MiniCluster (RocksDB, checkpoints), with the same options as on a cluster.")
final class RunCommand implements Callable<Integer> {

    @Mixin
    JobOptions options = new JobOptions();

    @Override
    public Integer call() throws Exception {
        options.validate();
        checkRedis(options);
        InputFiles.Scan scan = options.sourceKind() == JobOptions.SourceKind.files ? scanInput(options.input) : null;
        if (scan != null) scan.skipped().forEach(s -> System.err.println("rollcount: skipping " + s));
        long inputBytes = scan != null ? inputSize(scan) : -1;
        StreamExecutionEnvironment env = LocalFlink.environment(options);
        RollcountJob.assemble(env, options);
        long started = System.nanoTime();
        JobClient job = env.executeAsync("rollcount");
        PrintStream err = System.err;
        long lastEvents = 0;
        long lastTime = System.nanoTime();
        boolean terminal = System.console() != null;
        int ticks = 0;
        while (!job.getJobExecutionResult().isDone()) {
            try {
                job.getJobExecutionResult().get(1, TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                Map<String, Object> acc = accumulatorsOrEmpty(job);
                long events = longOf(acc, RouteEvents.EVENTS_READ);
                long bytes = longOf(acc, RouteEvents.BYTES_READ);
                long now = System.nanoTime();
                double rate = (events - lastEvents) / ((now - lastTime) / 1e9);
                lastEvents = events;
                lastTime = now;
                String share = inputBytes > 0 ? String.format("%5.1f%% of input, ", Math.min(100.0, 100.0 * bytes / inputBytes)) : "";
                if (terminal || ++ticks % 5 == 0) {
                    err.printf("%srollcount: %s%,d events read, %,.0f events/s, %,d Redis keys written%s", terminal ? "\r" : "",
                            share, events, rate, RedisSink.KEYS_WRITTEN.sum(), terminal ? "   " : "\n");
                    err.flush();
                }
            }
        }
        err.println();
        JobExecutionResult result = job.getJobExecutionResult().get();
        double seconds = (System.nanoTime() - started) / 1e9;
        printSummary(result.getAllAccumulatorResults(), seconds, System.out);
        if (scan != null) printSkipped(scan, System.out);
        return 0;
    }

    private static Map<String, Object> accumulatorsOrEmpty(JobClient job) {
        try {
            return job.getAccumulators().get(2, TimeUnit.SECONDS);
        } catch (Exception e) {
            return Map.of();
        }
    }

    static long longOf(Map<String, Object> acc, String name) {
        Object v = acc.get(name);
        return v instanceof Number n ? n.longValue() : 0L;
    }

    static void printSummary(Map<String, Object> acc, double seconds, PrintStream out) {
        long read = longOf(acc, RouteEvents.EVENTS_READ);
        out.printf("rollcount: done in %.1f s, %,.0f events/s%n", seconds, read / Math.max(seconds, 1e-9));
        out.printf("  events read        %,d%n", read);
        out.printf("  counted            %,d%n", longOf(acc, PreAggregate.COUNTED));
        out.printf("  deduplicated       %,d%n", longOf(acc, DropDuplicates.DUPLICATES));
        Map<String, Long> dlq = new TreeMap<>();
        for (Map.Entry<String, Object> e : acc.entrySet()) {
            if (e.getKey().startsWith(RouteEvents.DLQ_PREFIX) && e.getValue() instanceof Number n) {
                dlq.put(e.getKey().substring(RouteEvents.DLQ_PREFIX.length()), n.longValue());
            }
        }
        long dead = dlq.values().stream().mapToLong(Long::longValue).sum();
        out.printf("  dead-lettered      %,d%n", dead);
        dlq.forEach((reason, n) -> out.printf("    %-16s %,d%n", reason, n));
        out.printf("  late               %,d%n", dlq.getOrDefault("late", 0L));
        out.printf("  Redis keys written %,d%n", RedisSink.KEYS_WRITTEN.sum());
        long rejected = RedisSink.KEYS_REJECTED.sum();
        if (rejected > 0) {
            out.printf("  Redis keys rejected %,d, not written (e.g. %s); see the log's WARN lines%n", rejected, RedisSink.FIRST_REJECTED.get());
        }
    }

    static void checkRedis(JobOptions options) {
        RedisEndpoint endpoint = RedisEndpoint.fromOptions(options);
        try (Jedis jedis = endpoint.connect()) {
            jedis.ping();
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot reach Redis at " + endpoint + " (" + Main.oneLine(e)
                    + "): start redis-server, or point --redis / $ROLLCOUNT_REDIS at one");
        }
    }

    /** The files the job will read and those it skips (the job's own enumeration applies the same rules). */
    static InputFiles.Scan scanInput(String input) throws IOException {
        if (!Files.exists(Path.of(input), java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
            throw new IllegalArgumentException("--input " + input + " does not exist");
        }
        return InputFiles.scan(Path.of(input).toAbsolutePath().toString());
    }

    /** The summary's list of files not read, with the reason of each. */
    static void printSkipped(InputFiles.Scan scan, PrintStream out) {
        out.printf("  input files read   %,d%n", scan.inputs().size());
        if (scan.skipped().isEmpty()) return;
        out.printf("  input skipped      %,d%n", scan.skipped().size());
        for (InputFiles.Skipped s : scan.skipped()) out.printf("    %s: %s%n", s.path(), s.reason());
    }

    /** Bytes of input: file sizes, and for gzip the uncompressed size from the trailer (ISIZE, mod 2^32). */
    static long inputSize(InputFiles.Scan scan) throws IOException {
        long total = 0;
        for (InputFiles.Input in : scan.inputs()) {
            Path p = Path.of(in.path().toUri());
            total += p.getFileName().toString().endsWith(".gz") ? gzipSize(p) : in.size();
        }
        return total;
    }

    private static long gzipSize(Path p) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(p.toFile(), "r")) {
            if (f.length() < 4) return 0;
            f.seek(f.length() - 4);
            byte[] b = new byte[4];
            f.readFully(b);
            return (b[0] & 0xffL) | (b[1] & 0xffL) << 8 | (b[2] & 0xffL) << 16 | (b[3] & 0xffL) << 24;
        }
    }

}
