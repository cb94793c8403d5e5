package io.rollcount.cli;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobOptions;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Launcher;
import io.rollcount.job.RefusedStartException;
import io.rollcount.job.files.InputFiles;
import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.LocalMetrics;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.redis.PrefixGuard;
import io.rollcount.job.redis.PrefixInUseException;
import io.rollcount.job.util.Messages;
import java.io.IOException;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import redis.clients.jedis.UnifiedJedis;

/**
 * {@code ./rollcount run [options]}: the job on a local MiniCluster, with a progress line and a summary.
 *
 * <p>Checkpoints are retained under {@code .rollcount/checkpoints/<prefix>/<job id>/chk-N} (or under
 * {@code --checkpoint.dir}/{@code <prefix>}), and a run resumes from the latest one of its key prefix by
 * default, saying so in one line: a Kafka job restarted with {@code run} goes on from its state and its
 * committed offsets, instead of starting empty at those offsets and silently undercounting (its smaller
 * totals would never replace the larger ones). {@code --resume PATH} picks a checkpoint, {@code --fresh}
 * starts empty and deletes the prefix's keys. A start that would undercount or that finds another job on
 * the prefix is refused with exit code {@value #EXIT_REFUSED} and one line that says what to do
 * (see {@link PrefixGuard}).
 *
 * <p>Each job folder holds the job's {@link JobIdentity} ({@value JobIdentity#FILE}); a job that ended with exit
 * code 0 also leaves {@value #FINISHED_FILE}, there and in the folders of the prefix's earlier jobs. The latest checkpoint is resumed automatically only when its job has
 * not ended and is of this run's identity; a checkpoint of another identity, or of none recorded, is refused in one
 * line naming whose it is. A finished job's checkpoints, taken mid-run, are never resumed automatically: the next
 * run on the prefix meets the prefix check, as after a job that left no checkpoint.
 */
@Command(
        name = "run",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        showDefaultValues = false,
        description =
                "Run the job on a local Flink MiniCluster (RocksDB, checkpoints), with the same options as on a cluster.")
final class RunCommand implements Callable<Integer> {

    /** Exit code of a refused start (another job on the key prefix, or an empty start over an earlier job's counts). */
    static final int EXIT_REFUSED = 2;
    /** The file beside a job's checkpoints that holds its lease token, so that a resumed run takes the lease back. */
    static final String LEASE_TOKEN_FILE = "lease-token";
    /**
     * The file a job that ended (exit code 0) leaves in its folder and in those of the prefix's earlier jobs: their
     * checkpoints are never resumed automatically.
     */
    static final String FINISHED_FILE = "finished";

    @Mixin
    JobOptions options = new JobOptions();

    /** What the job runs with: made from {@link #options}, as the command line gives them, once as the run starts. */
    private JobSettings settings;

    @Spec
    CommandSpec spec;

    @Option(
            names = "--resume",
            paramLabel = "PATH",
            description =
                    "Resume from this checkpoint (a chk-N folder) or savepoint, whoever's it is. Default: the latest retained checkpoint of the key prefix, if its job has not ended and has this run's Redis and source.")
    String resume;

    @Option(
            names = "--metrics.port",
            paramLabel = "PORT",
            description =
                    "Serve Flink's and Rollcount's metrics for Prometheus at http://HOST:PORT/metrics (default: off).")
    Integer metricsPort;

    /** Runs once the start checks have passed, before the job is submitted: tests start two runs together. */
    Runnable afterPrefixCheck = () -> {};

    /** The running job, for tests that stop it. */
    volatile JobClient running;
    /** The input files and the ones skipped, for a files run. */
    private InputFiles.Scan scan;

    @Override
    public Integer call() throws Exception {
        try {
            return start();
        } catch (RefusedStartException e) {
            return refuse(spec.commandLine().getErr(), e.getMessage());
        }
    }

    /** The settings, made once from the options; the start checks ({@link Launcher}); the job, followed until it ends. */
    private int start() throws Exception {
        settings = options.toSettings(spec.commandLine().getParseResult());
        if (resume != null && settings.fresh)
            throw new IllegalArgumentException("--resume and --fresh exclude each other");
        if (metricsPort != null) {
            MetricsPort.validate("--metrics.port", metricsPort);
            if (!MetricsPort.isFree(metricsPort)) {
                spec.commandLine().getErr().println("rollcount: " + MetricsPort.inUse("--metrics.port", metricsPort));
                spec.commandLine().getErr().flush();
                return EXIT_REFUSED;
            }
        }
        scan = settings.source == JobSettings.SourceKind.files ? scanInput(settings.input) : null;
        if (scan != null) scan.skipped().forEach(s -> System.err.println("rollcount: skipping " + s));
        long inputBytes = scan != null ? inputSize(scan) : -1;
        String base = checkpointBase(settings);
        Path localBase = localPath(base);
        PrintWriter says = spec.commandLine().getErr();
        JobIdentity identity = localBase != null ? JobIdentity.of(settings) : null;
        String restore = resume;
        if (restore == null && !settings.fresh && localBase != null) {
            Path latest = latestCheckpoint(localBase);
            if (latest != null && !finished(latest)) {
                String foreign = foreignCheckpoint(latest, identity);
                if (foreign != null) throw new RefusedStartException(foreign);
                restore = latest.toString();
            }
        }
        // A resumed run holds the lease with the token of the run it continues (kept beside its checkpoints, and
        // in the writers' state); a new run with a new one. Unknown (a checkpoint from elsewhere): the writers' state
        // decides.
        String leaseToken = restore != null
                ? leaseTokenOf(localPath(restore))
                : UUID.randomUUID().toString();
        Launcher launcher = Launcher.of(
                        settings,
                        Launcher.Place.HERE,
                        "--resume PATH, a chk-N folder of its checkpoints; none under "
                                + (localBase != null ? localBase : base))
                .holdingLease(leaseToken);
        launcher.checkStart(restore, resume != null ? "--resume" : "the latest checkpoint");
        afterPrefixCheck.run();
        Configuration extra = new Configuration();
        extra.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
        extra.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, base);
        if (restore != null) {
            extra.set(StateRecoveryOptions.SAVEPOINT_PATH, restore);
            // a files run over other input leaves the earlier run's file source state unclaimed
            extra.set(StateRecoveryOptions.SAVEPOINT_IGNORE_UNCLAIMED_STATE, true);
            says.printf(
                    "rollcount: resuming from checkpoint %s (%s of key prefix '%s'; --fresh starts over, --resume PATH picks another)%n",
                    restore, resume != null ? "--resume" : "the latest", settings.redis.keyPrefix());
            says.flush();
        }
        if (metricsPort != null) {
            MetricsPort.configure(extra, metricsPort);
            says.println("rollcount: " + MetricsPort.serving(metricsPort));
            says.flush();
        }
        if (settings.policiesFile != null) {
            settings.policies().describe().forEach(line -> says.println("rollcount: " + line));
            says.flush();
        }
        CheckpointFailures.listen();
        LocalMetrics metrics = LocalMetrics.addTo(extra);
        StreamExecutionEnvironment env = LocalFlink.environment(settings, extra);
        launcher.assemble(env);
        long started = System.nanoTime();
        JobClient job = env.executeAsync("rollcount");
        running = job;
        Path jobDir = localBase != null ? localBase.resolve(job.getJobID().toHexString()) : null;
        if (jobDir != null && leaseToken != null) writeLeaseToken(jobDir, leaseToken);
        if (jobDir != null) writeIdentity(jobDir, identity);
        try {
            int code = follow(job, metrics, inputBytes, started);
            if (code == 0 && jobDir != null) markFinished(localBase, jobDir);
            return code;
        } finally {
            releaseLease(settings, leaseToken);
        }
    }

    /** A refused start: one line that says what to do, exit code {@value #EXIT_REFUSED}. */
    private static int refuse(PrintWriter says, String refusal) {
        says.println("rollcount: " + refusal);
        says.flush();
        return EXIT_REFUSED;
    }

    private int follow(JobClient job, LocalMetrics metrics, long inputBytes, long started) throws Exception {
        try {
            return followOrThrow(job, metrics, inputBytes, started);
        } catch (java.util.concurrent.ExecutionException e) {
            System.err.println();
            // started at the same moment as another job on the prefix, whose writers took the lease first
            String inUse = PrefixInUseException.messageIn(e);
            if (inUse != null) return refuse(spec.commandLine().getErr(), inUse);
            if (org.apache.flink.util.ExceptionUtils.findThrowable(
                            e, org.apache.flink.runtime.client.JobCancellationException.class)
                    .isPresent()) {
                System.err.println(
                        "rollcount: cancelled; ./rollcount run with the same options resumes from its last checkpoint");
                return 130;
            }
            throw withCheckpointSpace(e, checkpointBase(settings));
        }
    }

    private int followOrThrow(JobClient job, LocalMetrics metrics, long inputBytes, long started) throws Exception {
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
                long events = longOf(acc, JobAccumulators.EVENTS_READ);
                long bytes = longOf(acc, JobAccumulators.BYTES_READ);
                long now = System.nanoTime();
                double rate = (events - lastEvents) / ((now - lastTime) / 1e9);
                lastEvents = events;
                lastTime = now;
                String share = inputBytes > 0
                        ? String.format("%5.1f%% of input, ", Math.min(100.0, 100.0 * bytes / inputBytes))
                        : "";
                if (terminal || ++ticks % 5 == 0) {
                    err.printf(
                            "%srollcount: %s%,d events read, %,.0f events/s, %,d Redis keys written%s",
                            terminal ? "\r" : "",
                            share,
                            events,
                            rate,
                            metrics.sum(RollcountMetrics.REDIS_KEYS_WRITTEN),
                            terminal ? "   " : "\n");
                    err.flush();
                }
            }
        }
        err.println();
        JobExecutionResult result = job.getJobExecutionResult().get();
        double seconds = (System.nanoTime() - started) / 1e9;
        printSummary(result.getAllAccumulatorResults(), metrics, seconds, System.out);
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

    static void printSummary(Map<String, Object> acc, LocalMetrics metrics, double seconds, PrintStream out) {
        long read = longOf(acc, JobAccumulators.EVENTS_READ);
        out.printf("rollcount: done in %.1f s, %,.0f events/s%n", seconds, read / Math.max(seconds, 1e-9));
        out.printf("  events read        %,d%n", read);
        out.printf("  counted            %,d%n", longOf(acc, JobAccumulators.COUNTED));
        out.printf("  deduplicated       %,d%n", longOf(acc, JobAccumulators.DUPLICATES));
        Map<String, Long> dlq = new TreeMap<>();
        for (Map.Entry<String, Object> e : acc.entrySet()) {
            if (e.getKey().startsWith(JobAccumulators.DEAD_LETTERS_PREFIX) && e.getValue() instanceof Number n) {
                dlq.put(e.getKey().substring(JobAccumulators.DEAD_LETTERS_PREFIX.length()), n.longValue());
            }
        }
        long dead = dlq.values().stream().mapToLong(Long::longValue).sum();
        out.printf("  dead-lettered      %,d%n", dead);
        dlq.forEach((reason, n) -> out.printf("    %-16s %,d%n", reason, n));
        out.printf("  late               %,d%n", dlq.getOrDefault("late", 0L));
        out.printf("  Redis keys written %,d%n", metrics.sum(RollcountMetrics.REDIS_KEYS_WRITTEN));
        long losses = longOf(acc, JobAccumulators.REDIS_LOSSES);
        if (losses > 0) {
            out.printf(
                    "  Redis rebuilt      after %,d loss%s of its data: %,d counters from the job's state, %,d keys of"
                            + " closed windows and top-K lists from counter-rollups%n",
                    losses,
                    losses == 1 ? "" : "es",
                    longOf(acc, JobAccumulators.REDIS_REBUILT_COUNTERS),
                    longOf(acc, JobAccumulators.REDIS_REBUILT_ROLLUP_KEYS));
        }
        long rejected = metrics.sum(RollcountMetrics.REDIS_REJECTED);
        if (rejected > 0) {
            out.printf(
                    "  Redis keys rejected %,d, not written (e.g. %s); see the log's WARN lines%n",
                    rejected, metrics.gauge(RollcountMetrics.REDIS_FIRST_REJECTED));
        }
    }

    /**
     * Flink ends a job whose checkpoints keep failing with "Exceeded checkpoint tolerable failure threshold",
     * without their cause: the cause of each failed checkpoint is logged (one line, e.g. "No space left on
     * device"); the failure names the last one's cause ({@link CheckpointFailures}), the checkpoint folder and its free space.
     */
    static Exception withCheckpointSpace(Exception e, String base) {
        if (!Messages.oneLine(e).contains("checkpoint")) return e;
        Path local = localPath(base);
        String space = "";
        try {
            Path existing = local;
            while (existing != null && !Files.exists(existing)) existing = existing.getParent();
            if (existing != null)
                space = String.format(
                        ", %,d bytes free there", Files.getFileStore(existing).getUsableSpace());
        } catch (IOException ignored) {
            // no figure then
        }
        String cause = CheckpointFailures.last();
        return new IllegalStateException(
                "the job failed: " + Messages.oneLine(e)
                        + (cause != null ? " The last failed checkpoint's cause: " + cause + "." : "")
                        + " (checkpoints go to " + base + space + "; each failed checkpoint's cause is logged above)",
                e);
    }

    /** Where this prefix's checkpoints go: {@code <--checkpoint.dir or .rollcount/checkpoints>/<prefix>}, as a URI. */
    static String checkpointBase(JobSettings settings) {
        String root = settings.checkpointDir != null
                ? settings.checkpointDir
                : Path.of(".rollcount", "checkpoints").toAbsolutePath().toUri().toString();
        return root.replaceAll("/+$", "") + "/" + settings.redis.keyPrefix();
    }

    /** A local path for a {@code file:} URI or a plain path; null for other file systems (s3://, hdfs://...). */
    static Path localPath(String uriOrPath) {
        if (uriOrPath == null) return null;
        if (uriOrPath.startsWith("file:")) return Path.of(java.net.URI.create(uriOrPath));
        if (uriOrPath.matches("^[a-zA-Z][a-zA-Z0-9+.-]*://.*")) return null;
        return Path.of(uriOrPath).toAbsolutePath();
    }

    /** The newest complete checkpoint ({@code <job>/chk-N/_metadata}) under {@code base}, or null. */
    static Path latestCheckpoint(Path base) throws IOException {
        if (!Files.isDirectory(base)) return null;
        Path best = null;
        long bestTime = Long.MIN_VALUE;
        try (Stream<Path> jobs = Files.list(base)) {
            for (Path jobDir : (Iterable<Path>) jobs::iterator) {
                if (!Files.isDirectory(jobDir)) continue;
                try (Stream<Path> chks = Files.list(jobDir)) {
                    for (Path chk : (Iterable<Path>) chks::iterator) {
                        Path meta = chk.resolve("_metadata");
                        if (!chk.getFileName().toString().startsWith("chk-") || !Files.isRegularFile(meta)) continue;
                        long t = Files.getLastModifiedTime(meta).toMillis();
                        if (t > bestTime) {
                            bestTime = t;
                            best = chk;
                        }
                    }
                }
            }
        }
        return best;
    }

    /** The lease token kept in the job folder of a checkpoint ({@code <job>/chk-N} or its {@code _metadata}), or null. */
    static String leaseTokenOf(Path checkpoint) {
        if (checkpoint == null) return null;
        Path chk = Files.isRegularFile(checkpoint) ? checkpoint.getParent() : checkpoint;
        if (chk == null || chk.getParent() == null) return null;
        Path f = chk.getParent().resolve(LEASE_TOKEN_FILE);
        try {
            return Files.isRegularFile(f) ? Files.readString(f).trim() : null;
        } catch (IOException e) {
            return null;
        }
    }

    private static void writeLeaseToken(Path jobDir, String token) {
        try {
            Files.createDirectories(jobDir);
            Files.writeString(jobDir.resolve(LEASE_TOKEN_FILE), token);
        } catch (IOException e) {
            System.err.println("rollcount: could not write " + jobDir.resolve(LEASE_TOKEN_FILE) + " (" + e.getMessage()
                    + "): a run resumed from these checkpoints within " + PrefixGuard.LEASE_TTL.toSeconds()
                    + " s may be refused");
        }
    }

    /** Whether the job of a checkpoint ({@code <job>/chk-N}) ended: it left {@value #FINISHED_FILE} beside it. */
    static boolean finished(Path checkpoint) {
        return Files.exists(checkpoint.getParent().resolve(FINISHED_FILE));
    }

    /**
     * The refusal of the latest checkpoint of the key prefix when its job is not this run's ({@link JobIdentity})
     * or recorded no identity; null when it is this run's to resume.
     */
    static String foreignCheckpoint(Path checkpoint, JobIdentity identity) {
        JobIdentity owner = JobIdentity.readFrom(checkpoint.getParent());
        if (owner != null && owner.sameJob(identity)) return null;
        String whose = owner != null
                ? "is another job's (" + owner.describe() + "), not this run's (" + identity.describe() + ")"
                : "is of a job that recorded no identity (" + JobIdentity.FILE + ", an earlier version of rollcount)";
        return "the latest checkpoint of key prefix '" + identity.prefix() + "', " + checkpoint + ", " + whose
                + ": --resume PATH takes it, --fresh starts over, or give this run another --redis.key-prefix";
    }

    private static void writeIdentity(Path jobDir, JobIdentity identity) {
        try {
            identity.writeTo(jobDir);
        } catch (IOException e) {
            System.err.println("rollcount: could not write " + jobDir.resolve(JobIdentity.FILE) + " (" + e.getMessage()
                    + "): a later run will not resume these checkpoints without --resume PATH");
        }
    }

    /** Marks the job folder of a job that ended: its checkpoints, taken mid-run, are never resumed automatically. */
    /**
     * Marks finished the folder of the job that ended and every other job folder of the key prefix: the jobs before
     * it are its past (it resumed one of them, or started after them), so none of their checkpoints is resumed
     * automatically either.
     */
    private static void markFinished(Path base, Path jobDir) {
        try {
            Files.createDirectories(jobDir);
            try (Stream<Path> jobs = Files.list(base)) {
                for (Path dir : (Iterable<Path>) jobs::iterator) {
                    if (Files.isDirectory(dir)) Files.writeString(dir.resolve(FINISHED_FILE), "");
                }
            }
        } catch (IOException e) {
            System.err.println("rollcount: could not mark the jobs under " + base + " finished (" + e.getMessage()
                    + "): delete their folders before the next run on this key prefix, or give it --fresh");
        }
    }

    /** The writers give the lease up when they close; this is for a job that ended before they could. */
    private static void releaseLease(JobSettings settings, String leaseToken) {
        if (leaseToken == null) return;
        try (UnifiedJedis jedis = JobConnectors.redisEndpoint(settings.redis).client()) {
            new PrefixGuard(settings.redis.keyPrefix()).release(jedis, leaseToken);
        } catch (RuntimeException e) {
            // it expires on its own
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
