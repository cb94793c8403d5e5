package io.rollcount.job.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.chaos.ClusterTruth;
import io.rollcount.chaos.LocalCluster;
import io.rollcount.chaos.OwnRedis;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.kafka.TopicReader;
import io.rollcount.job.model.RecentEventTimes;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * Faults on a real Flink session cluster ({@code deploy/local-cluster/}: one JobManager and two TaskManagers,
 * separate JVMs), the shaded job jar submitted with Flink's own {@code flink run}, the in-process Kafka broker
 * and a real Redis. Each test produces a live stream (event times = now) into {@code counter-events}, injects
 * its fault mid-stream, then closes the windows with one tick event per partition and compares against the
 * ground truth it computed itself: every Redis total and window sum exact (no key of a count under another
 * name), {@code counter-rollups} read with read_committed without gap or duplicate and with the true sums,
 * and no total of a counter with only positive deltas ever seen going down by a poller.
 *
 * <p>Run by failsafe in {@code mvn -B verify -Pcluster-tests} (after {@code package} built the jar).
 */
@Tag("cluster")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterFaultIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int PARTITIONS = 4;
    private static final int RATE = 1000; // events per second, of wall clock and of event time
    private static final int EVENTS = 30_000;
    private static final int COUNTERS = 400;
    private static final int HOT = 40;

    private static LocalCluster cluster;
    private static Path work;
    private static final Map<String, String> RESULTS = new TreeMap<>();

    @BeforeAll
    static void startCluster() throws Exception {
        LocalCluster.jobJar();
        cluster = LocalCluster.start(2);
        work = cluster.dir.resolve("tests");
        Files.createDirectories(work);
        log("cluster up at " + cluster.restUrl() + " in " + cluster.dir);
    }

    @AfterAll
    static void stopCluster() throws Exception {
        String line = "RESULT cluster.recovery tm_kill_s=" + RESULTS.getOrDefault("tm_kill_s", "na")
                + " jm_kill_s=" + RESULTS.getOrDefault("jm_kill_s", "na")
                + " redis_outage_s=" + RESULTS.getOrDefault("redis_outage_s", "na")
                + " savepoint_rescale_s=" + RESULTS.getOrDefault("savepoint_rescale_s", "na");
        System.out.println(line);
        if (work != null) Files.writeString(cluster.repo.resolve("job/target/cluster-recovery.txt"), line + "\n");
        if (cluster != null) {
            cluster.close();
            // Keep the logs (log/) for a look after a failure; drop the bulky data of a run.
            for (String bulky : List.of("checkpoints", "savepoints", "tmp", "tests"))
                deleteTree(cluster.dir.resolve(bulky));
        }
    }

    static void deleteTree(Path root) throws java.io.IOException {
        if (!Files.exists(root)) return;
        try (var paths = Files.walk(root)) {
            for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
        }
    }

    static void log(String msg) {
        System.out.printf(Locale.ROOT, "%tT cluster-it: %s%n", System.currentTimeMillis(), msg);
    }

    static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.1f", d.toMillis() / 1000.0);
    }

    // ------------------------------------------------------------------ the scenario of every test

    /** One test's world: its own broker, Redis prefix, producer, ground truth and total poller. */
    static final class Stream implements AutoCloseable {
        final String name;
        final String id = UUID.randomUUID().toString().substring(0, 8);
        final String prefix = "rcc" + id;
        final KafkaBroker broker;
        final String redisHost = "127.0.0.1";
        final int redisPort;
        final String redisUrl;
        final ClusterTruth truth = new ClusterTruth();
        final EventGenerator gen;
        final List<String> hotTotals = new ArrayList<>();
        final Map<String, Long> maxSeen = new ConcurrentHashMap<>();
        final List<String> decreases = new CopyOnWriteArrayList<>();
        final AtomicBoolean polling = new AtomicBoolean(true);
        final AtomicReference<Throwable> producerError = new AtomicReference<>();
        final KafkaProducer<byte[], byte[]> producer;
        private final Thread poller;
        private Thread production;
        volatile long produced;
        volatile long lastTs;

        Stream(String name, String redisUrl, int redisPort, double negativeShare) throws Exception {
            this(work, name, redisUrl, redisPort, negativeShare);
        }

        /** A stream whose broker keeps its data under {@code workDir}. */
        Stream(Path workDir, String name, String redisUrl, int redisPort, double negativeShare) throws Exception {
            this.name = name;
            this.redisUrl = redisUrl;
            this.redisPort = redisPort;
            this.broker = new KafkaBroker(0, workDir.resolve("kafka-" + name + "-" + id)).start();
            broker.createTopics(PARTITIONS, "counter-events");
            this.gen = new EventGenerator(
                    name.hashCode(),
                    EventGenerator.Workload.zipf,
                    COUNTERS,
                    300,
                    System.currentTimeMillis(),
                    RATE,
                    1_500,
                    negativeShare);
            for (int rank = 0; rank < HOT; rank++) hotTotals.add(prefix + ":{" + gen.counterId(rank) + "}:total");
            Properties p = new Properties();
            p.putAll(broker.adminProperties());
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            this.producer = new KafkaProducer<>(p);
            this.poller = new Thread(this::poll, "total-poller-" + name);
            poller.setDaemon(true);
            poller.start();
        }

        /** The job's arguments after the jar. */
        List<String> jobArgs(int parallelism) {
            return LocalCluster.kafkaJobArgs(
                    broker.bootstrap(),
                    "counter-events",
                    id,
                    redisUrl,
                    prefix,
                    parallelism,
                    "--allowed-lateness",
                    "5s");
        }

        /** Starts producing EVENTS events at RATE per second in the background (event times follow the clock). */
        void startProducing() {
            production = new Thread(
                    () -> {
                        long t0 = System.nanoTime();
                        try {
                            for (int i = 0; i < EVENTS; i++) {
                                Generated g = gen.next();
                                truth.add(g);
                                lastTs = Math.max(lastTs, g.ts());
                                send(null, g.counter(), g.line());
                                produced = i + 1;
                                if (i % 50 == 0) {
                                    long due = t0 + (long) (i * 1e9 / RATE);
                                    long wait = due - System.nanoTime();
                                    if (wait > 0) Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                                }
                            }
                            producer.flush();
                        } catch (Throwable t) {
                            producerError.set(t);
                        }
                    },
                    "producer-" + name);
            production.start();
        }

        private void send(Integer partition, String key, String value) {
            producer.send(
                    new ProducerRecord<>(
                            "counter-events",
                            partition,
                            key.getBytes(StandardCharsets.UTF_8),
                            value.getBytes(StandardCharsets.UTF_8)),
                    (md, e) -> {
                        if (e != null) producerError.compareAndSet(null, e);
                    });
        }

        /** Waits until {@code n} events were produced. */
        void awaitProduced(long n) throws InterruptedException {
            while (produced < n && production.isAlive()) Thread.sleep(20);
        }

        /**
         * Waits for the end of production, then sends ticks per partition far enough ahead to close every 5 s and
         * most 1 m windows: one more than the watermark outvotes ({@link RecentEventTimes#OUTLIERS_IGNORED}), since
         * a lone event ahead of the stream is an outlier that must not move it.
         */
        void finishAndTick() throws Exception {
            production.join(Duration.ofMinutes(3).toMillis());
            assertThat(production.isAlive()).as("production ended").isFalse();
            if (producerError.get() != null) throw new AssertionError("producing failed", producerError.get());
            long tickTs = lastTs + 30_000;
            for (int p = 0; p < PARTITIONS; p++) {
                for (int i = 0; i <= RecentEventTimes.OUTLIERS_IGNORED; i++) {
                    String counter = "tick:p" + p;
                    String line = "{\"counter\":\"" + counter + "\",\"ts\":" + tickTs + "}";
                    truth.add(new Generated(line, counter, 1, tickTs, null, null, false));
                    send(p, counter, line);
                }
            }
            producer.flush();
            if (producerError.get() != null) throw new AssertionError("producing failed", producerError.get());
        }

        private void poll() {
            while (polling.get()) {
                try (Jedis j = new Jedis(redisHost, redisPort)) {
                    while (polling.get()) {
                        List<String> values = j.mget(hotTotals.toArray(String[]::new));
                        for (int i = 0; i < hotTotals.size(); i++) {
                            if (values.get(i) == null) continue;
                            long v = Long.parseLong(values.get(i));
                            String k = hotTotals.get(i);
                            Long before = maxSeen.get(k);
                            if (before != null && v < before) decreases.add(k + ": " + before + " -> " + v);
                            if (before == null || v > before) maxSeen.put(k, v);
                        }
                        Thread.sleep(50);
                    }
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    try {
                        Thread.sleep(200); // Redis down: try again
                    } catch (InterruptedException ie) {
                        return;
                    }
                }
            }
        }

        /** The sum of the hot totals the poller has seen. */
        long hotSum() {
            return maxSeen.values().stream().mapToLong(Long::longValue).sum();
        }

        /**
         * Waits until every total and window sum in Redis equals the ground truth and no other count key
         * exists, and the watermark passed the tick's closing point; then checks the rollups and the poller.
         */
        void assertExact() throws Exception {
            Map<String, Long> expected = truth.redisKeys(prefix);
            long deadline = System.nanoTime() + Duration.ofSeconds(150).toNanos();
            List<String> wrong = List.of();
            long watermark;
            try (Jedis j = new Jedis(redisHost, redisPort)) {
                while (true) {
                    wrong = ClusterTruth.wrongKeys(expected, ClusterTruth.redisCounts(j, prefix));
                    String wm = j.get(prefix + ":meta:watermark");
                    watermark = wm == null ? Long.MIN_VALUE : Long.parseLong(wm);
                    if (wrong.isEmpty() && watermark >= lastTs + 10_000) break;
                    if (System.nanoTime() > deadline) break;
                    Thread.sleep(500);
                }
            }
            assertThat(wrong.size())
                    .as(name + ": Redis count keys that differ from the ground truth (of " + expected.size()
                            + "), e.g. " + wrong.stream().limit(10).toList())
                    .isZero();
            assertThat(watermark)
                    .as(name + ": the watermark passed the last event by the tick")
                    .isGreaterThanOrEqualTo(lastTs + 10_000);
            log(name + ": Redis exact: " + expected.size() + " total/window keys, " + truth.counted
                    + " events counted of " + truth.produced + " produced (" + truth.duplicates + " redeliveries)");
            assertUniques();
            assertRollups(watermark);
            polling.set(false);
            poller.join(5_000);
            List<String> bad = decreases.stream()
                    .filter(d -> truth.negativeCounters.stream().noneMatch(c -> d.startsWith(prefix + ":{" + c + "}:")))
                    .toList();
            assertThat(maxSeen).as(name + ": the poller saw totals").isNotEmpty();
            assertThat(bad)
                    .as(name + ": totals of counters with only positive deltas that went down")
                    .isEmpty();
        }

        /**
         * Every counter's {@code u:all} is byte for byte what PFADD of its true distinct users builds: whatever
         * the fault, PFADD of the users again after a restore or rescale loses nothing and gains nothing.
         */
        void assertUniques() {
            List<String> wrong = new ArrayList<>();
            String ref = "ref" + prefix + ":u";
            try (Jedis j = new Jedis(redisHost, redisPort)) {
                Map<String, Set<String>> users;
                synchronized (truth) {
                    users = new HashMap<>(truth.users);
                }
                for (var e : users.entrySet()) {
                    String key = prefix + ":{" + e.getKey() + "}:u:all";
                    j.del(ref);
                    j.pfadd(ref, e.getValue().toArray(String[]::new));
                    // PFCOUNT caches the count in the header: counted both, the whole values must be equal
                    j.pfcount(ref);
                    j.pfcount(key);
                    byte[] expected = j.get(ref.getBytes(StandardCharsets.UTF_8));
                    byte[] value = j.get(key.getBytes(StandardCharsets.UTF_8));
                    if (!java.util.Arrays.equals(expected, value)) {
                        wrong.add(key + " pfcount " + j.pfcount(key) + ", expected " + j.pfcount(ref));
                    }
                }
                j.del(ref);
                assertThat(users).as(name + ": counters with users").isNotEmpty();
            }
            assertThat(wrong)
                    .as(name + ": u:all HyperLogLogs that differ from PFADD of the true users")
                    .isEmpty();
            log(name + ": u:all of " + truth.users.size() + " counters byte for byte PFADD of their true users");
        }

        /** counter-rollups, read_committed: no duplicate, revisions 0..n without gap, true sums, every closed window present. */
        void assertRollups(long watermark) throws Exception {
            Map<ClusterTruth.Window, long[]> closed = truth.closedRollupWindows(watermark);
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            List<String> problems;
            int records;
            while (true) {
                problems = new ArrayList<>();
                List<ConsumerRecord<byte[], byte[]>> all = readCommitted("counter-rollups");
                records = all.size();
                truth.checkRollups(all, closed, problems);
                if (problems.isEmpty() || System.nanoTime() > deadline) break;
                Thread.sleep(1000);
            }
            assertThat(problems)
                    .as(name + ": counter-rollups (read_committed, " + records + " records) problems, e.g. "
                            + problems.stream().limit(5).toList())
                    .isEmpty();
            log(name + ": counter-rollups exact: " + records + " records, every one of " + closed.size()
                    + " closed windows once");
        }

        List<ConsumerRecord<byte[], byte[]>> readCommitted(String topic) {
            return TopicReader.read(broker.adminProperties(), topic, Map.of(), "read_committed");
        }

        @Override
        public void close() throws Exception {
            polling.set(false);
            if (production != null) production.interrupt();
            producer.close(Duration.ofSeconds(5));
            broker.close();
            try (Jedis j = new Jedis(redisHost, redisPort)) {
                List<String> keys = new ArrayList<>();
                String cursor = ScanParams.SCAN_POINTER_START;
                do {
                    ScanResult<String> r =
                            j.scan(cursor, new ScanParams().match(prefix + ":*").count(1000));
                    keys.addAll(r.getResult());
                    cursor = r.getCursor();
                } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
                for (int i = 0; i < keys.size(); i += 500)
                    j.del(keys.subList(i, Math.min(keys.size(), i + 500)).toArray(String[]::new));
            } catch (RuntimeException ignored) {
                // the test's own redis-server may be gone already
            }
        }
    }

    static Stream onSharedRedis(String name) throws Exception {
        return onSharedRedis(work, name);
    }

    /** A stream on the shared Redis (its own prefix), its broker's data under {@code workDir}. */
    static Stream onSharedRedis(Path workDir, String name) throws Exception {
        int port = RedisTestSupport.PORT;
        return new Stream(workDir, name, "redis://127.0.0.1:" + port, port, 0.02);
    }

    /** Submits the job and waits until every task runs, then starts producing. */
    static String submitAndProduce(Stream s, int parallelism) throws Exception {
        long t0 = System.nanoTime();
        String job = cluster.submit(List.of(), s.jobArgs(parallelism));
        cluster.awaitAllRunning(job, Duration.ofMinutes(2));
        log(s.name + ": job " + job + " running after " + seconds(Duration.ofNanos(System.nanoTime() - t0)) + " s on "
                + cluster.taskManagersOf(job));
        s.startProducing();
        return job;
    }

    /** Submits the job again from {@code from} (a checkpoint or savepoint) and waits until every task runs. */
    static String resume(Stream s, String from, int parallelism) throws Exception {
        String resumed = cluster.submit(List.of("-s", from), s.jobArgs(parallelism));
        cluster.awaitAllRunning(resumed, Duration.ofMinutes(3));
        return resumed;
    }

    /** The time since {@code t0}, recorded as the result {@code name} (seconds). */
    static Duration recordSince(String name, long t0) {
        Duration d = Duration.ofNanos(System.nanoTime() - t0);
        RESULTS.put(name, seconds(d));
        return d;
    }

    /** Waits until the job has failed over (left "every task RUNNING"), then until it runs again; the time from {@code t0}. */
    static Duration awaitFailover(String job, long t0) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (cluster.allRunning(job)) {
            if (System.nanoTime() > deadline) throw new AssertionError("job " + job + " never noticed the failure");
            Thread.sleep(50);
        }
        cluster.awaitAllRunning(job, Duration.ofMinutes(3));
        return Duration.ofNanos(System.nanoTime() - t0);
    }

    // ------------------------------------------------------------------ the faults

    @Test
    @Order(1)
    void killNineOfATaskManagerMidStream() throws Exception {
        try (Stream s = onSharedRedis("tm-kill")) {
            String job = submitAndProduce(s, 2);
            s.awaitProduced(EVENTS / 3);
            Thread.sleep(2_500); // a checkpoint or so after the stream began
            List<String> tms = cluster.taskManagersOf(job);
            int victim = tms.contains("tm-1") ? 1 : Integer.parseInt(tms.get(0).substring(3));
            long t0 = System.nanoTime();
            cluster.killTaskManager(victim);
            log("tm-kill: kill -9 of tm-" + victim + " (job on " + tms + ") after " + s.produced + " events");
            Duration recovery = awaitFailover(job, t0);
            RESULTS.put("tm_kill_s", seconds(recovery));
            log("tm-kill: job running again on " + cluster.taskManagersOf(job) + " " + seconds(recovery)
                    + " s after the kill");
            cluster.startTaskManager(victim); // the spare for the next tests
            s.finishAndTick();
            s.assertExact();
            cluster.cancel(job);
        }
    }

    @Test
    @Order(2)
    void killNineOfTheJobManagerThenResumeFromTheLatestRetainedCheckpoint() throws Exception {
        try (Stream s = onSharedRedis("jm-kill")) {
            String job = submitAndProduce(s, 2);
            s.awaitProduced(EVENTS / 3);
            long waitCheckpoint = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (cluster.latestCheckpoint(job).isEmpty() && System.nanoTime() < waitCheckpoint) Thread.sleep(200);
            long t0 = System.nanoTime();
            cluster.killJobManager();
            log("jm-kill: kill -9 of the JobManager after " + s.produced + " events");
            cluster.startJobManager();
            log("jm-kill: JobManager back after " + seconds(Duration.ofNanos(System.nanoTime() - t0)) + " s");
            Path checkpoint = cluster.latestCheckpoint(job)
                    .orElseThrow(() -> new AssertionError("no retained checkpoint of " + job));
            String resumed = resume(s, checkpoint.toUri().toString(), 2);
            Duration recovery = recordSince("jm_kill_s", t0);
            log("jm-kill: job resumed from " + checkpoint.getFileName() + " as " + resumed + ", running "
                    + seconds(recovery) + " s after the kill");
            s.finishAndTick();
            s.assertExact();
            cluster.cancel(resumed);
        }
    }

    @Test
    @Order(3)
    void redisStoppedForThirtySecondsMidStream() throws Exception {
        try (OwnRedis redis = new OwnRedis(work.resolve(
                                "redis-" + UUID.randomUUID().toString().substring(0, 8)))
                        .start();
                Stream s = new Stream("redis-outage", redis.url(), redis.port, 0.0)) {
            String job = submitAndProduce(s, 2);
            s.awaitProduced(EVENTS / 4);
            Thread.sleep(2_500);
            long before = s.hotSum();
            redis.shutdown();
            log("redis-outage: redis-server stopped (SHUTDOWN SAVE) after " + s.produced
                    + " events, hot totals summing to " + before);
            Set<String> states = new HashSet<>();
            long outageEnd = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (System.nanoTime() < outageEnd) {
                states.add(cluster.jobState(job));
                Thread.sleep(500);
            }
            redis.start();
            long t0 = System.nanoTime();
            long stalled = s.hotSum();
            long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
            while (s.hotSum() <= stalled) {
                if (System.nanoTime() > deadline)
                    throw new AssertionError("no Redis write within 3 minutes of Redis coming back");
                states.add(cluster.jobState(job));
                Thread.sleep(50);
            }
            Duration resumed = recordSince("redis_outage_s", t0);
            log("redis-outage: writes resumed " + seconds(resumed)
                    + " s after Redis came back; job states seen during the outage: " + states);
            s.finishAndTick();
            s.assertExact();
            cluster.cancel(job);
        }
    }

    @Test
    @Order(4)
    void stopWithSavepointThenResumeAtAnotherParallelism() throws Exception {
        try (Stream s = onSharedRedis("savepoint")) {
            String job = submitAndProduce(s, 2);
            s.awaitProduced(EVENTS / 3);
            Thread.sleep(1_000);
            long t0 = System.nanoTime();
            String savepoint = cluster.stopWithSavepoint(job, work.resolve("savepoints-" + s.id));
            log("savepoint: job " + job + " stopped with savepoint " + savepoint + " after " + s.produced
                    + " events; state " + cluster.jobState(job));
            assertThat(cluster.jobState(job)).isEqualTo("FINISHED");
            String resumed = resume(s, savepoint, 3);
            Duration downtime = recordSince("savepoint_rescale_s", t0);
            JsonNode detail = cluster.rest("/jobs/" + resumed).orElseThrow();
            List<Integer> parallelism = new ArrayList<>();
            for (JsonNode v : detail.path("vertices"))
                parallelism.add(v.path("parallelism").asInt());
            log("savepoint: resumed as " + resumed + " with parallelism " + parallelism + ", " + seconds(downtime)
                    + " s after the stop began");
            assertThat(parallelism).as("the resumed job's vertices").contains(3);
            s.finishAndTick();
            s.assertExact();
            cluster.cancel(resumed);
        }
    }
}
