package io.rollcount.job.pipeline;

import static io.rollcount.job.support.JobAwait.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.metrics.LocalMetrics;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.pipeline.FailureInjection.Place;
import io.rollcount.job.redis.RedisServerProcess;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * Issue 19: Redis loses the job's data while the job runs (or while it is stopped), and what dashboards read
 * comes back. Real servers only: a {@code redis-server} process of the test's own (restarted on the same
 * port, {@code SHUTDOWN NOSAVE}), the in-process Kafka broker, the job on a MiniCluster with RocksDB and
 * checkpoints.
 *
 * <p>The input spans about six minutes of event time in one UTC hour (four before the loss), with the default
 * allowed lateness of a minute: by the time of the loss many 5s windows and a few 1m windows are closed and
 * dropped from the job's state, so their values can only come back from {@code counter-rollups}; the hour
 * and the day stay open, so every 1h/1d unique-users sketch is held by the job. The expected values are computed by the test from the records
 * ({@link GroundTruth}), which is what a clean run leaves (see {@link KafkaPipelineIT} a).
 */
class RedisLossIT {
    private static final int BEFORE = 20_000;
    private static final int AFTER = 8_000;
    /** Records per second of event time: BEFORE + AFTER records span nearly 6 minutes. */
    private static final double RATE = 80;

    static final String PREFIX = "rl";
    private static final String PROBE = "probe:fresh";

    static final Configuration FLINK_CONF = new Configuration();
    static final LocalMetrics METRICS = LocalMetrics.addTo(FLINK_CONF);

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slots(2, FLINK_CONF);

    @TempDir
    Path dir;

    KafkaBroker broker;
    /** Losses of Redis's data the writers of earlier tests saw (the MiniCluster is the class's). */
    long lossesBefore;
    /** Rebuilds started and finished, and keys they wrote, in earlier tests (the metrics are the MiniCluster's). */
    long rebuildsBefore;

    long finishedBefore;
    long rebuildKeysBefore;

    String id;

    @BeforeEach
    void startBroker() throws Exception {
        // a broker per test: the job's rebuild reads the whole counter-rollups topic, which must be this run's
        broker = new KafkaBroker(0, dir.resolve("kafka")).start();
        id = UUID.randomUUID().toString().substring(0, 8);
        lossesBefore = METRICS.sum(RollcountMetrics.REDIS_DATA_LOST);
        rebuildsBefore = METRICS.sum(RollcountMetrics.REDIS_REBUILDS);
        finishedBefore = METRICS.sum(RollcountMetrics.REDIS_REBUILDS_FINISHED);
        rebuildKeysBefore = METRICS.sum(RollcountMetrics.REDIS_REBUILD_KEYS);
    }

    /** Rebuilds started in this test (count-per-counter's metric redisRebuilds). */
    long rebuildsStarted() {
        return METRICS.sum(RollcountMetrics.REDIS_REBUILDS) - rebuildsBefore;
    }

    long rebuildsFinished() {
        return METRICS.sum(RollcountMetrics.REDIS_REBUILDS_FINISHED) - finishedBefore;
    }

    long rebuildKeys() {
        return METRICS.sum(RollcountMetrics.REDIS_REBUILD_KEYS) - rebuildKeysBefore;
    }

    @AfterEach
    void stopBroker() {
        if (broker != null) broker.close();
    }

    enum Loss {
        RESTART_EMPTY,
        FLUSHALL,
        RESTART_PERSISTENT
    }

    @Test
    void a_restartEmptyDuringLiveRun() throws Exception {
        liveRun(Loss.RESTART_EMPTY);
    }

    @Test
    void b_flushAllDuringLiveRun() throws Exception {
        liveRun(Loss.FLUSHALL);
    }

    /** A restart that keeps the data (append-only file) is no loss: nothing is rebuilt, and every key is as a clean run leaves it. */
    @Test
    void c_restartWithPersistenceRebuildsNothing() throws Exception {
        liveRun(Loss.RESTART_PERSISTENT);
    }

    /**
     * The loss while the job is stopped: after a bounded run, Redis is flushed; {@code rebuild-redis} brings
     * every closed 1m/5m/1h/1d window back from counter-rollups; the job resumed from its savepoint finds the
     * writers' mark missing and writes its totals and sketches again.
     */
    @Test
    void d_rebuildRedisAfterLossWhileStopped() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.launch();
                Jedis jedis = new Jedis("127.0.0.1", server.port)) {
            String topic = "events-d";
            KafkaInput in = KafkaInput.withinOneHour(topic, 11, BEFORE, RATE);
            in.produceTo(broker, BEFORE);
            JobSettings options = options(server, topic, false);
            StreamExecutionEnvironment env = environment(options, null);
            Pipeline.build(env, options, JobConnectors.kafkaSource(options), outputs(options));
            JobClient job = env.executeAsync("redis-loss-d1");
            await("all input read and in a checkpoint", Duration.ofSeconds(120), () -> allInputCommitted(options), job);
            String savepoint = job.stopWithSavepoint(
                            true, dir.resolve("savepoints").toUri().toString(), SavepointFormatType.CANONICAL)
                    .get(180, TimeUnit.SECONDS);
            Map<String, String> before = snapshot(jedis);
            Map<String, Map<String, Double>> listsBefore = topLists(server.port);

            jedis.flushAll();
            // bad options: one line, exit 2
            StringWriter err = new StringWriter();
            CommandLine cli = new CommandLine(new io.rollcount.cli.Main());
            cli.setErr(new PrintWriter(err));
            assertThat(cli.execute("rebuild-redis", "--kafka.bootstrap", broker.bootstrap(), "--from", "yesterday"))
                    .isEqualTo(2);
            assertThat(err.toString().trim())
                    .startsWith("rollcount rebuild-redis: --from 'yesterday' is neither")
                    .doesNotContain("\n");
            assertThat(jedis.dbSize()).isZero();

            StringWriter out = new StringWriter();
            cli = new CommandLine(new io.rollcount.cli.Main());
            cli.setOut(new PrintWriter(out));
            long t0 = System.nanoTime();
            int code = cli.execute(rebuildArgs(
                    server,
                    "--from",
                    java.time.Instant.ofEpochMilli(Resolution.D1.windowStart(in.startTs))
                            .toString()
                            .replace("Z", "+00:00"),
                    "--to",
                    Long.toString(System.currentTimeMillis())));
            double seconds = (System.nanoTime() - t0) / 1e9;
            assertThat(code).as("rebuild-redis exit code; it said " + out).isZero();
            assertThat(out.toString()).contains("keys written");
            Compared cli1 = compare(jedis, in.truth, false);
            cli1.assertExact("after rebuild-redis", false);
            assertThat(cli1.missingTotals)
                    .as("totals are in the job's state, not in counter-rollups")
                    .isNotEmpty();
            int lists = assertTopListsAsBefore(listsBefore, topLists(server.port));
            assertThat(topLists(server.port).keySet())
                    .as("no list the job did not write")
                    .isEqualTo(listsBefore.keySet());
            System.out.printf("RedisLossIT d: %d window top-K lists rebuilt as the job wrote them%n", lists);
            // running it again changes nothing (guarded writes, idempotent)
            Map<String, String> once = snapshot(jedis);
            assertThat(new CommandLine(new io.rollcount.cli.Main()).execute(rebuildArgs(server)))
                    .isZero();
            assertThat(snapshot(jedis)).isEqualTo(once);
            System.out.printf("RESULT redis.rebuild-cli keys=%d seconds=%.2f%n", once.size(), seconds);

            // the job resumed from its savepoint: restored, with the mark missing, it writes what it holds again
            // (unbounded, as the run it continues: a bounded source restored from an unbounded one's splits would not
            // end)
            JobSettings resumed = options(server, topic, false);
            StreamExecutionEnvironment env2 = environment(resumed, savepoint);
            Pipeline.build(env2, resumed, JobConnectors.kafkaSource(resumed), outputs(resumed));
            JobClient job2 = env2.executeAsync("redis-loss-d2");
            try {
                // its two subtasks of count-per-counter, and the rebuild from counter-rollups
                await("the restored job's rebuilds", Duration.ofSeconds(90), () -> rebuildsFinished() >= 3, job2);
                Thread.sleep(2_000); // the writers' next flushes (every 200 ms)
                job2.stopWithSavepoint(
                                false, dir.resolve("savepoints").toUri().toString(), SavepointFormatType.CANONICAL)
                        .get(180, TimeUnit.SECONDS);
            } finally {
                if (!job2.getJobStatus().get().isGloballyTerminalState())
                    job2.cancel().get(60, TimeUnit.SECONDS);
            }
            assertThat(rebuildsStarted()).as("the restored job saw the loss").isPositive();
            Compared after = compare(jedis, in.truth, false);
            after.assertExact("after the restored job's rebuild", true);
            System.out.printf(
                    "RedisLossIT d: %,d keys before the loss, %,d after rebuild-redis and the restored job; %s%n",
                    before.size(), snapshot(jedis).size(), after);
        }
    }

    // ------------------------------------------------------------------ a live run with a loss in the middle

    private void liveRun(Loss loss) throws Exception {
        String[] persistence = loss == Loss.RESTART_PERSISTENT
                ? new String[] {"--appendonly", "yes", "--appendfsync", "always"}
                : new String[0];
        try (RedisServerProcess server = RedisServerProcess.launch(persistence);
                Jedis jedis = new Jedis("127.0.0.1", server.port)) {
            String topic = "events-" + loss.name().toLowerCase();
            KafkaInput in = KafkaInput.withinOneHour(topic, 5 + loss.ordinal(), BEFORE + AFTER, RATE);
            in.produceTo(broker, BEFORE);
            JobSettings options = options(server, topic, false);
            FailureInjection.reset(Place.NONE, true);
            StreamExecutionEnvironment env = environment(options, null);
            Pipeline.build(
                    env,
                    options,
                    new GatedSource<>(JobConnectors.kafkaSource(options), Long.MAX_VALUE),
                    outputs(options));
            JobClient job = env.executeAsync("redis-loss-" + loss);
            Freshness fresh = new Freshness(server.port);
            try {
                await(
                        "the first records read and in a checkpoint",
                        Duration.ofSeconds(120),
                        () -> allInputCommitted(options) && FailureInjection.completedCheckpoints() >= 2,
                        job);
                int keysBefore = jedis.keys(PREFIX + ":*").size();
                assertThat(jedis.exists(PREFIX + ":_epoch")).as("the epoch key").isTrue();
                fresh.start();

                // live records (and probes) go on while Redis loses its data and the job rebuilds it
                Thread producer = new Thread(
                        () -> {
                            try (KafkaProducer<byte[], byte[]> p = KafkaInput.producer(broker.adminProperties())) {
                                for (int sent = 0; sent < AFTER; sent += 100) {
                                    in.produce(p, 100);
                                    fresh.probe(
                                            p, in, topic, in.startTs + (long) ((BEFORE + sent) * 1000 / RATE) - 5_000);
                                    Thread.sleep(25);
                                }
                            } catch (Exception e) {
                                fresh.failure = e;
                            }
                        },
                        "live-producer");
                producer.start();
                Thread.sleep(1_500);
                // the window top-K lists the job wrote so far, to compare with those in Redis after the run
                Map<String, Map<String, Double>> listsBefore = topLists(server.port);
                long lossAt = System.nanoTime();
                double rebuildSeconds = 0;
                switch (loss) {
                    case RESTART_EMPTY, RESTART_PERSISTENT -> {
                        if (loss == Loss.RESTART_EMPTY) server.shutdownNoSave();
                        else server.stop(); // SIGTERM: Redis writes its append-only file and ends
                        server.start();
                    }
                    case FLUSHALL -> {
                        try (Jedis j = new Jedis("127.0.0.1", server.port)) {
                            j.flushAll();
                        }
                    }
                }
                fresh.markLoss(lossAt);
                if (loss != Loss.RESTART_PERSISTENT) {
                    // subtasks of count-per-counter, and the rebuild from counter-rollups
                    await("the rebuilds", Duration.ofSeconds(90), () -> rebuildsFinished() >= 3, job);
                    fresh.markRebuilt(System.nanoTime());
                    // the longest of them, while the job's subtasks (and their gauges) are there
                    rebuildSeconds = METRICS.maxLive(RollcountMetrics.REDIS_REBUILD_LONGEST_MS) / 1e3;
                }
                producer.join(120_000);
                assertThat(fresh.failure).isNull();
                if (loss == Loss.RESTART_PERSISTENT) fresh.markRebuilt(System.nanoTime());
                await(
                        "every record in a completed checkpoint",
                        Duration.ofSeconds(120),
                        () -> allInputCommitted(options),
                        job);
                job.stopWithSavepoint(true, dir.resolve("savepoints").toUri().toString(), SavepointFormatType.CANONICAL)
                        .get(180, TimeUnit.SECONDS);
                fresh.close();

                Compared c;
                try (Jedis after = new Jedis("127.0.0.1", server.port)) {
                    c = compare(after, in.truth, loss == Loss.RESTART_PERSISTENT);
                }
                int lists = assertTopListsAsBefore(listsBefore, topLists(server.port));
                System.out.printf("RedisLossIT %s: %d window top-K lists as the job wrote them%n", loss, lists);
                c.assertExact("after the run", true);
                assertThat(c.sketchesDiffering)
                        .as("1h/1d uniques whose count differs from PFADD of their users, e.g. "
                                + first(c.sketchesDiffering))
                        .isEmpty();
                assertThat(c.probes).as("the probe counter").isEqualTo(fresh.sent.get());
                if (loss == Loss.RESTART_PERSISTENT) {
                    assertThat((METRICS.sum(RollcountMetrics.REDIS_DATA_LOST) - lossesBefore))
                            .as("losses seen by the writers")
                            .isZero();
                    assertThat(rebuildsStarted()).as("rebuilds started").isZero();
                    assertThat(c.missing5s).as("no 5s window lost").isZero();
                    assertThat(c.allUniquesLower).as("no u:all lost").isZero();
                    System.out.printf(
                            "RedisLossIT %s: no rebuild; %,d keys before, %s; live_p99_ms=%d over %d probes%n",
                            loss, keysBefore, c, fresh.p99Millis(), fresh.count());
                } else {
                    assertThat((METRICS.sum(RollcountMetrics.REDIS_DATA_LOST) - lossesBefore))
                            .as("writers that saw the loss")
                            .isPositive();
                    assertThat(c.missing5s)
                            .as("closed 5s windows are lost (not in counter-rollups)")
                            .isPositive();
                    System.out.printf(
                            "RESULT redis.rebuild loss=%s keys=%d seconds=%.2f live_p99_ms=%d probes=%d%n",
                            loss, rebuildKeys(), rebuildSeconds, fresh.p99Millis(), fresh.count());
                    System.out.printf("RedisLossIT %s: %,d keys before the loss; after: %s%n", loss, keysBefore, c);
                }
            } finally {
                fresh.close();
                if (!job.getJobStatus().get().isGloballyTerminalState())
                    job.cancel().get(60, TimeUnit.SECONDS);
            }
        }
    }

    // ------------------------------------------------------------------ comparison with the ground truth

    /** Redis against the ground truth, key by key. */
    static final class Compared {
        final List<String> wrong = new ArrayList<>();
        final List<String> missingTotals = new ArrayList<>();
        final List<String> missingWindows = new ArrayList<>();
        final List<String> sketchesDiffering = new ArrayList<>();
        int missing5s;
        int windows5s;
        int allUniquesLower;
        int allUniques;
        int values;
        int sketches;
        long probes;

        /**
         * No key with a wrong value and no closed 1m/5m/1h/1d window missing ({@code when}: for the message), and
         * with {@code totals} no total missing either.
         */
        void assertExact(String when, boolean totals) {
            assertThat(wrong)
                    .as("keys with a wrong value " + when + ", e.g. " + first(wrong))
                    .isEmpty();
            assertThat(missingWindows)
                    .as("closed 1m/5m/1h/1d windows missing " + when + ", e.g. " + first(missingWindows))
                    .isEmpty();
            if (totals)
                assertThat(missingTotals)
                        .as("totals missing " + when + ", e.g. " + first(missingTotals))
                        .isEmpty();
        }

        @Override
        public String toString() {
            return String.format(
                    "%,d totals and 1m/5m/1h/1d windows exact, %,d of %,d 1h/1d uniques counting as PFADD of their users;"
                            + " lost as documented: %,d of %,d closed 5s windows, %,d of %,d u:all keys below their users",
                    values,
                    sketches - sketchesDiffering.size(),
                    sketches,
                    missing5s,
                    windows5s,
                    allUniquesLower,
                    allUniques);
        }
    }

    /**
     * Every total and every 1m/5m/1h/1d window must be there with its value; a 5s window, where present, with
     * its value; each 1h/1d uniques key counting as PFADD of its users does (its registers may have come from
     * the job's sketch by PFMERGE, whose encoding differs: the count is what dashboards read). With
     * {@code exact}, u:all keys must count their users too.
     */
    static Compared compare(Jedis jedis, GroundTruth truth, boolean exact) {
        var at = jedis.getConnection().getHostAndPort();
        try (UnifiedJedis u = new RedisClient.Builder()
                .hostAndPort(at.getHost(), at.getPort())
                .build()) {
            return compare(u, truth, exact);
        }
    }

    /** {@link #compare(Jedis, GroundTruth, boolean)} through any client: one server's or a Redis Cluster's. */
    static Compared compare(UnifiedJedis jedis, GroundTruth truth, boolean exact) {
        Compared c = new Compared();
        Map<String, Long> expected = truth.redisKeys(PREFIX);
        List<String> keys = new ArrayList<>(expected.keySet());
        Collections.sort(keys);
        for (int from = 0; from < keys.size(); from += 1000) {
            List<String> slice = keys.subList(from, Math.min(keys.size(), from + 1000));
            List<String> values = new ArrayList<>(slice.size());
            List<redis.clients.jedis.Response<String>> replies = new ArrayList<>(slice.size());
            try (var p = jedis.pipelined()) {
                for (String k : slice) replies.add(p.get(k));
                p.sync();
            }
            for (var r : replies) values.add(r.get());
            for (int i = 0; i < slice.size(); i++) {
                String k = slice.get(i);
                String v = values.get(i);
                boolean is5s = k.contains("}:5s:");
                if (is5s) c.windows5s++;
                if (v == null) {
                    if (is5s) c.missing5s++;
                    else if (k.endsWith("}:total")) c.missingTotals.add(k);
                    else c.missingWindows.add(k);
                    continue;
                }
                if (Long.parseLong(v) != expected.get(k)) c.wrong.add(k + " = " + v + ", expected " + expected.get(k));
                else if (!is5s) c.values++;
            }
        }
        String probe = jedis.get(PREFIX + ":{" + PROBE + "}:total");
        c.probes = probe == null ? 0 : Long.parseLong(probe);
        String scratch = PREFIX + ":_scratch";
        // (in a Redis Cluster each of these commands has one key: any slot will do)
        for (Map.Entry<String, Set<String>> e : truth.uniquesKeys(PREFIX).entrySet()) {
            jedis.del(scratch);
            jedis.pfadd(scratch, e.getValue().toArray(String[]::new));
            long want = jedis.pfcount(scratch);
            long got = jedis.exists(e.getKey()) ? jedis.pfcount(e.getKey()) : 0;
            if (e.getKey().endsWith("}:u:all")) {
                c.allUniques++;
                if (got != want) {
                    c.allUniquesLower++;
                    if (exact) c.sketchesDiffering.add(e.getKey() + " counts " + got + ", PFADD of its users " + want);
                }
                continue;
            }
            c.sketches++;
            if (got != want) c.sketchesDiffering.add(e.getKey() + " counts " + got + ", PFADD of its users " + want);
        }
        jedis.del(scratch);
        return c;
    }

    /** Every window top-K list ({@code rl:top:*}) among {@code keys}: its members and scores. */
    static Map<String, Map<String, Double>> topLists(UnifiedJedis jedis, List<String> keys) {
        Map<String, Map<String, Double>> out = new java.util.TreeMap<>();
        for (String k : keys) {
            if (!k.startsWith(PREFIX + ":top:")) continue;
            Map<String, Double> list = new java.util.TreeMap<>();
            for (redis.clients.jedis.resps.Tuple t : jedis.zrangeWithScores(k, 0, -1))
                list.put(t.getElement(), t.getScore());
            out.put(k, list);
        }
        return out;
    }

    private static Map<String, Map<String, Double>> topLists(int port) {
        try (UnifiedJedis u =
                        new RedisClient.Builder().hostAndPort("127.0.0.1", port).build();
                Jedis j = new Jedis("127.0.0.1", port)) {
            return topLists(u, new ArrayList<>(j.keys(PREFIX + ":top:*")));
        }
    }

    /**
     * The window top-K lists a clean run wrote ({@code before}, read before the loss) are in Redis again, each
     * with the same members and scores; returns how many were compared.
     */
    static int assertTopListsAsBefore(Map<String, Map<String, Double>> before, Map<String, Map<String, Double>> now) {
        List<String> differences = new ArrayList<>();
        before.forEach((k, list) -> {
            Map<String, Double> got = now.get(k);
            if (got == null) differences.add(k + " missing");
            else if (!got.equals(list))
                differences.add(k + " has " + got.size() + " entries, not the " + list.size() + " the job wrote");
        });
        assertThat(differences)
                .as("window top-K lists not as the job wrote them, of " + before.size() + ", e.g. "
                        + first(differences))
                .isEmpty();
        assertThat(before).as("lists written before the loss").isNotEmpty();
        return before.size();
    }

    private static Map<String, String> snapshot(Jedis jedis) {
        Map<String, String> m = new java.util.TreeMap<>();
        for (String k : jedis.keys(PREFIX + ":*")) {
            if (k.startsWith(PREFIX + ":_")
                    || k.contains("}:_")
                    || k.startsWith(PREFIX + ":top:")
                    || k.startsWith(PREFIX + ":trending:")) continue;
            if (k.contains("}:u:")) {
                m.put(k, "pfcount " + jedis.pfcount(k));
            } else {
                m.put(k, jedis.get(k));
            }
        }
        return m;
    }

    // ------------------------------------------------------------------ live freshness during the rebuild

    /**
     * A probe counter incremented by one record every 25 ms of the live production, and a reader of its total
     * every 5 ms: the freshness of a probe is the time from its acknowledgement by Kafka to its first sight in
     * Redis. Those acknowledged between the loss and the end of the rebuild are the live freshness during it.
     */
    static final class Freshness implements AutoCloseable {
        final AtomicLong sent = new AtomicLong();
        final Map<Long, Long> sentAt = new ConcurrentHashMap<>();
        final Map<Long, Long> seenAt = new ConcurrentHashMap<>();
        final AtomicBoolean stop = new AtomicBoolean();
        final int port;
        volatile long lossAt = Long.MAX_VALUE;
        volatile long rebuiltAt = Long.MAX_VALUE;
        volatile Exception failure;
        private Thread reader;

        Freshness(int port) {
            this.port = port;
        }

        void start() {
            reader = new Thread(
                    () -> {
                        long seen = 0;
                        Jedis j = null;
                        while (!stop.get()) {
                            try {
                                if (j == null) j = new Jedis("127.0.0.1", port);
                                String v = j.get(PREFIX + ":{" + PROBE + "}:total");
                                long now = System.nanoTime();
                                long value = v == null ? 0 : Long.parseLong(v);
                                for (long n = seen + 1; n <= value; n++) seenAt.putIfAbsent(n, now);
                                seen = Math.max(seen, value);
                                Thread.sleep(5);
                            } catch (redis.clients.jedis.exceptions.JedisException e) {
                                if (j != null) j.close();
                                j = null; // Redis is restarting
                            } catch (InterruptedException e) {
                                return;
                            }
                        }
                        if (j != null) j.close();
                    },
                    "probe-reader");
            reader.setDaemon(true);
            reader.start();
        }

        /** One probe record, acknowledged; counted in the ground truth with event time {@code ts}. */
        void probe(KafkaProducer<byte[], byte[]> p, KafkaInput in, String topic, long ts) throws Exception {
            String line = "{\"counter\":\"" + PROBE + "\",\"ts\":" + ts + "}";
            p.send(new ProducerRecord<>(topic, KafkaInput.utf8(PROBE), KafkaInput.utf8(line)))
                    .get();
            long n = sent.incrementAndGet();
            sentAt.put(n, System.nanoTime());
            synchronized (in) {
                in.truth.add(new Generated(line, PROBE, 1, ts, null, null, false));
            }
        }

        void markLoss(long at) {
            lossAt = at;
        }

        void markRebuilt(long at) {
            rebuiltAt = at;
        }

        private List<Long> during() {
            List<Long> delays = new ArrayList<>();
            sentAt.forEach((n, at) -> {
                if (at < lossAt || at > rebuiltAt) return;
                Long seen = seenAt.get(n);
                delays.add(seen == null ? Long.MAX_VALUE : (seen - at) / 1_000_000);
            });
            Collections.sort(delays);
            return delays;
        }

        int count() {
            return during().size();
        }

        long p99Millis() {
            List<Long> d = during();
            if (d.isEmpty()) return -1;
            return d.get((int) Math.min(d.size() - 1, Math.ceil(d.size() * 0.99) - 1));
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            if (reader != null) reader.join(5_000);
        }
    }

    // ------------------------------------------------------------------ the run's setup

    private JobSettings options(RedisServerProcess server, String topic, boolean bounded) {
        JobSettings o = JobRuns.kafkaSettings(
                        broker.bootstrap(), topic, "rl-" + id, bounded, server.url(), PREFIX, Duration.ofMillis(300))
                .toBuilder()
                // the watermark is the minimum over every partition (no idleness): no record of the stream is late
                .set("--idle-timeout", Duration.ofMinutes(10))
                .build();
        JobConnectors.ensureOutputTopics(o);
        return o;
    }

    static StreamExecutionEnvironment environment(JobSettings options, String savepoint) {
        Configuration conf = JobRuns.configuration(options, 3, Duration.ofSeconds(1));
        if (savepoint != null) conf.set(org.apache.flink.configuration.StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        return JobRuns.environment(conf, 2);
    }

    private static Pipeline.Outputs outputs(JobSettings options) {
        return JobRuns.kafkaOutputs(options);
    }

    /** The job's consumer group has committed (on a completed checkpoint) the end offset of every input partition. */
    private boolean allInputCommitted(JobSettings options) throws Exception {
        return KafkaOutputs.committedToEnd(broker.adminProperties(), options.kafkaTopic, options.kafkaGroupId);
    }

    /** {@code rebuild-redis} of this class's broker into {@code PREFIX} of {@code server}, then {@code more}. */
    private String[] rebuildArgs(RedisServerProcess server, String... more) {
        List<String> args = new ArrayList<>(List.of(
                "rebuild-redis",
                "--kafka.bootstrap",
                broker.bootstrap(),
                "--redis",
                server.url(),
                "--redis.key-prefix",
                PREFIX));
        args.addAll(List.of(more));
        return args.toArray(String[]::new);
    }

    static String first(java.util.Collection<?> items) {
        return items.stream().limit(10).map(String::valueOf).toList().toString();
    }
}
