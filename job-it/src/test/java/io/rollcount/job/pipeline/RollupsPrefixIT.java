package io.rollcount.job.pipeline;

import static io.rollcount.job.pipeline.RedisLossIT.PREFIX;
import static io.rollcount.job.pipeline.RedisLossIT.compare;
import static io.rollcount.job.pipeline.RedisLossIT.environment;
import static io.rollcount.job.pipeline.RedisLossIT.first;
import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.cli.Main;
import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.metrics.LocalMetrics;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.RedisServerProcess;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import redis.clients.jedis.Jedis;

/**
 * Rollups say whose they are: two jobs with different key prefixes share one broker and its
 * {@code counter-rollups}, and neither the job's own rebuild after a loss of Redis's data nor
 * {@code rebuild-redis} writes the other job's windows. Real servers: the in-process broker, a
 * {@code redis-server} process of the class's own, the job on a MiniCluster with RocksDB and checkpoints.
 *
 * <p>Job B (key prefix {@value #OTHER}) counts the first {@value #B_RECORDS} records of the stream that job A
 * (key prefix {@code rl}) counts whole: B's closed windows hold partial sums of A's, so a rebuild that took
 * B's rollups as A's would leave A's windows short. The tests run in order and share the two runs.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.MethodName.class)
class RollupsPrefixIT {
    private static final int A_RECORDS = 20_000;
    private static final int B_RECORDS = 6_000;
    private static final double RATE = 80;
    /** Test e: records in all, and where each of its two readers holds until the loss. */
    private static final int E_RECORDS = 40_000;

    private static final long E_HOLD_AT = 12_000;
    static final String OTHER = "rb3";

    static final Configuration FLINK_CONF = new Configuration();
    static final LocalMetrics METRICS = LocalMetrics.addTo(FLINK_CONF);

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slots(2, FLINK_CONF);

    @TempDir
    static Path dir;

    KafkaBroker broker;
    RedisServerProcess server;
    KafkaInput a;

    @BeforeAll
    void start() throws Exception {
        broker = new KafkaBroker(0, dir.resolve("kafka")).start();
        server = RedisServerProcess.launch();
    }

    @AfterAll
    void stop() throws Exception {
        if (server != null) server.close();
        if (broker != null) broker.close();
    }

    /**
     * Job A counts all its records and stops with a savepoint; job B counts the first of them (bounded); A resumes,
     * and Redis loses its data while A runs: A's rebuild writes A's own windows back, exact, and none of B's (whose
     * rollups of the same windows came after A's in the topic).
     */
    @Test
    void a_theJobsRebuildTakesOnlyItsOwnPrefix() throws Exception {
        a = KafkaInput.withinOneHour("events-a", 23, A_RECORDS, RATE);
        a.produceTo(broker, A_RECORDS);
        JobSettings aOptions = options("events-a", false, PREFIX);
        StreamExecutionEnvironment envA = environment(aOptions, null);
        Pipeline.build(envA, aOptions, JobConnectors.kafkaSource(aOptions), JobRuns.kafkaOutputs(aOptions));
        JobClient first = envA.executeAsync("rollups-prefix-a1");
        await("all of A's input in a checkpoint", () -> committed(aOptions), first);
        String savepoint = first.stopWithSavepoint(
                        true, dir.resolve("sp").toUri().toString(), SavepointFormatType.CANONICAL)
                .get(180, TimeUnit.SECONDS);

        KafkaInput b = new KafkaInput("events-b", 23, A_RECORDS, a.startTs, RATE);
        b.produceTo(broker, B_RECORDS);
        JobSettings bOptions = options("events-b", true, OTHER);
        StreamExecutionEnvironment envB = environment(bOptions, null);
        Pipeline.build(envB, bOptions, JobConnectors.kafkaSource(bOptions), JobRuns.kafkaOutputs(bOptions));
        envB.execute("rollups-prefix-b");

        long finishedBefore = METRICS.sum(RollcountMetrics.REDIS_REBUILDS_FINISHED);
        StreamExecutionEnvironment resumed = environment(aOptions, savepoint);
        Pipeline.build(resumed, aOptions, JobConnectors.kafkaSource(aOptions), JobRuns.kafkaOutputs(aOptions));
        JobClient job = resumed.executeAsync("rollups-prefix-a2");
        try (Jedis jedis = new Jedis("127.0.0.1", server.port)) {
            Thread.sleep(3_000); // restored and running, a checkpoint or two
            jedis.flushAll();
            // both count-per-counter subtasks from their state, and the rebuild from counter-rollups, both readings
            await(
                    "the rebuilds",
                    () -> METRICS.sum(RollcountMetrics.REDIS_REBUILDS_FINISHED) - finishedBefore >= 3,
                    job);
            Thread.sleep(2_000); // the writers' next flushes
            job.stopWithSavepoint(true, dir.resolve("sp").toUri().toString(), SavepointFormatType.CANONICAL)
                    .get(180, TimeUnit.SECONDS);
            RedisLossIT.Compared c = compare(jedis, a.truth, false);
            c.assertExact("after the job's rebuild", true);
            System.out.printf("RollupsPrefixIT a: %s%n", c);
        } finally {
            if (!job.getJobStatus().get().isGloballyTerminalState())
                job.cancel().get(60, TimeUnit.SECONDS);
        }
    }

    /** rebuild-redis after a loss with both prefixes' rollups in the topic: A's windows exact, none of B's. */
    @Test
    void b_rebuildRedisTakesOnlyItsOwnPrefix() throws Exception {
        try (Jedis jedis = new Jedis("127.0.0.1", server.port)) {
            jedis.flushAll();
            CliOut r = rebuild("--redis.key-prefix", PREFIX);
            assertThat(r.code).as(r.toString()).isZero();
            compare(jedis, a.truth, false).assertExact("after rebuild-redis", false);
            assertThat(r.out).contains("passed over").contains("of other key prefixes");
            assertThat(jedis.keys(OTHER + ":*"))
                    .as("no key of the other prefix")
                    .isEmpty();
        }
    }

    /**
     * A value lost on its own (its version key left): rebuild-redis writes it back, whatever the version key says;
     * a value still there is left as Redis has it.
     */
    @Test
    void c_rebuildRedisRestoresAValueWhoseVersionKeySurvived() throws Exception {
        try (Jedis jedis = new Jedis("127.0.0.1", server.port)) {
            List<String> values = new ArrayList<>(jedis.keys(PREFIX + ":{*}:1m:*"));
            assertThat(values).as("1m windows in Redis").isNotEmpty();
            // each value gone on its own, its version key left (an eviction, a DEL): the version as new as any
            for (String k : values) jedis.set(k.replace("}:1m:", "}:_v:1m:"), "1000000000");
            Map<String, String> before = new TreeMap<>();
            for (String k : values) before.put(k, jedis.get(k));
            for (String k : values) jedis.del(k);
            CliOut r = rebuild("--redis.key-prefix", PREFIX);
            assertThat(r.code).as(r.toString()).isZero();
            Map<String, String> after = new TreeMap<>();
            for (String k : values) after.put(k, jedis.get(k));
            List<String> missing =
                    values.stream().filter(k -> after.get(k) == null).toList();
            assertThat(missing)
                    .as("1m windows still missing, e.g. " + first(missing))
                    .isEmpty();
            assertThat(after).isEqualTo(before);
            compare(jedis, a.truth, false).assertExact("after rebuild-redis of lone values", false);
        }
    }

    /** A prefix without rollups, a topic that does not exist, rollups that name no prefix. */
    @Test
    void d_rebuildRedisRefusalsAndLegacyRollups() throws Exception {
        assertThat(ownRecords(OTHER)).as("B's rollups name B's prefix").isPositive();
        try (Jedis jedis = new Jedis("127.0.0.1", server.port)) {
            long keys = jedis.dbSize();
            CliOut typo = rebuild("--redis.key-prefix", "rl1");
            assertThat(typo.code).isEqualTo(2);
            assertThat(typo.err.trim())
                    .isEqualTo("rollcount rebuild-redis: no rollups of key prefix 'rl1' in topic counter-rollups"
                            + " (" + ownRecords(PREFIX, OTHER) + " of other key prefixes, 0 naming none);"
                            + " check --redis.key-prefix, or give --force");
            assertThat(jedis.dbSize()).as("nothing written").isEqualTo(keys);
            CliOut forced = rebuild("--redis.key-prefix", "rl1", "--force");
            assertThat(forced.code).as(forced.toString()).isZero();
            assertThat(jedis.keys("rl1:*")).isEmpty();

            CliOut noTopic = rebuild("--redis.key-prefix", PREFIX, "--kafka.topic.rollups", "nosuch");
            assertThat(noTopic.code).isEqualTo(2);
            assertThat(noTopic.err.trim())
                    .startsWith("rollcount rebuild-redis: topic nosuch does not exist at ")
                    .doesNotContain("\n");
            try (var admin = org.apache.kafka.clients.admin.Admin.create(broker.adminProperties())) {
                assertThat(admin.listTopics().names().get()).doesNotContain("nosuch");
            }

            // a record that names no prefix (as versions before the field wrote): passed over unless asked for
            String legacyKey = PREFIX + ":{legacy:1:likes}:1h:" + (a.startTs / 3_600_000L * 3_600L);
            try (KafkaProducer<byte[], byte[]> p = KafkaInput.producer(broker.adminProperties())) {
                long start = a.startTs / 3_600_000L * 3_600_000L;
                String value = "{\"counter\":\"legacy:1:likes\",\"res\":\"1h\",\"start\":" + start + ",\"end\":"
                        + (start + 3_600_000L) + ",\"sum\":7,\"events\":7,\"uniques\":null,\"revision\":0}";
                p.send(new ProducerRecord<>(
                                KafkaIO.ROLLUPS_TOPIC,
                                "legacy:1:likes".getBytes(StandardCharsets.UTF_8),
                                value.getBytes(StandardCharsets.UTF_8)))
                        .get();
            }
            CliOut without = rebuild("--redis.key-prefix", PREFIX);
            assertThat(without.code).as(without.toString()).isZero();
            assertThat(without.out).contains("and 1 naming no key prefix (--legacy-rollups takes them)");
            assertThat(jedis.get(legacyKey)).isNull();
            CliOut with = rebuild("--redis.key-prefix", PREFIX, "--legacy-rollups");
            assertThat(with.code).as(with.toString()).isZero();
            assertThat(with.out).contains("took 1 naming no key prefix (--legacy-rollups)");
            assertThat(jedis.get(legacyKey)).isEqualTo("7");
            compare(jedis, a.truth, false).assertExact("after rebuild-redis --legacy-rollups", false);
        }
    }

    /**
     * Redis loses its data during a bounded run, after windows closed whose rollups are still in the open
     * transaction (no checkpoint has completed yet) and whose values the job's state no longer holds: the run
     * ends only after its rebuild read them once committed, and every closed 1m/5m/1h/1d window is in Redis.
     */
    @Test
    void e_aLossDuringABoundedRunLeavesNoClosedWindowMissing() throws Exception {
        KafkaInput e = KafkaInput.withinOneHour("events-e", 31, E_RECORDS, RATE);
        broker.createTopics(2, "events-e"); // a partition per reader: each holds its own at the same event time
        e.produceTo(broker, E_RECORDS);
        JobSettings o = JobRuns.kafkaSettings(
                        broker.bootstrap(), "events-e", "rp-e", true, server.url(), PREFIX, Duration.ofSeconds(8))
                .toBuilder()
                .set("--idle-timeout", Duration.ofMinutes(10))
                // topics of its own (--kafka.topic.*): the topic's rollups of key prefix rl are this run's alone
                .set("--kafka.topic.rollups", "rollups-e")
                .set("--kafka.topic.trending", "trending-e")
                .set("--kafka.topic.dlq", "dlq-e")
                .build();
        JobConnectors.ensureOutputTopics(o);
        try (Jedis jedis = new Jedis("127.0.0.1", server.port)) {
            jedis.flushAll();
            FailureInjection.reset(FailureInjection.Place.NONE, false);
            long finishedBefore = METRICS.sum(RollcountMetrics.REDIS_REBUILDS_FINISHED);
            // Flink triggers the first checkpoint after a random delay between the minimum pause and the interval:
            // a minimum pause of the whole interval keeps it 8 s away, after the loss below
            Configuration conf = JobRuns.configuration(o, 3, Duration.ofSeconds(1));
            conf.set(
                    org.apache.flink.configuration.CheckpointingOptions.MIN_PAUSE_BETWEEN_CHECKPOINTS,
                    o.checkpointInterval);
            StreamExecutionEnvironment env = JobRuns.environment(conf, 2);
            // each reader holds after its share of the first records, until the test opens the gate
            Pipeline.build(env, o, new GatedSource<>(JobConnectors.kafkaSource(o), E_HOLD_AT), JobRuns.kafkaOutputs(o));
            JobClient job = env.executeAsync("rollups-prefix-e");
            try {
                // 1m windows closed and left the state (a minute of lateness), their rollups not committed yet
                await("closed 1m windows past the lateness", () -> closedPastLateness(jedis, e.startTs) >= 2, job);
                assertThat(FailureInjection.completedCheckpoints())
                        .as("no checkpoint completed before the loss (the case needs uncommitted rollups)")
                        .isZero();
                jedis.flushAll();
                await(
                        "the rebuild from the job's state",
                        () -> METRICS.sum(RollcountMetrics.REDIS_REBUILDS_FINISHED) - finishedBefore >= 2,
                        job);
                FailureInjection.released = true;
                job.getJobExecutionResult().get(180, TimeUnit.SECONDS);
            } finally {
                if (!job.getJobStatus().get().isGloballyTerminalState())
                    job.cancel().get(60, TimeUnit.SECONDS);
            }
            RedisLossIT.Compared c = compare(jedis, e.truth, false);
            c.assertExact("after a bounded run with a loss", true);
            System.out.printf("RollupsPrefixIT e: %s%n", c);
        }
    }

    /** How many 1m windows the job's watermark in Redis passed by more than the allowed lateness (a minute). */
    private static long closedPastLateness(Jedis jedis, long startTs) {
        String w = jedis.get(PREFIX + ":meta:watermark");
        if (w == null) return 0;
        long past = Long.parseLong(w) - 60_000;
        return Math.max(0, (past - Resolution.M1.windowStart(startTs)) / 60_000);
    }

    // ------------------------------------------------------------------ helpers

    record CliOut(int code, String out, String err) {}

    private CliOut rebuild(String... more) {
        List<String> args = new ArrayList<>(
                List.of("rebuild-redis", "--kafka.bootstrap", broker.bootstrap(), "--redis", server.url()));
        args.addAll(List.of(more));
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new Main());
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int code = cli.execute(args.toArray(String[]::new));
        return new CliOut(code, out.toString(), err.toString());
    }

    /** Committed records of counter-rollups that name one of {@code prefixes}. */
    private long ownRecords(String... prefixes) throws Exception {
        long n = 0;
        for (var r : KafkaOutputs.read(broker.adminProperties(), KafkaIO.ROLLUPS_TOPIC, Map.of(), "read_committed")) {
            String v = new String(r.value(), StandardCharsets.UTF_8);
            for (String p : prefixes) if (v.startsWith("{\"prefix\":\"" + p + "\",")) n++;
        }
        return n;
    }

    private JobSettings options(String topic, boolean bounded, String prefix) {
        JobSettings o = JobRuns.kafkaSettings(
                        broker.bootstrap(),
                        topic,
                        "rp-" + prefix,
                        bounded,
                        server.url(),
                        prefix,
                        Duration.ofMillis(300))
                .toBuilder()
                .set("--idle-timeout", Duration.ofMinutes(10))
                .build();
        JobConnectors.ensureOutputTopics(o);
        return o;
    }

    private boolean committed(JobSettings options) throws Exception {
        return KafkaOutputs.committedToEnd(broker.adminProperties(), options.kafkaTopic, options.kafkaGroupId);
    }

    private static void await(String what, CheckedCondition done, JobClient job) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (!done.met()) {
            if (job.getJobStatus().get().isGloballyTerminalState())
                throw new AssertionError("the job ended while waiting for " + what);
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting for " + what);
            Thread.sleep(200);
        }
    }

    interface CheckedCondition {
        boolean met() throws Exception;
    }
}
