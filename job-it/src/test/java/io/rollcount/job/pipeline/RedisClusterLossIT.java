package io.rollcount.job.pipeline;

import static io.rollcount.job.pipeline.RedisLossIT.PREFIX;
import static io.rollcount.job.pipeline.RedisLossIT.first;
import static io.rollcount.job.support.JobAwait.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.metrics.LocalMetrics;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.pipeline.RedisLossIT.Compared;
import io.rollcount.job.redis.RedisClusterProcesses;
import io.rollcount.job.support.MiniClusters;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;

/**
 * Issue 19 in a Redis Cluster (3 masters, 3 replicas; real {@code redis-server} processes): one master loses
 * its data alone (a {@code FLUSHALL} on that master, which its replica follows), a master other than the one
 * that holds {@code P:_epoch}. The job notices it through that master's own epoch key and rebuilds; and
 * {@code ./rollcount rebuild-redis --redis.cluster} after a loss while the job was stopped. The expected values
 * are the ground truth of the records, as in {@link RedisLossIT}.
 */
class RedisClusterLossIT {
    private static final int BEFORE = 12_000;
    private static final int AFTER = 4_000;
    private static final double RATE = 80;

    @RegisterExtension
    static final RedisClusterProcesses CLUSTER = new RedisClusterProcesses();

    static final Configuration FLINK_CONF = new Configuration();
    static final LocalMetrics METRICS = LocalMetrics.addTo(FLINK_CONF);

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slots(2, FLINK_CONF);

    @TempDir
    Path dir;

    KafkaBroker broker;
    String id;

    @BeforeEach
    void start() throws Exception {
        broker = new KafkaBroker(0, dir.resolve("kafka")).start();
        id = UUID.randomUUID().toString().substring(0, 8);
        for (int port : CLUSTER.masterPorts()) {
            try (Jedis j = new Jedis("127.0.0.1", port)) {
                j.flushAll(); // the prefix is the same in every test of the class
            }
        }
    }

    @AfterEach
    void stop() {
        if (broker != null) broker.close();
    }

    @Test
    void aMasterOtherThanTheEpochsLosesItsDataDuringALiveRun() throws Exception {
        String topic = "events-cluster-live";
        KafkaInput in = KafkaInput.withinOneHour(topic, 21, BEFORE + AFTER, RATE);
        in.produceTo(broker, BEFORE);
        JobSettings options = options(topic);
        long lossesBefore = METRICS.sum(RollcountMetrics.REDIS_DATA_LOST);
        long finishedBefore = METRICS.sum(RollcountMetrics.REDIS_REBUILDS_FINISHED);
        long keysBefore = METRICS.sum(RollcountMetrics.REDIS_REBUILD_KEYS);
        StreamExecutionEnvironment env = environment(options);
        Pipeline.build(env, options, JobConnectors.kafkaSource(options), outputs(options));
        JobClient job = env.executeAsync("redis-cluster-loss");
        try {
            await("the first records read and in a checkpoint", Duration.ofSeconds(120), () -> committed(options), job);
            Map<Integer, List<String>> byMaster = CLUSTER.keysByMaster(PREFIX);
            int epochMaster = byMaster.entrySet().stream()
                    .filter(e -> e.getValue().contains(PREFIX + ":_epoch"))
                    .findFirst()
                    .orElseThrow()
                    .getKey();
            int victim = byMaster.keySet().stream()
                    .filter(p -> p != epochMaster)
                    .findFirst()
                    .orElseThrow();
            assertThat(byMaster.get(victim))
                    .as("the victim's own epoch key")
                    .anyMatch(k -> k.startsWith(PREFIX + ":_epoch:{"));
            int victimKeys = byMaster.get(victim).size();

            Thread producer = new Thread(
                    () -> {
                        try (KafkaProducer<byte[], byte[]> p = KafkaInput.producer(broker.adminProperties())) {
                            for (int sent = 0; sent < AFTER; sent += 100) {
                                in.produce(p, 100);
                                Thread.sleep(25);
                            }
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    },
                    "live-producer");
            producer.start();
            Thread.sleep(1_000);
            Map<String, Map<String, Double>> listsBefore;
            try (RedisClusterClient client = CLUSTER.client()) {
                listsBefore = RedisLossIT.topLists(client, CLUSTER.keys(PREFIX));
            }
            try (Jedis j = new Jedis("127.0.0.1", victim)) {
                j.flushAll();
            }
            try (RedisClusterClient c = CLUSTER.client()) {
                assertThat(c.exists(PREFIX + ":_epoch"))
                        .as("the prefix's epoch key, on another master, is still there")
                        .isTrue();
            }
            // the two count-per-counter subtasks' rebuilds, and the one from counter-rollups
            await(
                    "the rebuilds",
                    Duration.ofSeconds(90),
                    () -> METRICS.sum(RollcountMetrics.REDIS_REBUILDS_FINISHED) - finishedBefore >= 3,
                    job);
            producer.join(60_000);
            await("every record read and in a checkpoint", Duration.ofSeconds(120), () -> committed(options), job);
            Thread.sleep(2_000); // the writers' next flushes
            Compared c;
            int lists;
            try (RedisClusterClient client = CLUSTER.client()) {
                c = RedisLossIT.compare(client, in.truth, false);
                // the window top-K lists the job had written, those on the victim among them, are there again
                lists = RedisLossIT.assertTopListsAsBefore(
                        listsBefore, RedisLossIT.topLists(client, CLUSTER.keys(PREFIX)));
            }
            assertThat(METRICS.sum(RollcountMetrics.REDIS_DATA_LOST) - lossesBefore)
                    .as("writers that saw the loss of one master's data")
                    .isPositive();
            assertThat(c.wrong)
                    .as("keys with a wrong value, e.g. " + first(c.wrong))
                    .isEmpty();
            assertThat(c.missingTotals)
                    .as("totals missing, e.g. " + first(c.missingTotals))
                    .isEmpty();
            assertThat(c.missingWindows)
                    .as("1m/5m/1h/1d windows missing, e.g. " + first(c.missingWindows))
                    .isEmpty();
            assertThat(c.sketchesDiffering)
                    .as("1h/1d uniques whose count differs from PFADD of their users, e.g. "
                            + first(c.sketchesDiffering))
                    .isEmpty();
            assertThat(c.missing5s)
                    .as("closed 5s windows of the master that lost its data are lost (not in counter-rollups)")
                    .isPositive();
            System.out.printf(
                    "RedisClusterLossIT a: master %d (%,d keys) lost its data, %s held %s:_epoch;"
                            + " rebuilt %,d keys in %.2f s; %d window top-K lists as the job wrote them; after: %s%n",
                    victim,
                    victimKeys,
                    epochMaster,
                    PREFIX,
                    METRICS.sum(RollcountMetrics.REDIS_REBUILD_KEYS) - keysBefore,
                    METRICS.maxLive(RollcountMetrics.REDIS_REBUILD_LONGEST_MS) / 1e3,
                    lists,
                    c);
        } finally {
            if (!job.getJobStatus().get().isGloballyTerminalState())
                job.cancel().get(60, TimeUnit.SECONDS);
        }
    }

    /**
     * The loss while the job is stopped: every master flushed after the run; {@code rebuild-redis
     * --redis.cluster} brings every closed 1m/5m/1h/1d window back from counter-rollups, onto the master of
     * each key's slot, and the window top-K lists exactly as the job wrote them, under the job's policies
     * (namespace {@code api} without top-K lists, {@code post} with lists of 5); running it again changes nothing.
     */
    @Test
    void rebuildRedisWritesTheClosedWindowsBackIntoTheCluster() throws Exception {
        String topic = "events-cluster-stopped";
        KafkaInput in = KafkaInput.withinOneHour(topic, 22, BEFORE, RATE);
        in.produceTo(broker, BEFORE);
        Path policies = dir.resolve("policies.yaml");
        java.nio.file.Files.writeString(policies, "- match: api\n  topk: false\n- match: post\n  topk: 5\n");
        JobSettings options = options(topic, policies.toString());
        StreamExecutionEnvironment env = environment(options);
        Pipeline.build(env, options, JobConnectors.kafkaSource(options), outputs(options));
        JobClient job = env.executeAsync("redis-cluster-stopped");
        try {
            await("all input read and in a checkpoint", Duration.ofSeconds(120), () -> committed(options), job);
            // drained: every window closes, and is in counter-rollups
            job.stopWithSavepoint(
                            true,
                            dir.resolve("savepoints").toUri().toString(),
                            org.apache.flink.core.execution.SavepointFormatType.CANONICAL)
                    .get(180, TimeUnit.SECONDS);
        } finally {
            if (!job.getJobStatus().get().isGloballyTerminalState())
                job.cancel().get(60, TimeUnit.SECONDS);
        }
        Map<String, Map<String, Double>> listsBefore;
        try (RedisClusterClient client = CLUSTER.client()) {
            listsBefore = RedisLossIT.topLists(client, CLUSTER.keys(PREFIX));
        }
        for (int port : CLUSTER.masterPorts()) {
            try (Jedis j = new Jedis("127.0.0.1", port)) {
                j.flushAll();
            }
        }
        assertThat(CLUSTER.keys(PREFIX)).isEmpty();

        String[] args = {
            "rebuild-redis",
            "--kafka.bootstrap",
            broker.bootstrap(),
            "--redis",
            CLUSTER.url(),
            "--redis.cluster",
            "--redis.key-prefix",
            PREFIX,
            "--from",
            Long.toString(Resolution.D1.windowStart(in.startTs)),
            "--policies",
            policies.toString()
        };
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new io.rollcount.cli.Main());
        cli.setOut(new PrintWriter(out));
        cli.setErr(new PrintWriter(err));
        long t0 = System.nanoTime();
        int code = cli.execute(args);
        double seconds = (System.nanoTime() - t0) / 1e9;
        assertThat(code).as("rebuild-redis exit code; it said " + out + err).isZero();
        assertThat(out.toString()).contains("keys written");
        Compared c;
        try (RedisClusterClient client = CLUSTER.client()) {
            c = RedisLossIT.compare(client, in.truth, false);
        }
        assertThat(c.wrong)
                .as("keys with a wrong value, e.g. " + first(c.wrong))
                .isEmpty();
        assertThat(c.missingWindows)
                .as("closed 1m/5m/1h/1d windows missing after rebuild-redis, e.g. " + first(c.missingWindows))
                .isEmpty();
        assertThat(c.missingTotals)
                .as("totals are in the job's state, not in counter-rollups")
                .isNotEmpty();
        int lists;
        try (RedisClusterClient client = CLUSTER.client()) {
            Map<String, Map<String, Double>> rebuilt = RedisLossIT.topLists(client, CLUSTER.keys(PREFIX));
            lists = RedisLossIT.assertTopListsAsBefore(listsBefore, rebuilt);
            assertThat(rebuilt.keySet()).as("no list the job did not write").isEqualTo(listsBefore.keySet());
        }
        assertThat(listsBefore.keySet())
                .as("lists of post, of 5 counters at most; none of api")
                .anyMatch(k -> k.startsWith(PREFIX + ":top:post:"))
                .noneMatch(k -> k.startsWith(PREFIX + ":top:api:"));
        listsBefore.forEach((k, list) -> {
            if (k.startsWith(PREFIX + ":top:post:")) assertThat(list).as(k).hasSizeLessThanOrEqualTo(5);
        });
        Map<Integer, List<String>> byMaster = CLUSTER.keysByMaster(PREFIX);
        assertThat(byMaster.values())
                .as("keys written on every master")
                .allSatisfy(k -> assertThat(k).isNotEmpty());
        int keys = CLUSTER.keys(PREFIX).size();
        // again: guarded writes, nothing changes
        StringWriter again = new StringWriter();
        CommandLine cli2 = new CommandLine(new io.rollcount.cli.Main());
        cli2.setOut(new PrintWriter(again));
        assertThat(cli2.execute(args)).isZero();
        assertThat(CLUSTER.keys(PREFIX)).hasSize(keys);
        try (RedisClusterClient client = CLUSTER.client()) {
            Compared twice = RedisLossIT.compare(client, in.truth, false);
            assertThat(twice.wrong)
                    .as("keys with a wrong value after a second rebuild-redis")
                    .isEmpty();
            assertThat(twice.missingWindows).isEmpty();
            RedisLossIT.assertTopListsAsBefore(listsBefore, RedisLossIT.topLists(client, CLUSTER.keys(PREFIX)));
        }
        System.out.printf(
                "RESULT redis.rebuild-cli cluster keys=%d seconds=%.2f lists=%d (%s)%n",
                keys, seconds, lists, out.toString().trim());
    }

    // ------------------------------------------------------------------ the run's setup

    private JobSettings options(String topic) {
        return options(topic, null);
    }

    private JobSettings options(String topic, String policiesFile) {
        JobSettings o = JobSettings.builder()
                .set("--policies", policiesFile)
                .set("--source", JobSettings.SourceKind.kafka)
                .set("--kafka.bootstrap", broker.bootstrap())
                .set("--kafka.topic", topic)
                .set("--kafka.group-id", "rcl-" + id)
                .set("--kafka.starting-offsets", JobSettings.StartingOffsets.earliest)
                .set("--kafka.transactional-id-prefix", "rcl-" + id)
                .set("--redis", CLUSTER.url())
                .set("--redis.cluster", true)
                .set("--redis.key-prefix", PREFIX)
                .set("--checkpoint.interval", Duration.ofMillis(300))
                .set("--idle-timeout", Duration.ofMinutes(10))
                .build();
        JobConnectors.ensureOutputTopics(o);
        return o;
    }

    private static StreamExecutionEnvironment environment(JobSettings options) {
        Configuration conf = FlinkSettings.configuration(options);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofSeconds(1));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        return env;
    }

    private static Pipeline.Outputs outputs(JobSettings options) {
        return new Pipeline.Outputs(
                JobConnectors.redisSink(options),
                JobConnectors.deadLetterSink(options),
                0,
                JobConnectors.rollupsSink(options),
                null,
                JobConnectors.redisSink(options).withoutWatermark());
    }

    /** The job's consumer group has committed (on a completed checkpoint) the end offset of every input partition. */
    private boolean committed(JobSettings options) throws Exception {
        return KafkaOutputs.committedToEnd(broker.adminProperties(), options.kafkaTopic, options.kafkaGroupId);
    }
}
