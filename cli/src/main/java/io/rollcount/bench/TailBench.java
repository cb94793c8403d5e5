package io.rollcount.bench;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.redis.RedisSink;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.function.Consumer;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.kafka.clients.admin.AdminClientConfig;
import redis.clients.jedis.Jedis;

/**
 * {@code rollcount bench growth --scenario tail}: the long tail at scale, where most counters get an event or two
 * an hour. Per size, on a fresh MiniCluster (parallelism 2, RocksDB, checkpoints every 5 s, a 60-minute
 * checkpoint timeout) and a fresh Kafka broker ({@link BrokerProcess}: devservices' {@code KafkaBroker} in a child
 * JVM, so that its CPU is not the job's), Rollcount as production builds it in Kafka mode: counts and lists to
 * Redis, rollups of the closed windows to {@code counter-rollups}, trending and dead letters to their topics,
 * exactly once; the events come from the bench's generator source ({@link TailSchedule}: zipf 1.1, 1.5 events per
 * counter per hour of event time by default, two hours of event time, so every 5 s, 1 m, 5 m and 1 h window
 * closes while the events are read).
 *
 * <p>Figures ({@link TailFigures}): job CPU per event ({@link JobCpu}, first event to end of input, as {@code bench
 * growth}), and by kind of thread ({@link BenchReport#threads}); keyed-state reads of count-per-counter per event
 * and its due visits per counter per hour of event time, from the operator's own metrics {@value
 * RollcountMetrics#COUNTER_STATE_READS} and {@value RollcountMetrics#DUE_VISITS} (exact counts, not sampled; a read
 * of a counter found on the operator's heap is no read); the longest checkpoint triggered after the sources passed
 * the first hour's boundary of event time (the hour's windows closing: every counter touched in it due) and
 * completed while the events were read (not held by the end of input's drain of every window), with the bytes it
 * uploaded (its incremental size) and where its slowest subtask's time went (the short runs below {@value
 * #SHORT_RUNS_BELOW} counters hold their sources at the boundary until one such checkpoint completes); where none
 * completed there (checkpoints failing), the longest completed while they were read; Redis's CPU per event ({@code INFO cpu}) and {@code
 * used_memory} growth per counter over the run. A size whose Redis keys would not fit ({@link RedisRoom}), or every
 * size with {@code --no-redis}, discards the Redis writes instead (its Redis figures -1, {@code redis=discarded}).
 */
final class TailBench {
    private final List<Long> sizes;
    private final double perCounterHour;
    private final double hours;
    private final boolean noRedis;
    private final String redisUrl;
    private final Path work;
    private final PrintStream out;

    TailBench(
            List<Long> sizes,
            double perCounterHour,
            double hours,
            boolean noRedis,
            String redisUrl,
            Path work,
            PrintStream out) {
        this.sizes = sizes;
        this.perCounterHour = perCounterHour;
        this.hours = hours;
        this.noRedis = noRedis;
        this.redisUrl = redisUrl;
        this.work = work;
        this.out = out;
    }

    /** Checks the options: an {@link IllegalArgumentException} names the one at fault. */
    void check() {
        for (long n : sizes) new TailSchedule(n, perCounterHour, hours, JobBench.PARALLELISM);
    }

    void run() throws Exception {
        out.printf(
                Locale.ROOT,
                "bench growth --scenario tail: zipf 1.1 over %s counters, %.2f events per counter per hour of event time"
                        + " for %.1f h, parallelism %d, RocksDB, checkpoints every 5 s, rollups to counter-rollups on a"
                        + " Kafka broker, %s, max heap %d MiB%n",
                sizes,
                perCounterHour,
                hours,
                JobBench.PARALLELISM,
                noRedis ? "Redis writes built and discarded" : "Redis written where its memory allows",
                Runtime.getRuntime().maxMemory() >> 20);
        double redisPerCounter = RedisRoom.DEFAULT_BYTES_PER_COUNTER;
        for (long n : sizes) {
            boolean writeRedis = !noRedis && redisFits(n, redisPerCounter);
            long started = System.nanoTime();
            TailFigures f;
            try {
                f = measure(n, writeRedis, work.resolve("n" + n));
            } finally {
                GrowthBench.deleteQuietly(
                        work.resolve("n" + n)); // checkpoints and the broker's data, before the next size
            }
            out.println(f.resultLine());
            out.printf(
                    Locale.ROOT,
                    "  (%d counters: %.0f s in all, broker and counting included)%n",
                    n,
                    (System.nanoTime() - started) / 1e9);
            out.flush();
            if (f.redisWritten() && f.redisBytesPerCounter() > 0) redisPerCounter = f.redisBytesPerCounter();
        }
    }

    private boolean redisFits(long counters, double bytesPerCounter) {
        URIHost host = URIHost.of(redisUrl);
        try (Jedis jedis = new Jedis(host.host(), host.port())) {
            RedisRoom room =
                    RedisRoom.of(RedisInfo.parse(jedis.info("memory")), host.isThisMachine(), RedisRoom.memAvailable());
            out.println("  " + room.describe(counters, bytesPerCounter));
            return room.fits(counters, bytesPerCounter);
        }
    }

    /** Host and port of a {@code redis://} URL, and whether it is this machine. */
    private record URIHost(String host, int port) {
        static URIHost of(String url) {
            java.net.URI u = java.net.URI.create(url);
            return new URIHost(u.getHost(), u.getPort() < 0 ? 6379 : u.getPort());
        }

        boolean isThisMachine() {
            try {
                return InetAddress.getByName(host).isLoopbackAddress();
            } catch (java.io.IOException e) {
                return false;
            }
        }
    }

    private TailFigures measure(long counters, boolean writeRedis, Path dir) throws Exception {
        TailSchedule schedule = new TailSchedule(counters, perCounterHour, hours, JobBench.PARALLELISM);
        JobBench.Size size = new JobBench.Size(
                "tail",
                schedule.events(),
                (int) counters,
                TailSchedule.USERS,
                1,
                10,
                0,
                0,
                0,
                schedule.eventsPerSecond(),
                0);
        BenchRuns bench = new BenchRuns(size, redisUrl, dir, out);
        bench.checkpointTimeout = Duration.ofMinutes(60);
        TailFigures[] f = new TailFigures[1];
        try (BrokerProcess broker = BrokerProcess.start(dir.resolve("kafka"))) {
            bench.withCluster(() -> f[0] = measureOn(bench, broker, schedule, writeRedis));
        }
        return f[0];
    }

    private TailFigures measureOn(BenchRuns bench, BrokerProcess broker, TailSchedule schedule, boolean writeRedis)
            throws Exception {
        JobSettings o = options(bench, broker.bootstrap(), schedule);
        JobConnectors.ensureOutputTopics(o);
        BenchEvents ev = schedule.events(BenchRuns.SEED + Workload.zipf.ordinal(), System.currentTimeMillis());
        long distinct = BenchRuns.distinctCounters(ev);
        bench.cleanRedis();
        System.gc();
        long memoryBefore = writeRedis ? bench.redisUsedMemory() : 0;
        EventTimeTrack track = new EventTimeTrack(ev);
        BoundaryHold.clear();
        boolean hold = schedule.counters() < SHORT_RUNS_BELOW;
        BenchRuns.Measured m = bench.measured(() -> run(bench, ev, o, writeRedis, hold, track::sample));
        if (hold) track.allHeldAt(BoundaryHold.allHeldAt(JobBench.PARALLELISM));
        long redisBytes = writeRedis ? bench.redisUsedMemory() - memoryBefore : -1;
        BenchCluster.Run run = m.run();
        long reads = bench.cluster().metrics.sum(RollcountMetrics.COUNTER_STATE_READS);
        long visits = bench.cluster().metrics.sum(RollcountMetrics.DUE_VISITS);
        BenchCluster.Checkpoint longest = track.longestAfterBoundary(run.completed);
        long rollups = RollupCount.committed(clients(broker), o.kafkaTopicRollups, Duration.ofMinutes(30));
        out.printf(
                Locale.ROOT,
                "  %d counters: %d events over %.2f h of event time, %d distinct counters (%.1f%%), %.0f events/s;"
                        + " %d keyed-state reads, %d due visits; %d checkpoints, %s%s; rollups on %s: %d records%n",
                schedule.counters(),
                ev.count,
                TailSchedule.hoursCovered(ev),
                distinct,
                100.0 * distinct / schedule.counters(),
                m.eps(ev.count),
                reads,
                visits,
                run.completed.size(),
                hold ? "sources held at the first hour's boundary for " + BoundaryHold.heldMillis + " ms, " : "",
                track.describe(longest),
                o.kafkaTopicRollups,
                rollups);
        new BenchReport(out)
                .threads("bench.tail.threads", run, ev.count, "counters", String.valueOf(schedule.counters()));
        return new TailFigures(
                schedule.counters(),
                ev.count,
                m.jobMicros(ev.count),
                reads / (double) ev.count,
                visits / (double) schedule.counters() / TailSchedule.hoursCovered(ev),
                longest == null ? -1 : longest.millis(),
                longest == null ? -1 : longest.uploadedBytes(),
                m.redisMicros(ev.count),
                redisBytes / (double) schedule.counters(),
                writeRedis);
    }

    /**
     * The job's settings: Kafka mode's outputs on the bench's broker, the events from the bench's source;
     * checkpoints every 5 s, every second for the short runs below {@value #SHORT_RUNS_BELOW} counters.
     */
    private JobSettings options(BenchRuns bench, String bootstrap, TailSchedule schedule) {
        return JobSettings.of(
                "--input",
                "-",
                "--source",
                "files",
                "--redis",
                redisUrl,
                "--redis.key-prefix",
                bench.prefix,
                "--parallelism",
                String.valueOf(JobBench.PARALLELISM),
                "--checkpoint.interval",
                schedule.counters() < SHORT_RUNS_BELOW ? "1s" : "5s",
                "--dlq",
                bench.work.resolve("dlq.jsonl").toString(),
                "--kafka.bootstrap",
                bootstrap,
                "--kafka.transactional-id-prefix",
                bench.prefix);
    }

    /**
     * Sizes below this many counters may read all their events in seconds, too few for a checkpoint to complete
     * after the first hour's boundary on a loaded machine: they checkpoint every second, and their source holds
     * each reader at the boundary until two checkpoints have completed ({@link BoundaryHold}), so that one
     * triggered after it completes while the events are read. Larger sizes take many checkpoints after it.
     */
    static final long SHORT_RUNS_BELOW = 1_000_000;

    private static Properties clients(BrokerProcess broker) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        return p;
    }

    /**
     * Rollcount as production builds it in Kafka mode ({@code JobConnectors}' sinks), from the bench's source; the
     * counts' and lists' Redis writes discarded unless {@code writeRedis}. Runs until the job has finished, so
     * that the last rollups are committed; the measured span ends at the end of input.
     */
    private static BenchCluster.Run run(
            BenchRuns bench,
            BenchEvents ev,
            JobSettings o,
            boolean writeRedis,
            boolean holdAtBoundary,
            Consumer<Long> whileRunning)
            throws Exception {
        StreamExecutionEnvironment env = bench.environment(FlinkSettings.configuration(o));
        RedisSink redis = JobConnectors.redisSink(o);
        Pipeline.build(
                env,
                o,
                holdAtBoundary
                        ? GeneratedEvents.heldAt(ev, TailSchedule.firstHourBoundary(ev))
                        : GeneratedEvents.source(ev),
                new Pipeline.Outputs(
                        new StampingSink<>(writeRedis ? redis : null),
                        JobConnectors.deadLetterSink(o),
                        0,
                        JobConnectors.rollupsSink(o),
                        JobConnectors.trendingSink(o),
                        writeRedis ? redis.withoutWatermark() : new DiscardingSink<>()));
        return bench.cluster()
                .run(env, "rollcount-tail", JobBench.PARALLELISM, true, BenchRuns.timeout(ev.count, 500), whileRunning);
    }

    /**
     * The sources' event time over the wall clock while the events are read (sampled every half second), to
     * place a checkpoint's trigger in event time and to tell the checkpoints taken while events were read.
     */
    static final class EventTimeTrack {
        private final BenchEvents ev;
        private final List<long[]> samples = new ArrayList<>();
        private long lastSampleMillis;

        EventTimeTrack(BenchEvents ev) {
            this.ev = ev;
        }

        /** A sample now: the event time every source subtask has reached (their least). */
        void sample(long ignored) {
            long least = Long.MAX_VALUE;
            for (int subtask = 0; subtask < ev.parallelism; subtask++) {
                long i = BenchClock.LAST_INDEX.get(subtask);
                least = i < 0 ? -1 : Math.min(least, ev.baseTs(i));
                if (i < 0) break;
            }
            record(System.currentTimeMillis(), least);
        }

        /** At {@code wallMillis} the events were still being read, and the sources had reached {@code eventTime} (-1: not all had begun). */
        void record(long wallMillis, long eventTime) {
            lastSampleMillis = wallMillis;
            if (eventTime < 0 || (!samples.isEmpty() && wallMillis - samples.get(samples.size() - 1)[0] < 500)) return;
            samples.add(new long[] {wallMillis, eventTime});
        }

        /**
         * The longest of the checkpoints triggered after the sources passed the first hour's boundary (the hour's
         * windows closing) and completed while the events were read ({@link #readEndMillis}); where none was (a
         * run of seconds), the longest completed while they were read ({@link #afterHour} says which); null if
         * none was.
         */
        BenchCluster.Checkpoint longestAfterBoundary(List<BenchCluster.Checkpoint> completed) {
            long sampled = wallTimeAt(TailSchedule.firstHourBoundary(ev));
            long passed = allHeldAt < 0 ? sampled : Math.min(sampled, allHeldAt);
            BenchCluster.Checkpoint longest = longest(completed, passed);
            afterHour = longest != null;
            return afterHour ? longest : longest(completed, Long.MIN_VALUE);
        }

        /** Whether {@link #longestAfterBoundary} found one after the hour's boundary. */
        boolean afterHour;

        /** When the sources were all held at the hour's boundary (epoch ms; {@link BoundaryHold}); -1: not held. */
        private long allHeldAt = -1;

        /** The sources were all held at the hour's boundary from {@code wallMillis} on (-1: they were not). */
        void allHeldAt(long wallMillis) {
            allHeldAt = wallMillis;
        }

        private BenchCluster.Checkpoint longest(List<BenchCluster.Checkpoint> completed, long notBefore) {
            long readEnd = readEndMillis();
            BenchCluster.Checkpoint longest = null;
            for (BenchCluster.Checkpoint c : completed)
                if (c.triggerMillis() >= notBefore
                        && c.triggerMillis() + c.millis() <= readEnd
                        && (longest == null || c.millis() > longest.millis())) longest = c;
            return longest;
        }

        /**
         * When the sources had read their last event: the first sample at the event time of the last. After it
         * the end of input closes every counter's windows at once, a drain that holds a barrier and that an
         * unbounded production job never makes, so a checkpoint completed after it is not a boundary's.
         */
        long readEndMillis() {
            if (samples.isEmpty()) return lastSampleMillis;
            long last = samples.get(samples.size() - 1)[1];
            for (long[] s : samples) if (s[1] >= last) return s[0];
            return lastSampleMillis;
        }

        /** The wall time of the first sample at or past {@code eventTime}; Long.MAX_VALUE if none. */
        long wallTimeAt(long eventTime) {
            for (long[] s : samples) if (s[1] >= eventTime) return s[0];
            return Long.MAX_VALUE;
        }

        /** The event time the sources had reached at {@code wallMillis}; -1 before the first sample. */
        long eventTimeAt(long wallMillis) {
            long t = -1;
            for (long[] s : samples) {
                if (s[0] > wallMillis) break;
                t = s[1];
            }
            return t;
        }

        /** The checkpoint, its bytes and where in event time it was triggered, for the output. */
        String describe(BenchCluster.Checkpoint c) {
            if (c == null) return "none completed while the events were read";
            String which = afterHour
                    ? "the longest after the first hour's boundary"
                    : "none after the first hour's boundary; the longest while the events were read";
            long at = eventTimeAt(c.triggerMillis());
            String where = at < 0
                    ? "before the first event"
                    : String.format(
                            Locale.ROOT,
                            "at event time +%d min of the span, %d min after an hour's boundary",
                            (at - TailSchedule.firstTs(ev)) / 60_000,
                            (at - io.rollcount.job.model.Resolution.H1.windowStart(at)) / 60_000);
            return String.format(
                    Locale.ROOT,
                    "%s #%d: %d ms, %.1f MB uploaded (%.1f MB in all), triggered %s (%s)",
                    which,
                    c.id(),
                    c.millis(),
                    c.uploadedBytes() / 1e6,
                    c.fullBytes() / 1e6,
                    where,
                    c.slowest());
        }
    }
}
