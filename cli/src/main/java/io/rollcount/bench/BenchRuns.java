package io.rollcount.bench;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.files.DeadLetterFileSink;
import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
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
import java.util.List;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * The variants the job benchmarks run on their MiniCluster ({@link BenchCluster}), on generated events of a
 * {@link JobBench.Size}: Rollcount exactly as {@code rollcount run} builds it, the textbook DataStream job and
 * Flink SQL (their results discarded or written to Redis as ours), and the generator alone; with the Redis
 * server's CPU over a run ({@link #measured}) and the housekeeping of the bench's key prefix.
 */
final class BenchRuns {

    static final long SEED = 20261130L;

    final JobBench.Size size;
    final PrintStream out;
    final String redisUrl;
    final String redisHost;
    final int redisPort;
    final String prefix = "rcbench" + UUID.randomUUID().toString().substring(0, 6);
    final RedisKeys keys = new RedisKeys(prefix);
    final Path work;
    private BenchCluster cluster;
    private final AtomicLong heapPeak = new AtomicLong();

    /** {@code --policies} of Rollcount's runs ({@link #ours}); null: none. */
    String policiesFile;
    /** The checkpoint interval of Rollcount's runs. */
    Duration checkpointInterval = Duration.ofSeconds(10);
    /** The checkpoint timeout of every run; null: Flink's default (10 minutes, after which the job fails). */
    Duration checkpointTimeout;

    BenchRuns(JobBench.Size size, String redisUrl, Path work, PrintStream out) {
        this.size = size;
        this.redisUrl = redisUrl;
        URI u = URI.create(redisUrl);
        this.redisHost = u.getHost();
        this.redisPort = u.getPort() < 0 ? 6379 : u.getPort();
        this.work = work;
        this.out = out;
    }

    /** The MiniCluster of {@link #withCluster}, for a job built by the caller. */
    BenchCluster cluster() {
        return cluster;
    }

    /** Redis commands the writers of the jobs on the bench's cluster have sent so far. */
    long commandsSent() {
        return cluster.metrics.sum(RollcountMetrics.REDIS_COMMANDS_SENT);
    }

    /** The most heap used while the last {@link #ours(BenchEvents)} ran, sampled about every 100 ms. */
    long heapPeak() {
        return heapPeak.get();
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

    /** Runs {@code body} on a MiniCluster of the bench's own, and deletes the bench's keys after it. */
    void withCluster(OnCluster body) throws Exception {
        Files.createDirectories(work);
        try (BenchCluster c = new BenchCluster(JobBench.PARALLELISM, work)) {
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

    /** The dashboard reader of a zipf run: the 5 hottest counters and 5 cold ones of the workload, alternating. */
    ReadLatencyProbe readerFor(BenchEvents ev) throws IOException, InterruptedException {
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

    BenchEvents events(Workload w, long count) {
        double span = count / size.eventTimeRate() * 1000;
        long start = (System.currentTimeMillis() - (long) span - 60_000) / 1000 * 1000;
        return new BenchEvents(
                SEED + w.ordinal(),
                w,
                size.counters(),
                size.users(),
                count,
                JobBench.PARALLELISM,
                start,
                size.eventTimeRate(),
                2_000);
    }

    /** The job's settings of the benchmark's runs; {@link JobSettings#toBuilder} makes a variant. */
    JobSettings options() {
        return JobSettings.builder()
                .set("--redis", redisUrl)
                .set("--redis.key-prefix", prefix)
                .set("--parallelism", JobBench.PARALLELISM)
                .set("--checkpoint.interval", checkpointInterval)
                .set("--policies", policiesFile)
                .set("--dlq", work.resolve("dlq.jsonl"))
                .set("--input", "-")
                .set("--source", JobSettings.SourceKind.files)
                .build();
    }

    StreamExecutionEnvironment environment(Configuration jobConf) {
        Configuration conf = cluster.jobConfiguration(jobConf);
        if (checkpointTimeout != null)
            conf.set(org.apache.flink.configuration.CheckpointingOptions.CHECKPOINTING_TIMEOUT, checkpointTimeout);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(JobBench.PARALLELISM);
        return env;
    }

    /**
     * Redis's CPU per event of the floor: Rollcount with every count and user write a plain command (no guard, no
     * mark), in microseconds; Redis left empty.
     */
    double floorRedisMicros(BenchEvents ev) throws Exception {
        double floorCpu = redisCpuSeconds();
        ours(ev, RedisWrites.FLOOR);
        double micros = (redisCpuSeconds() - floorCpu) * 1e6 / ev.count;
        cleanRedis();
        return micros;
    }

    private void sampleHeap(long ignored) {
        heapPeak.accumulateAndGet(
                ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed(), Math::max);
    }

    /** Rollcount exactly as {@code rollcount run} builds it, from the generator source to the real Redis. */
    BenchCluster.Run ours(BenchEvents ev) throws Exception {
        return ours(ev, RedisWrites.SENT);
    }

    /** Rollcount with its Redis writes as {@code writes} says (sent, the plain-writes floor, or discarded). */
    BenchCluster.Run ours(BenchEvents ev, RedisWrites writes) throws Exception {
        return ours(ev, writes, this::sampleHeap);
    }

    /** As {@link #ours(BenchEvents, RedisWrites)}, with {@code whileRunning} called about every 100 ms while it runs. */
    BenchCluster.Run ours(BenchEvents ev, RedisWrites writes, java.util.function.Consumer<Long> whileRunning)
            throws Exception {
        JobSettings o = options();
        StreamExecutionEnvironment env = environment(FlinkSettings.configuration(o));
        RedisSink sink = writes == RedisWrites.FLOOR
                ? JobConnectors.redisSinkBuilder(o).setPlainWritesOnly(true).build()
                : JobConnectors.redisSink(o);
        boolean discard = writes == RedisWrites.DISCARDED;
        Pipeline.build(
                env,
                o,
                GeneratedEvents.source(ev),
                new Pipeline.Outputs(
                        new StampingSink<>(discard ? null : sink),
                        new DeadLetterFileSink(o.dlq),
                        1,
                        null,
                        null,
                        discard ? new StampingSink<>(null) : sink.withoutWatermark()));
        heapPeak.set(0);
        return cluster.run(
                env, "rollcount-" + ev.workload, JobBench.PARALLELISM, false, timeout(ev.count, 1_000), whileRunning);
    }

    BenchCluster.Run naive(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(FlinkSettings.configuration(options()));
        int ends = References.textbook(env, GeneratedEvents.source(ev));
        return cluster.run(env, "textbook-" + ev.workload, ends, false, timeout(ev.count, 1_000), null);
    }

    BenchCluster.Run sql(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(FlinkSettings.configuration(options()));
        int ends = References.sql(env, GeneratedEvents.source(ev));
        return cluster.run(env, "sql-" + ev.workload, ends, false, timeout(ev.count, 1_000), null);
    }

    /** The textbook job with Rollcount's Redis outputs (windows and totals; {@link FairReferences#textbook}). */
    BenchCluster.Run naiveRedis(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(FlinkSettings.configuration(options()));
        int ends = FairReferences.textbook(env, GeneratedEvents.source(ev), redisOutputs(null));
        return cluster.run(env, "textbook-redis-" + ev.workload, ends, false, timeout(ev.count, 1_000), null);
    }

    /** Flink SQL with Rollcount's Redis outputs ({@link FairReferences#sql}). */
    BenchCluster.Run sqlRedis(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(FlinkSettings.configuration(options()));
        int ends = FairReferences.sql(env, GeneratedEvents.source(ev), redisOutputs(null));
        return cluster.run(env, "sql-redis-" + ev.workload, ends, false, timeout(ev.count, 1_000), null);
    }

    /**
     * The references' outputs: this bench's Redis and key prefix, and (Kafka mode) the rollups of the
     * resolutions Rollcount's {@code counter-rollups} carries by default (1m, 1h and 1d).
     */
    FairReferences.Outputs redisOutputs(JobSettings kafkaOptions) {
        return new FairReferences.Outputs(
                redisHost,
                redisPort,
                keys,
                kafkaOptions == null ? null : JobConnectors.rollupsSink(kafkaOptions),
                ROLLUP_RESOLUTIONS);
    }

    /** The resolutions of Rollcount's {@code counter-rollups} records. */
    static final java.util.Set<io.rollcount.job.model.Resolution> ROLLUP_RESOLUTIONS = java.util.EnumSet.of(
            io.rollcount.job.model.Resolution.M1,
            io.rollcount.job.model.Resolution.H1,
            io.rollcount.job.model.Resolution.D1);

    /** The job built in {@code env} by the caller, run over the same events (the "same outputs" test). */
    BenchCluster.Run runBuilt(StreamExecutionEnvironment env, String name, int ends, long events) throws Exception {
        return cluster.run(env, name, ends, false, timeout(events, 1_000), null);
    }

    BenchCluster.Run sourceOnly(BenchEvents ev) throws Exception {
        StreamExecutionEnvironment env = environment(FlinkSettings.configuration(options()));
        env.fromSource(GeneratedEvents.source(ev), References.watermarks(), "events", TypeInformation.of(Event.class))
                .sinkTo(new StampingSink<>(null));
        return cluster.run(env, "source-" + ev.workload, JobBench.PARALLELISM, false, timeout(ev.count, 5_000), null);
    }

    static Duration timeout(long events, double slowestEps) {
        return Duration.ofSeconds(120 + (long) (events / slowestEps));
    }

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
}
