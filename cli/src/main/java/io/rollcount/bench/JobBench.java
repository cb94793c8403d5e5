package io.rollcount.bench;

import io.rollcount.job.JobOptions;
import io.rollcount.job.Launcher;
import io.rollcount.job.RollcountJob;
import io.rollcount.job.files.DeadLetterFileSink;
import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.kafka.EventDeserializer;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
import io.rollcount.job.ops.DropDuplicates;
import io.rollcount.job.ops.PreAggregate;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisSink;
import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.EnumMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * {@code rollcount bench job}: Rollcount against a textbook DataStream job, Flink SQL, the seeds' Redis
 * design and the per-event limit, side by side in one run on the same generated events. Prints RESULT
 * lines.
 */
public final class JobBench {

    /**
     * Sizes of a run. {@code warmupEvents}: zipf events each variant runs once before anything is measured
     * (the JIT compiles for tens of seconds). {@code events}: per workload and round, measured.
     */
    public record Size(
            String name,
            long events,
            int counters,
            int users,
            int rounds,
            int pacedSeconds,
            long kafkaEvents,
            int limitLines,
            long redisEvents,
            double eventTimeRate,
            long warmupEvents) {
        public static final Size FULL =
                new Size("full", 3_000_000, 1_000_000, 100_000, 3, 60, 3_000_000, 1_000_000, 600_000, 50_000, 500_000);
        /** Small and short: the figures of a quick run are not a steady state, and its first line says so. */
        public static final Size QUICK =
                new Size("quick", 30_000, 1_000_000, 100_000, 1, 10, 30_000, 100_000, 30_000, 50_000, 10_000);
        /** For the automated test: seconds, not figures. */
        public static final Size TINY =
                new Size("tiny", 4_000, 10_000, 1_000, 1, 3, 4_000, 10_000, 4_000, 5_000, 2_000);
    }

    static final int PARALLELISM = 2;
    static final long SEED = 20261130L;

    final Size size;
    final PrintStream out;
    private final String redisUrl;
    final String redisHost;
    final int redisPort;
    final String prefix = "rcbench" + UUID.randomUUID().toString().substring(0, 6);
    final RedisKeys keys = new RedisKeys(prefix);
    private final boolean kafka;
    private final Path work;
    private BenchCluster cluster;

    /** Redis commands the writers of the jobs on the bench's cluster have sent so far. */
    long commandsSent() {
        return cluster.metrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT);
    }
    /** Only Rollcount on this workload, twice (for profiling the job's own operators). */
    Workload profileOnly;
    /** Only the Kafka mode. */
    boolean onlyKafka;
    /** The Kafka mode's {@code --kafka.properties} (both jobs), or null. */
    String kafkaProperties;
    /** With {@link #profileOnly}: the plain-writes floor too, alternated with ours. */
    boolean profileWithFloor;
    /** Rollcount's Redis writes built but discarded (with {@link #profileOnly}): the job's own cost without Redis's. */
    boolean discardRedis;
    /** {@code --policies} of Rollcount's runs ({@link #ours}); null: none. */
    String policiesFile;
    /** The checkpoint interval of Rollcount's runs. */
    Duration checkpointInterval = Duration.ofSeconds(10);
    /** The checkpoint timeout of every run; null: Flink's default (10 minutes, after which the job fails). */
    Duration checkpointTimeout;
    /** The namespace policies to run the zipf workload under once more, beside the default ({@link PolicyBench}); null: skipped. */
    Path comparePolicies;

    public JobBench(Size size, String redisUrl, boolean kafka, Path work, PrintStream out) {
        this.size = size;
        this.redisUrl = redisUrl;
        URI u = URI.create(redisUrl);
        this.redisHost = u.getHost();
        this.redisPort = u.getPort() < 0 ? 6379 : u.getPort();
        this.kafka = kafka;
        this.work = work;
        this.out = out;
    }

    /** Medians and other figures of one workload. */
    private static final class Figures {
        final List<Double> ours = new ArrayList<>();
        final List<Double> naive = new ArrayList<>();
        final List<Double> sql = new ArrayList<>();
        final List<Double> redis = new ArrayList<>();
        final List<Double> limit = new ArrayList<>();
        final List<Double> cmdsPerEvent = new ArrayList<>();
        final List<Double> redisMicrosPerEvent = new ArrayList<>();
        /** Redis CPU per event of the same job with the sink's plain-writes-only floor mode, same Redis, same round. */
        final List<Double> redisFloorMicrosPerEvent = new ArrayList<>();
        /** Rollcount with its Redis writes built and discarded (zipf only): the job's own cost. */
        final List<Double> oursNoRedis = new ArrayList<>();

        final List<Double> oursNoRedisJobMicros = new ArrayList<>();
        /** The last round's run with Redis discarded, for its CPU by kind of thread. */
        BenchCluster.Run noRedisThreads;

        final List<Double> ratioNaive = new ArrayList<>();
        final List<Double> ratioSql = new ArrayList<>();
        /** The fair references: the same Redis outputs as ours. */
        final List<Double> naiveRedis = new ArrayList<>();

        final List<Double> sqlRedis = new ArrayList<>();
        final List<Double> ratioNaiveRedis = new ArrayList<>();
        final List<Double> ratioSqlRedis = new ArrayList<>();
        final List<Double> jobMicrosPerEvent = new ArrayList<>();
        final List<Double> naiveJobMicros = new ArrayList<>();
        final List<Double> sqlJobMicros = new ArrayList<>();
        final List<Double> naiveRedisJobMicros = new ArrayList<>();
        final List<Double> naiveRedisRedisMicros = new ArrayList<>();
        final List<Double> sqlRedisJobMicros = new ArrayList<>();
        final List<Double> sqlRedisRedisMicros = new ArrayList<>();
        final List<Double> redisBytesPerCounter = new ArrayList<>();
        long distinctCounters = -1;
        long peakHeap;
    }

    /** A variant's run with the Redis server's CPU over it. */
    record Measured(BenchCluster.Run run, double redisCpuSeconds) {
        double eps(long events) {
            return events / run.seconds;
        }

        double jobMicros(long events) {
            return run.jobCpuSeconds * 1e6 / events;
        }

        double redisMicros(long events) {
            return redisCpuSeconds * 1e6 / events;
        }
    }

    interface Variant {
        BenchCluster.Run run() throws Exception;
    }

    /** Work done on the bench's cluster ({@link #withCluster}). */
    interface OnCluster {
        void run() throws Exception;
    }

    /** Runs a variant, reading the Redis server's CPU (INFO cpu) just before and after it. */
    Measured measured(Variant v) throws Exception {
        double before = redisCpuSeconds();
        BenchCluster.Run r = v.run();
        return new Measured(r, redisCpuSeconds() - before);
    }

    public void run() throws Exception {
        long started = System.nanoTime();
        Files.createDirectories(work);
        // The start checks of every start of the job; the bench clears its own prefix between runs.
        Launcher.of(options(), Launcher.Place.HERE, "-").startingOver().checkStart(null, null);
        out.printf(
                "bench job (%s): %,d events per workload, %,d counters, %,d users, parallelism %d, RocksDB, checkpoints every 10 s, %d round(s), warm-up %,d events per variant%n",
                size.name, size.events, size.counters, size.users, PARALLELISM, size.rounds, size.warmupEvents);
        if (size != Size.FULL) {
            out.println("  (" + size.name
                    + " run: too few events for a steady state; the CPU figures still include JIT compilation. The full run measures "
                    + String.format(Locale.ROOT, "%,d", Size.FULL.events) + " events per workload.)");
        }
        out.println(
                "  Rollcount: RollcountJob.build with dedup, five resolutions, uniques, trending and window top-K, real Redis at "
                        + redisUrl + " prefix " + prefix);
        try (BenchCluster c = new BenchCluster(PARALLELISM, work)) {
            cluster = c;
            Map<Workload, Figures> figures = new EnumMap<>(Workload.class);
            for (Workload w : Workload.values()) figures.put(w, new Figures());
            if (onlyKafka) {
                kafkaMode();
                return;
            }
            if (profileOnly != null) {
                if (profileWithFloor) {
                    // a comparison: JIT and RocksDB warm before the first measured run, as in the full run
                    ours(events(profileOnly, size.warmupEvents));
                    cleanRedis();
                    out.printf("  (after an unmeasured warm-up of %,d events)%n", size.warmupEvents);
                }
                // ABBA: neither variant always runs on the Redis the other has just emptied
                String order = profileWithFloor ? "offoof" : "oo";
                for (int k = 0; k < order.length(); k++) {
                    BenchEvents ev = events(profileOnly, size.events);
                    long commands = c.metrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT);
                    plainFloor = order.charAt(k) == 'f';
                    Measured m;
                    try {
                        m = measured(() -> ours(ev));
                    } finally {
                        plainFloor = false;
                    }
                    BenchCluster.Run o = m.run;
                    out.printf(
                            "  %s %s %,.0f ev/s, %.4f Redis commands/event, counted %,d, job CPU %.1f us/event, Redis CPU %.2f us/event%n",
                            order.charAt(k) == 'f' ? "floor" : "ours",
                            profileOnly,
                            ev.count / o.seconds,
                            (c.metrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT) - commands) / (double) ev.count,
                            o.acc(PreAggregate.COUNTED),
                            o.jobCpuSeconds * 1e6 / ev.count,
                            m.redisMicros(ev.count));
                    threads("job." + profileOnly + (order.charAt(k) == 'f' ? ".floor" : "") + ".threads", o, ev.count);
                    cleanRedis();
                }
                return;
            }
            // warm-up: JIT, RocksDB and the planner of every kind of job, not measured
            BenchEvents warm = events(Workload.zipf, size.warmupEvents);
            ours(warm);
            cleanRedis();
            naiveRedis(warm);
            cleanRedis();
            sqlRedis(warm);
            cleanRedis();
            List<Double> sourceOnly = new ArrayList<>();
            List<Double> reads = new ArrayList<>();
            List<Double> stalls = new ArrayList<>();
            for (int round = 0; round < size.rounds; round++) {
                for (Workload w : Workload.values()) {
                    BenchEvents ev = events(w, size.events);
                    Figures f = figures.get(w);
                    if (f.distinctCounters < 0) f.distinctCounters = distinctCounters(ev);
                    // the floor before ours in odd rounds: neither always runs on the Redis the other has just emptied
                    boolean floorFirst = round % 2 == 1;
                    if (floorFirst) floor(ev, f);
                    long commands = c.metrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT);
                    long memoryBefore = redisUsedMemory();
                    Measured om;
                    try (ReadLatencyProbe reader = w == Workload.zipf ? readerFor(ev) : null) {
                        om = measured(() -> ours(ev));
                        if (reader != null) {
                            // the span of the run in wall-clock time: the reader's calls outside it met no writes
                            long wallMinusNanos = System.currentTimeMillis() - System.nanoTime() / 1_000_000;
                            long from = BenchClock.FIRST_EVENT_NANOS.get() / 1_000_000 + wallMinusNanos;
                            long to = BenchClock.LAST_END_NANOS.get() / 1_000_000 + wallMinusNanos;
                            ReadLatencyProbe.Reads r = reader.stop(from, to);
                            for (double ms : r.latencies()) reads.add(ms);
                            for (double ms : r.stalls()) stalls.add(ms);
                        }
                    }
                    // used_memory after minus before: every key of the run under the bench's prefix (windows, totals,
                    // HyperLogLogs, top-K and trending sorted sets, bookkeeping), with Redis's per-key overhead
                    // (dict entries, expiry entries), and whatever other clients of a shared server changed meanwhile
                    long memoryDelta = redisUsedMemory() - memoryBefore;
                    BenchCluster.Run o = om.run;
                    double cmds = (c.metrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT) - commands) / (double) ev.count;
                    f.redisMicrosPerEvent.add(om.redisMicros(ev.count));
                    f.jobMicrosPerEvent.add(om.jobMicros(ev.count));
                    f.redisBytesPerCounter.add(memoryDelta / (double) f.distinctCounters);
                    f.peakHeap = Math.max(f.peakHeap, heapPeak.get());
                    cleanRedis();
                    if (!floorFirst) floor(ev, f);
                    if (w == Workload.zipf) {
                        discardRedis = true;
                        try {
                            BenchCluster.Run d = ours(ev);
                            f.oursNoRedis.add(ev.count / d.seconds);
                            f.oursNoRedisJobMicros.add(d.jobCpuSeconds * 1e6 / ev.count);
                            f.noRedisThreads = d;
                        } finally {
                            discardRedis = false;
                        }
                    }
                    BenchCluster.Run n = naive(ev);
                    BenchCluster.Run s = sql(ev);
                    Measured nr = measured(() -> naiveRedis(ev));
                    cleanRedis();
                    Measured sr = measured(() -> sqlRedis(ev));
                    cleanRedis();
                    double oursEps = ev.count / o.seconds;
                    double naiveEps = ev.count / n.seconds;
                    double sqlEps = ev.count / s.seconds;
                    f.ours.add(oursEps);
                    f.naive.add(naiveEps);
                    f.sql.add(sqlEps);
                    f.ratioNaive.add(oursEps / naiveEps);
                    f.ratioSql.add(oursEps / sqlEps);
                    f.naiveRedis.add(nr.eps(ev.count));
                    f.sqlRedis.add(sr.eps(ev.count));
                    f.ratioNaiveRedis.add(oursEps / nr.eps(ev.count));
                    f.ratioSqlRedis.add(oursEps / sr.eps(ev.count));
                    f.naiveJobMicros.add(n.jobCpuSeconds * 1e6 / ev.count);
                    f.sqlJobMicros.add(s.jobCpuSeconds * 1e6 / ev.count);
                    f.naiveRedisJobMicros.add(nr.jobMicros(ev.count));
                    f.naiveRedisRedisMicros.add(nr.redisMicros(ev.count));
                    f.sqlRedisJobMicros.add(sr.jobMicros(ev.count));
                    f.sqlRedisRedisMicros.add(sr.redisMicros(ev.count));
                    f.cmdsPerEvent.add(cmds);
                    f.redis.add(References.redis(
                            ev, size.redisEvents, redisHost, redisPort, prefix + ":seed", PARALLELISM));
                    cleanRedis();
                    f.limit.add(References.limitOneThread(ev, size.limitLines, 3) * PARALLELISM);
                    out.printf(
                            "  round %d %-7s ours %,9.0f ev/s (counted %,d, duplicates %,d, late %,d; %.4f Redis commands/event; job %.1f us, Redis %.1f us CPU/event)"
                                    + "  naive %,9.0f  sql %,9.0f  naive+redis %,9.0f  sql+redis %,9.0f  redis %,9.0f  limit %,9.0f%n",
                            round + 1,
                            w,
                            oursEps,
                            o.acc(PreAggregate.COUNTED),
                            o.acc(DropDuplicates.DUPLICATES),
                            o.acc(PreAggregate.LATE_COUNTER),
                            cmds,
                            last(f.jobMicrosPerEvent),
                            last(f.redisMicrosPerEvent),
                            naiveEps,
                            sqlEps,
                            last(f.naiveRedis),
                            last(f.sqlRedis),
                            last(f.redis),
                            last(f.limit));
                    if (w == Workload.zipf) {
                        BenchCluster.Run g = sourceOnly(ev);
                        sourceOnly.add(ev.count / g.seconds);
                    }
                }
            }
            for (Workload w : Workload.values()) {
                Figures f = figures.get(w);
                double ours = median(f.ours);
                result(
                        "job." + w,
                        "ours_eps",
                        eps(ours),
                        "naive_eps",
                        eps(median(f.naive)),
                        "ratio_naive",
                        r2(median(f.ratioNaive)),
                        "sql_eps",
                        eps(median(f.sql)),
                        "ratio_sql",
                        r2(median(f.ratioSql)),
                        "redis_eps",
                        eps(median(f.redis)),
                        "ratio_redis",
                        r2(ours / median(f.redis)),
                        "limit_eps",
                        eps(median(f.limit)),
                        "ratio_limit",
                        r2(ours / median(f.limit)),
                        "redis_cmds_per_event",
                        String.format(Locale.ROOT, "%.4f", median(f.cmdsPerEvent)),
                        "redis_cpu_us_per_event",
                        us(median(f.redisMicrosPerEvent)),
                        "redis_floor_us_per_event",
                        us(median(f.redisFloorMicrosPerEvent)),
                        "runs",
                        String.valueOf(f.ours.size()),
                        "ours_spread_pct",
                        String.valueOf(Math.round(spreadPct(f.ours))),
                        "ref",
                        "flink-2.2.1-datastream-window-aggregate/flink-sql-tumble-tvf-minibatch-two-phase/redis-7-incrby-16-shards-pipelined/one-thread-parse-map-hll-cms-x"
                                + PARALLELISM,
                        "naive_redis_eps",
                        eps(median(f.naiveRedis)),
                        "ratio_naive_redis",
                        r2(median(f.ratioNaiveRedis)),
                        "sql_redis_eps",
                        eps(median(f.sqlRedis)),
                        "ratio_sql_redis",
                        r2(median(f.ratioSqlRedis)),
                        "job_cpu_us_per_event",
                        us(median(f.jobMicrosPerEvent)),
                        "naive_redis_job_cpu_us_per_event",
                        us(median(f.naiveRedisJobMicros)),
                        "naive_redis_redis_cpu_us_per_event",
                        us(median(f.naiveRedisRedisMicros)),
                        "sql_redis_job_cpu_us_per_event",
                        us(median(f.sqlRedisJobMicros)),
                        "sql_redis_redis_cpu_us_per_event",
                        us(median(f.sqlRedisRedisMicros)),
                        "redis_bytes_per_counter",
                        String.valueOf(Math.round(median(f.redisBytesPerCounter))),
                        "distinct_counters",
                        String.valueOf(f.distinctCounters),
                        "events",
                        String.valueOf(size.events),
                        "naive_job_cpu_us_per_event",
                        us(median(f.naiveJobMicros)),
                        "sql_job_cpu_us_per_event",
                        us(median(f.sqlJobMicros)),
                        "ref_redis",
                        "datastream-windows-and-rolling-total/sql-group-by-bucket-upsert-minibatch-two-phase-pipelined-set-pxat");
            }
            double uniform = median(figures.get(Workload.uniform).ours);
            double viral = median(figures.get(Workload.viral).ours);
            result(
                    "job.viral_vs_uniform",
                    "viral_eps",
                    eps(viral),
                    "uniform_eps",
                    eps(uniform),
                    "ratio",
                    r2(viral / uniform));
            Figures z = figures.get(Workload.zipf);
            result(
                    "job.zipf.breakdown",
                    "ours_eps",
                    eps(median(z.ours)),
                    "ours_without_redis_eps",
                    eps(median(z.oursNoRedis)),
                    "ratio_naive_without_redis",
                    r2(median(z.oursNoRedis) / median(z.naive)),
                    "redis_cpu_us_per_event",
                    us(median(z.redisMicrosPerEvent)),
                    "redis_one_core_eps",
                    eps(1e6 / median(z.redisMicrosPerEvent)),
                    "note",
                    "without-redis=same-job-redis-writes-built-and-discarded;redis-cpu=INFO-used_cpu-of-the-server-during-the-run",
                    "ours_without_redis_job_cpu_us_per_event",
                    us(median(z.oursNoRedisJobMicros)));
            if (z.noRedisThreads != null) threads("job.zipf.breakdown.threads", z.noRedisThreads, size.events);
            Percentiles p = new Percentiles(
                    reads.stream().mapToDouble(Double::doubleValue).toArray());
            Percentiles stall = new Percentiles(
                    stalls.stream().mapToDouble(Double::doubleValue).toArray());
            result(
                    "job.read_latency",
                    "p50_ms",
                    ms(p.at(50)),
                    "p99_ms",
                    ms(p.at(99)),
                    "max_ms",
                    ms(p.max()),
                    "reads",
                    String.valueOf(p.count()),
                    "reader_stall_p50_ms",
                    ms(stall.at(50)),
                    "reader_stall_p99_ms",
                    ms(stall.at(99)),
                    "reader_stall_max_ms",
                    ms(stall.max()),
                    "workload",
                    "zipf-ours-full-speed",
                    "reader",
                    "get-total-and-mget-60-1m-keys-alternately-hot-and-cold-every-" + ReadLatencyProbe.PAUSE_MILLIS
                            + "ms");
            result("job.source", "generator_eps", eps(median(sourceOnly)), "note", "generator-and-parse-only-job-zipf");
            result(
                    "job.heap",
                    "peak_heap_mb",
                    String.valueOf(figures.get(Workload.zipf).peakHeap >> 20),
                    "max_heap_mb",
                    String.valueOf(Runtime.getRuntime().maxMemory() >> 20),
                    "note",
                    "sampled-heap-used-during-rollcount-zipf-runs-whole-jvm");
            if (comparePolicies != null) new PolicyBench(this).compare(comparePolicies);
            paced(median(figures.get(Workload.zipf).ours) / 2);
            if (kafka) kafkaMode();
        } finally {
            cleanRedis();
        }
        out.printf("bench job: done in %.0f s%n", (System.nanoTime() - started) / 1e9);
    }

    /** Runs {@code body} on this bench's MiniCluster (for tests that run single variants). */
    void withCluster(OnCluster body) throws Exception {
        Files.createDirectories(work);
        try (BenchCluster c = new BenchCluster(PARALLELISM, work)) {
            cluster = c;
            body.run();
        } finally {
            cluster = null;
            cleanRedis();
        }
    }

    /**
     * The count keys under this bench's prefix and their values: every {@code P:{C}:total} and
     * {@code P:{C}:<res>:<start>} (not the uniques, lists or bookkeeping).
     */
    java.util.SortedMap<String, String> countKeys() {
        java.util.SortedMap<String, String> counts = new java.util.TreeMap<>();
        try (Jedis jedis = new Jedis(redisHost, redisPort)) {
            scanKeys(jedis, 10_000, batch -> {
                for (String key : batch) if (keys.isCount(key)) counts.put(key, jedis.get(key));
            });
        }
        return counts;
    }

    /** Every key under this bench's prefix, by SCAN of {@code count} keys a call, one batch (a SCAN's reply) at a time. */
    void scanKeys(Jedis jedis, int count, java.util.function.Consumer<List<String>> batch) {
        String cursor = ScanParams.SCAN_POINTER_START;
        ScanParams params = new ScanParams().match(keys.everyKeyPattern()).count(count);
        do {
            ScanResult<String> r = jedis.scan(cursor, params);
            if (!r.getResult().isEmpty()) batch.accept(r.getResult());
            cursor = r.getCursor();
        } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
    }

    String prefix() {
        return prefix;
    }

    /** The dashboard reader of a zipf run: the 5 hottest counters and 5 cold ones of the workload, alternating. */
    private ReadLatencyProbe readerFor(BenchEvents ev) throws IOException, InterruptedException {
        List<String> hot = new ArrayList<>();
        for (int rank = 0; rank < 5; rank++) hot.add(BenchEvents.counterId(rank));
        List<String> cold = new ArrayList<>();
        BenchEvents copy = ev.copy();
        int minColdRank = Math.min(ev.counters / 10, 10_000);
        for (long i = ev.count - 1; i >= 0 && cold.size() < 5; i -= 7) {
            int rank = copy.rank(i);
            String id = BenchEvents.counterId(rank);
            if (rank >= minColdRank && !cold.contains(id)) cold.add(id);
        }
        List<String> counters = new ArrayList<>();
        for (int k = 0; k < Math.max(hot.size(), cold.size()); k++) {
            if (k < hot.size()) counters.add(hot.get(k));
            if (k < cold.size()) counters.add(cold.get(k));
        }
        return new ReadLatencyProbe(
                redisHost, redisPort, prefix, counters, ev.baseTs(ev.partSize() - 1), work.resolve("reader.log"));
    }

    /** Distinct counters among all events of a workload. */
    static long distinctCounters(BenchEvents ev) {
        BitSet ranks = new BitSet(ev.counters);
        BenchEvents copy = ev.copy();
        for (long i = 0; i < ev.count; i++) ranks.set(copy.rank(i));
        return ranks.cardinality();
    }

    // ------------------------------------------------------------------ variants

    BenchEvents events(Workload w, long count) {
        double span = count / size.eventTimeRate * 1000;
        long start = (System.currentTimeMillis() - (long) span - 60_000) / 1000 * 1000;
        return new BenchEvents(
                SEED + w.ordinal(), w, size.counters, size.users, count, PARALLELISM, start, size.eventTimeRate, 2_000);
    }

    private JobOptions options() {
        JobOptions o = new JobOptions();
        o.redis = redisUrl;
        o.redisKeyPrefix = prefix;
        o.parallelism = PARALLELISM;
        o.checkpointInterval = checkpointInterval;
        o.policiesFile = policiesFile;
        o.dlq = work.resolve("dlq.jsonl").toString();
        o.input = "-";
        o.source = JobOptions.SourceKind.files;
        return o.validate();
    }

    private StreamExecutionEnvironment environment(Configuration jobConf) {
        Configuration conf = cluster.jobConfiguration(jobConf);
        if (checkpointTimeout != null)
            conf.set(org.apache.flink.configuration.CheckpointingOptions.CHECKPOINTING_TIMEOUT, checkpointTimeout);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(PARALLELISM);
        return env;
    }

    private final AtomicLong heapPeak = new AtomicLong();
    /** Whether {@link #ours} builds its sink in the plain-writes-only floor mode. */
    private boolean plainFloor;

    /** The floor: the same job, every count and user write a plain command (no guard, no mark); Redis left empty. */
    private void floor(BenchEvents ev, Figures f) throws Exception {
        plainFloor = true;
        try {
            double floorCpu = redisCpuSeconds();
            ours(ev);
            f.redisFloorMicrosPerEvent.add((redisCpuSeconds() - floorCpu) * 1e6 / ev.count);
        } finally {
            plainFloor = false;
        }
        cleanRedis();
    }

    private void sampleHeap(long ignored) {
        heapPeak.accumulateAndGet(
                ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(), Math::max);
    }

    /**
     * Rollcount exactly as {@code rollcount run} builds it, from the generator source to the real Redis; with
     * {@link #plainFloor}, its sink in the plain-writes-only mode that measures the floor of Redis's cost.
     */
    BenchCluster.Run ours(BenchEvents ev) throws Exception {
        return ours(ev, this::sampleHeap);
    }

    /** As {@link #ours(BenchEvents)}, with {@code whileRunning} called about every 100 ms while it runs. */
    BenchCluster.Run ours(BenchEvents ev, java.util.function.Consumer<Long> whileRunning) throws Exception {
        JobOptions o = options();
        StreamExecutionEnvironment env = environment(RollcountJob.configuration(o));
        RedisSink sink = plainFloor
                ? RollcountJob.redisSinkBuilder(o).setPlainWritesOnly(true).build()
                : RollcountJob.redisSink(o);
        RollcountJob.build(
                env,
                o,
                GeneratedEvents.source(ev),
                new RollcountJob.Outputs(
                        new StampingSink<>(discardRedis ? null : sink),
                        new DeadLetterFileSink(o.dlq),
                        1,
                        null,
                        null,
                        discardRedis ? new StampingSink<>(null) : sink.withoutWatermark()));
        heapPeak.set(0);
        return cluster.run(env, "rollcount-" + ev.workload, PARALLELISM, false, timeout(ev.count, 1_000), whileRunning);
    }

    private BenchCluster.Run naive(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(RollcountJob.configuration(options()));
        int ends = References.textbook(env, GeneratedEvents.source(ev));
        return cluster.run(env, "textbook-" + ev.workload, ends, false, timeout(ev.count, 1_000), null);
    }

    private BenchCluster.Run sql(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(RollcountJob.configuration(options()));
        int ends = References.sql(env, GeneratedEvents.source(ev));
        return cluster.run(env, "sql-" + ev.workload, ends, false, timeout(ev.count, 1_000), null);
    }

    /** The textbook job with Rollcount's Redis outputs (windows and totals; {@link FairReferences#textbook}). */
    BenchCluster.Run naiveRedis(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(RollcountJob.configuration(options()));
        int ends = FairReferences.textbook(env, GeneratedEvents.source(ev), redisOutputs(null));
        return cluster.run(env, "textbook-redis-" + ev.workload, ends, false, timeout(ev.count, 1_000), null);
    }

    /** Flink SQL with Rollcount's Redis outputs ({@link FairReferences#sql}). */
    BenchCluster.Run sqlRedis(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(RollcountJob.configuration(options()));
        int ends = FairReferences.sql(env, GeneratedEvents.source(ev), redisOutputs(null));
        return cluster.run(env, "sql-redis-" + ev.workload, ends, false, timeout(ev.count, 1_000), null);
    }

    /**
     * The references' outputs: this bench's Redis and key prefix, and (Kafka mode) the rollups of the
     * resolutions Rollcount's {@code counter-rollups} carries (all five today: {@code CountPerCounter} emits
     * every closed window; with {@code --rollups.resolutions}, the same set as ours).
     */
    private FairReferences.Outputs redisOutputs(JobOptions kafkaOptions) {
        return new FairReferences.Outputs(
                redisHost,
                redisPort,
                keys,
                kafkaOptions == null ? null : RollcountJob.rollupsSink(kafkaOptions),
                ROLLUP_RESOLUTIONS);
    }

    /** The resolutions of Rollcount's {@code counter-rollups} records. */
    static final java.util.Set<io.rollcount.job.model.Resolution> ROLLUP_RESOLUTIONS =
            java.util.EnumSet.allOf(io.rollcount.job.model.Resolution.class);

    /** The job built in {@code env} by the caller, run over the same events (the "same outputs" test). */
    BenchCluster.Run runBuilt(StreamExecutionEnvironment env, String name, int ends, long events) throws Exception {
        return cluster.run(env, name, ends, false, timeout(events, 1_000), null);
    }

    private BenchCluster.Run sourceOnly(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(RollcountJob.configuration(options()));
        env.fromSource(GeneratedEvents.source(ev), References.watermarks(), "events", TypeInformation.of(Event.class))
                .sinkTo(new StampingSink<>(null));
        return cluster.run(env, "source-" + ev.workload, PARALLELISM, false, timeout(ev.count, 5_000), null);
    }

    private static Duration timeout(long events, double slowestEps) {
        return Duration.ofSeconds(120 + (long) (events / slowestEps));
    }

    // ------------------------------------------------------------------ visibility, checkpoints, state

    /**
     * Rollcount on zipf at {@code rate} events/s, event times = creation times; every so often a probe event
     * on a counter of its own, whose total a poller waits for in Redis.
     */
    private void paced(double rate) throws Exception {
        long count = (long) (rate * size.pacedSeconds);
        BenchEvents ev = events(Workload.zipf, count);
        long probeEvery = Math.max(1, (long) (rate / 50));
        JobOptions o = options();
        StreamExecutionEnvironment env = environment(RollcountJob.configuration(o));
        RollcountJob.build(
                env,
                o,
                GeneratedEvents.paced(ev, rate, probeEvery),
                new RollcountJob.Outputs(
                        new StampingSink<>(RollcountJob.redisSink(o)),
                        new DeadLetterFileSink(o.dlq),
                        1,
                        null,
                        null,
                        RollcountJob.redisSink(o).withoutWatermark()));
        List<Long> latencies = new ArrayList<>();
        List<long[]> progress = new ArrayList<>();
        try (Jedis jedis = new Jedis(redisHost, redisPort)) {
            BenchCluster.Run run = cluster.run(
                    env, "rollcount-paced", PARALLELISM, false, Duration.ofSeconds(size.pacedSeconds * 3L + 120), t -> {
                        pollProbes(jedis, latencies);
                        progress.add(new long[] {
                            System.currentTimeMillis(), BenchClock.LAST_INDEX.get(0), BenchClock.LAST_INDEX.get(1)
                        });
                    });
            long deadline = System.currentTimeMillis() + 5_000;
            while (!BenchClock.PROBES.isEmpty() && System.currentTimeMillis() < deadline) {
                pollProbes(jedis, latencies);
                Thread.sleep(20);
            }
            int missing = BenchClock.PROBES.size();
            long[] sorted =
                    latencies.stream().mapToLong(Long::longValue).sorted().toArray();
            result(
                    "job.visibility",
                    "rate_eps",
                    eps(rate),
                    "achieved_eps",
                    eps(count / run.seconds),
                    "p50_ms",
                    String.valueOf(pct(sorted, 50)),
                    "p99_ms",
                    String.valueOf(pct(sorted, 99)),
                    "max_ms",
                    String.valueOf(sorted.length == 0 ? -1 : sorted[sorted.length - 1]),
                    "probes",
                    String.valueOf(sorted.length),
                    "missing",
                    String.valueOf(missing),
                    "workload",
                    "zipf-half-of-max-rate");
            result(
                    "job.checkpoint",
                    "duration_ms",
                    String.valueOf(run.lastCheckpointMillis),
                    "max_duration_ms",
                    String.valueOf(run.maxCheckpointMillis),
                    "full_bytes",
                    String.valueOf(run.lastCheckpointFullBytes),
                    "incremental_bytes",
                    String.valueOf(run.lastCheckpointIncrementalBytes),
                    "checkpoints",
                    String.valueOf(run.checkpoints),
                    "workload",
                    "zipf-paced");
            long active = activeCounters(ev, progress, run.lastCheckpointTriggerMillis, probeEvery);
            long dedup = run.stateBytesOf("drop-duplicates");
            long counting = run.stateBytesOf("count-per-counter");
            result(
                    "job.state",
                    "bytes_per_active_counter",
                    active <= 0 || run.lastCheckpointFullBytes < 0
                            ? "-1"
                            : String.valueOf(run.lastCheckpointFullBytes / active),
                    "counting_bytes_per_active_counter",
                    active <= 0 ? "-1" : String.valueOf(counting / active),
                    "dedup_bytes",
                    String.valueOf(dedup),
                    "active_counters",
                    String.valueOf(active),
                    "source",
                    "last-checkpoint-full-size");
            out.println("  state by operator at the last checkpoint: " + run.stateBytesByOperator);
            if (run.checkpoints == 0)
                out.println(
                        "  (no checkpoint completed in the paced run: it is shorter than two checkpoint intervals)");
        }
        cleanRedis();
    }

    private void pollProbes(Jedis jedis, List<Long> latencies) {
        if (BenchClock.PROBES.isEmpty()) return;
        List<Map.Entry<String, Long>> pending = new ArrayList<>(BenchClock.PROBES.entrySet());
        Pipeline p = jedis.pipelined();
        List<Response<String>> values = new ArrayList<>(pending.size());
        for (Map.Entry<String, Long> e : pending) values.add(p.get(keys.total(e.getKey())));
        p.sync();
        long now = System.currentTimeMillis();
        for (int i = 0; i < pending.size(); i++) {
            if (values.get(i).get() != null) {
                latencies.add(now - pending.get(i).getValue());
                BenchClock.PROBES.remove(pending.get(i).getKey());
            }
        }
    }

    /**
     * Distinct counters among the events each generator part had made when the last checkpoint was triggered
     * (probe events, every {@code probeEvery}-th, count one each; {@code probeEvery} 0: none); -1 without a
     * checkpoint. {@code progress}: samples {time, last index of part 0, last index of part 1}.
     */
    static long activeCounters(BenchEvents ev, List<long[]> progress, long triggerMillis, long probeEvery) {
        if (triggerMillis < 0) return -1;
        long[] at = null;
        for (long[] s : progress) if (s[0] <= triggerMillis) at = s;
        if (at == null) return -1;
        BitSet ranks = new BitSet(ev.counters);
        long probes = 0;
        for (int k = 1; k <= 2; k++) {
            long last = at[k];
            if (last < 0) continue;
            long from = last / ev.partSize() * ev.partSize();
            for (long i = from; i <= last; i++) {
                if (probeEvery > 0 && i % probeEvery == 0) probes++;
                else ranks.set(ev.rank(i));
            }
        }
        return ranks.cardinality() + probes;
    }

    // ------------------------------------------------------------------ Kafka mode

    /**
     * Rollcount and the textbook job with the same outputs (Redis windows and totals, closed windows to
     * {@code counter-rollups} exactly once) reading the same events from a Kafka broker in a child JVM
     * ({@link BrokerProcess}), whose CPU is read from its process; the job's CPU is this JVM's
     * ({@link JobCpu}) and Redis's from INFO cpu, all over the same span of each run. Each variant runs once
     * over the warm-up's events on a topic of their own before it is measured.
     */
    private void kafkaMode() throws Exception {
        BenchEvents ev = events(Workload.zipf, size.kafkaEvents);
        BenchEvents warm = events(Workload.zipf, size.warmupEvents);
        String topic = "bench-events-" + prefix;
        String warmTopic = "bench-warm-" + prefix;
        try (BrokerProcess broker = BrokerProcess.start(work.resolve("kafka"))) {
            broker.createTopics(PARALLELISM, topic);
            broker.createTopics(PARALLELISM, warmTopic);
            produce(broker.clientProperties(), warmTopic, warm);
            produce(broker.clientProperties(), topic, ev);
            BenchClock.brokerCpu = broker::cpuNanos;
            // warm-up, not measured: the broker's JVM (fetches, transactions, their JIT) and the Kafka clients in
            // this one; without it a run of this size measures mostly the broker compiling its own code
            kafkaOurs(broker, warmTopic, "-warm", warm);
            cleanRedis();
            kafkaNaive(broker, warmTopic, "-warm", warm);
            cleanRedis();
            Measured ours = kafkaOurs(broker, topic, "", ev);
            cleanRedis();
            Measured naive = kafkaNaive(broker, topic, "", ev);
            cleanRedis();
            long n = ev.count;
            double oursEps = ours.eps(n);
            double naiveEps = naive.eps(n);
            double job = ours.jobMicros(n);
            double redis = ours.redisMicros(n);
            double brokerUs = ours.run.brokerCpuSeconds * 1e6 / n;
            double all = job + redis + brokerUs;
            double naiveAll = naive.jobMicros(n) + naive.redisMicros(n) + naive.run.brokerCpuSeconds * 1e6 / n;
            result(
                    "job.kafka.zipf",
                    "ours_eps",
                    eps(oursEps),
                    "naive_eps",
                    eps(naiveEps),
                    "ratio_naive",
                    r2(oursEps / naiveEps),
                    "events",
                    String.valueOf(ev.count),
                    "ref",
                    "flink-2.2.1-datastream-window-aggregate-same-kafka-source-redis-set-pxat-kafkasink-exactly-once",
                    "job_cpu_us_per_event",
                    us(job),
                    "redis_cpu_us_per_event",
                    us(redis),
                    "broker_cpu_us_per_event",
                    us(brokerUs),
                    "all_cpu_us_per_event",
                    us(all),
                    "cores_per_million_eps",
                    r2(all),
                    "naive_job_cpu_us_per_event",
                    us(naive.jobMicros(n)),
                    "naive_redis_cpu_us_per_event",
                    us(naive.redisMicros(n)),
                    "naive_broker_cpu_us_per_event",
                    us(naive.run.brokerCpuSeconds * 1e6 / n),
                    "naive_all_cpu_us_per_event",
                    us(naiveAll),
                    "cpu",
                    "job=this-jvm-process-cpu-less-harness-threads;broker=child-jvm-process-cpu;redis=INFO-cpu");
        } finally {
            BenchClock.brokerCpu = null;
        }
    }

    /** Rollcount reading {@code topic} with everything on, to Redis and to the Kafka outputs; {@code run}: a suffix of its ids. */
    private Measured kafkaOurs(BrokerProcess broker, String topic, String run, BenchEvents ev) throws Exception {
        JobOptions o = kafkaOptions(broker.bootstrap(), topic, prefix + run);
        RollcountJob.ensureOutputTopics(o);
        StreamExecutionEnvironment env = environment(RollcountJob.configuration(o));
        RollcountJob.build(
                env,
                o,
                kafkaSource(o, "ours" + run),
                new RollcountJob.Outputs(
                        new StampingSink<>(RollcountJob.redisSink(o)),
                        RollcountJob.deadLetterSink(o),
                        0,
                        RollcountJob.rollupsSink(o),
                        null,
                        RollcountJob.redisSink(o).withoutWatermark()));
        return measured(
                () -> cluster.run(env, "rollcount-kafka" + run, PARALLELISM, true, timeout(ev.count, 1_000), null));
    }

    /** The textbook job with the same Redis and Kafka outputs, reading {@code topic}. */
    private Measured kafkaNaive(BrokerProcess broker, String topic, String run, BenchEvents ev) throws Exception {
        JobOptions o = kafkaOptions(broker.bootstrap(), topic, prefix + "-textbook" + run);
        StreamExecutionEnvironment env = environment(RollcountJob.configuration(o));
        int ends = FairReferences.textbook(env, kafkaSource(o, "naive" + run), redisOutputs(o));
        return measured(() -> cluster.run(env, "textbook-kafka" + run, ends, true, timeout(ev.count, 1_000), null));
    }

    private JobOptions kafkaOptions(String bootstrap, String topic, String transactionalIdPrefix) {
        JobOptions o = options();
        o.source = JobOptions.SourceKind.kafka;
        o.input = null;
        o.kafkaBootstrap = bootstrap;
        o.kafkaTopic = topic;
        o.kafkaTransactionalIdPrefix = transactionalIdPrefix;
        o.kafkaProperties = kafkaProperties;
        return o.validate();
    }

    private static Source<Event, ?, ?> kafkaSource(JobOptions o, String group) {
        return KafkaSource.<Event>builder()
                .setProperties(RollcountJob.kafkaProperties(o))
                .setTopics(o.kafkaTopic)
                .setGroupId(o.kafkaGroupId + "-" + group)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(OffsetsInitializer.latest())
                .setDeserializer(new StampingDeserializer(new EventDeserializer(o.maxFuture.toMillis())))
                .build();
    }

    /** The job's own Kafka deserializer, noting the first event for the clock. */
    private static final class StampingDeserializer implements KafkaRecordDeserializationSchema<Event> {
        private static final long serialVersionUID = 1L;
        private final EventDeserializer inner;

        StampingDeserializer(EventDeserializer inner) {
            this.inner = inner;
        }

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Event> out) throws IOException {
            BenchClock.firstEvent();
            inner.deserialize(record, out);
        }

        @Override
        public TypeInformation<Event> getProducedType() {
            return inner.getProducedType();
        }
    }

    private static void produce(Properties clientProperties, String topic, BenchEvents ev) throws Exception {
        Properties p = new Properties();
        p.putAll(clientProperties);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(256 << 10));
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (long k = 0; k < ev.partSize(); k++) {
                for (int part = 0; part < ev.parallelism; part++) {
                    producer.send(new ProducerRecord<>(topic, part, null, ev.line(part * ev.partSize() + k)));
                }
            }
            producer.flush();
        }
    }

    // ------------------------------------------------------------------ Redis housekeeping and output

    /** The Redis server's CPU time so far (INFO cpu: user + system), in seconds; NaN if it cannot be read. */
    double redisCpuSeconds() {
        try (Jedis jedis = new Jedis(redisHost, redisPort)) {
            return RedisInfo.parse(jedis.info("cpu")).cpuSeconds();
        } catch (RuntimeException e) {
            return Double.NaN;
        }
    }

    /** The Redis server's used_memory (INFO memory), in bytes. */
    long redisUsedMemory() {
        try (Jedis jedis = new Jedis(redisHost, redisPort)) {
            return RedisInfo.parse(jedis.info("memory")).usedMemory();
        }
    }

    void cleanRedis() {
        try (Jedis jedis = new Jedis(redisHost, redisPort)) {
            scanKeys(jedis, 20_000, batch -> jedis.unlink(batch.toArray(String[]::new)));
        } catch (RuntimeException e) {
            out.println("  (could not delete the bench keys " + prefix + ":*: " + e.getMessage() + ")");
        }
    }

    /**
     * The run's job CPU per event by kind of thread ({@link ThreadCpu}): a line for people and a
     * {@code RESULT <benchmark>} line with {@code total_us_per_event=}, {@code covered=} (the share of the
     * job's CPU the kinds account for) and one {@code <kind>=} field per kind of at least 0.05 us per event.
     * Nothing where the threads could not be read (not Linux).
     */
    void threads(String benchmark, BenchCluster.Run run, long events) {
        if (run.threadCpuNanos.isEmpty() || Double.isNaN(run.jobCpuSeconds)) return;
        List<String> pairs = new ArrayList<>();
        pairs.add("total_us_per_event");
        pairs.add(us(run.jobCpuSeconds * 1e6 / events));
        pairs.add("covered");
        pairs.add(r2(ThreadCpu.coverage(run.threadCpuNanos, (long) (run.jobCpuSeconds * 1e9))));
        StringBuilder line = new StringBuilder("  CPU by thread (us/event):");
        for (Map.Entry<String, Long> e : run.threadCpuNanos.entrySet()) {
            double micros = e.getValue() / 1e3 / events;
            if (micros < 0.05) continue;
            pairs.add(e.getKey());
            pairs.add(String.format(Locale.ROOT, "%.2f", micros));
            line.append(String.format(Locale.ROOT, " %s %.2f,", e.getKey(), micros));
        }
        out.println(line.substring(0, line.length() - 1));
        result(benchmark, pairs.toArray(new String[0]));
    }

    void result(String benchmark, String... pairs) {
        StringBuilder sb = new StringBuilder("RESULT ").append(benchmark);
        for (int i = 0; i < pairs.length; i += 2)
            sb.append(' ').append(pairs[i]).append('=').append(pairs[i + 1]);
        out.println(sb);
        out.flush();
    }

    private static double last(List<Double> l) {
        return l.get(l.size() - 1);
    }

    static double median(List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (v.length == 0) return Double.NaN;
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static double spreadPct(List<Double> values) {
        double min = values.stream().mapToDouble(Double::doubleValue).min().orElse(0);
        double max = values.stream().mapToDouble(Double::doubleValue).max().orElse(0);
        return 100 * (max - min) / median(values);
    }

    private static long pct(long[] sorted, int p) {
        if (sorted.length == 0) return -1;
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }

    private static String us(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    private static String ms(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    private static String eps(double v) {
        return String.valueOf(Math.round(v));
    }

    private static String r2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
