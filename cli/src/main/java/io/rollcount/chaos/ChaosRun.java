package io.rollcount.chaos;

import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.kafka.TopicReader;
import io.rollcount.job.model.RecentEventTimes;
import io.rollcount.job.parse.EventParser;
import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import redis.clients.jedis.Jedis;

/**
 * A chaos run: the job on the multi-process Flink cluster of {@code deploy/local-cluster/} ({@link LocalCluster}),
 * reading the in-process Kafka broker in a child JVM ({@link BrokerJvm}) and writing to a Redis of its own
 * ({@link OwnRedis}, append-only with fsync always, {@code DEBUG} enabled), while a paced live stream from the
 * generator (duplicates, decrements, late events within the allowed lateness) flows and the faults of a seeded
 * {@link Fault#schedule} strike, sometimes two at once. A poller reads hot and cold totals of counters with only
 * positive deltas all the while; a sampler reads the job's committed offsets (events per second, consumer lag).
 * At the end it closes the windows with ticks and compares Redis, {@code counter-rollups} and
 * {@code counter-events-dlq} with the ground truth it kept ({@link ClusterTruth}), then writes a report, a PNG
 * chart and the {@code RESULT chaos} line.
 */
public final class ChaosRun implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int PARTITIONS = 4;
    private static final String TOPIC = "counter-events";
    private static final String PREFIX = "rc";
    /** How long the check waits for Redis to equal the truth and the job's watermark to pass the last event. */
    private static final int CATCH_UP_SECONDS = 240;

    /** What a run does. */
    public record Options(
            Duration duration,
            long seed,
            int rate,
            int counters,
            Path dir,
            Duration first,
            Duration minGap,
            Duration maxGap,
            Duration tail,
            int eachAtLeast,
            int taskmanagers) {
        /** The run: a fault every 1 to 3 minutes, every kind at least twice in 20 minutes. */
        public static Options of(Duration duration, long seed, Path dir) {
            boolean longRun = duration.toMinutes() >= 15;
            return new Options(
                    duration,
                    seed,
                    500,
                    400,
                    dir,
                    Duration.ofSeconds(45),
                    longRun ? Duration.ofMinutes(1) : Duration.ofSeconds(20),
                    longRun ? Duration.ofMinutes(3) : Duration.ofSeconds(35),
                    Duration.ofSeconds(longRun ? 60 : 30),
                    longRun ? 2 : 1,
                    2);
        }
    }

    /** The outcome: the RESULT line, where the report is, and whether every check passed. */
    public record Outcome(String resultLine, Path report, Path chart, boolean pass, List<String> problems) {}

    /** One injected fault: what, when (s after the stream began), how long until the job wrote again, and a note. */
    record Injected(Fault fault, double atSecond, double recoverySeconds, String note, String error) {}

    private final Options o;
    private final PrintStream out;
    private final String id = Long.toHexString(System.nanoTime() & 0xffffffL);
    private final ClusterTruth truth = new ClusterTruth();
    private final List<String> expectedDead = Collections.synchronizedList(new ArrayList<>());
    private final AtomicLong expectedDeadBinary = new AtomicLong();
    /**
     * The deliberately late events by their line. Each is within the allowed lateness of the stream it was produced
     * in, but a broker kill can hold its partition's records in the producer while other partitions' reach the job
     * and move the watermark on: the job then rightly dead-letters it as {@code late}, and the check takes it back
     * from the truth ({@link #withdrawLateDeadLetters}).
     */
    private final Map<String, Generated> lateEvents = new ConcurrentHashMap<>();
    /** The lines of late events found dead-lettered as {@code late} and taken back from the truth. */
    private final Set<String> withdrawnLate = ConcurrentHashMap.newKeySet();

    private final String sentinel = "pwned-" + Long.toHexString(new Random().nextLong() & 0xffffffffL);
    private final List<Injected> injected = new CopyOnWriteArrayList<>();
    private final List<RateChart.Point> samples = new CopyOnWriteArrayList<>();
    private final Map<String, Long> maxSeen = new ConcurrentHashMap<>();
    private final List<String> decreases = new CopyOnWriteArrayList<>();
    private final AtomicLong lastIncreaseNanos = new AtomicLong();
    private final AtomicBoolean producing = new AtomicBoolean(true);
    private final AtomicBoolean polling = new AtomicBoolean(true);
    private final AtomicReference<Throwable> producerError = new AtomicReference<>();
    private final AtomicLong failedSends = new AtomicLong();
    private final AtomicLong produced = new AtomicLong();
    private final List<String> jobs = new CopyOnWriteArrayList<>();
    private volatile String job;
    private volatile int parallelism = 2;
    private volatile long lastTs;
    private volatile long maxLag;
    private long startNanos;

    private OwnRedis redis;
    private BrokerJvm broker;
    private LocalCluster cluster;
    private KafkaProducer<byte[], byte[]> producer;
    private final List<Thread> threads = new ArrayList<>();

    public ChaosRun(Options options, PrintStream out) {
        this.o = options;
        this.out = out;
    }

    private void log(String msg) {
        out.printf(Locale.ROOT, "%tT chaos: %s%n", System.currentTimeMillis(), msg);
        out.flush();
    }

    private double since(long nanos) {
        return (nanos - startNanos) / 1e9;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    /** Runs the whole scenario and checks it; the report is written even when a check fails. */
    public Outcome run() throws Exception {
        Files.createDirectories(o.dir());
        List<Fault.Slot> schedule = Fault.schedule(
                o.seed(),
                o.duration().toMillis(),
                o.first().toMillis(),
                o.minGap().toMillis(),
                o.maxGap().toMillis(),
                o.tail().toMillis(),
                o.eachAtLeast());
        log("seed " + o.seed() + ", " + o.duration().toSeconds() + " s, " + schedule.size() + " fault slots in "
                + o.dir());
        for (Fault.Slot slot : schedule)
            log(String.format(
                    Locale.ROOT,
                    "  at %4d s: %s",
                    slot.atMillis() / 1000,
                    slot.faults().stream().map(f -> f.label).toList()));
        redis = new OwnRedis(o.dir().resolve("redis"), true, true).start();
        broker = new BrokerJvm(o.dir().resolve("kafka"), freePort()).start();
        try (Admin admin = Admin.create(adminProperties())) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1)))
                    .all()
                    .get(60, TimeUnit.SECONDS);
        }
        cluster = LocalCluster.startIn(o.dir().resolve("cluster"), o.taskmanagers());
        log("redis on " + redis.port + ", kafka on " + broker.bootstrap() + ", flink at " + cluster.restUrl());
        producer = newProducer();
        job = cluster.submit(runOptions(), jobArgs(parallelism));
        jobs.add(job);
        cluster.awaitAllRunning(job, Duration.ofMinutes(3));
        log("job " + job + " running at parallelism " + parallelism);

        startNanos = System.nanoTime();
        EventGenerator gen = new EventGenerator(
                o.seed(),
                EventGenerator.Workload.zipf,
                o.counters(),
                300,
                System.currentTimeMillis(),
                o.rate(),
                1_500,
                0.02);
        List<String> polled = new ArrayList<>();
        for (int rank = 0; rank < o.counters(); rank++) {
            if (positiveOnly(rank) && (rank < 40 || rank % 20 == 0))
                polled.add(PREFIX + ":{" + gen.counterId(rank) + "}:total");
        }
        background("producer", () -> produce(gen));
        background("poller", () -> poll(polled));
        background("sampler", this::sample);

        Random r = new Random(o.seed() * 31 + 7);
        for (Fault.Slot slot : schedule) {
            sleepUntil(startNanos + TimeUnit.MILLISECONDS.toNanos(slot.atMillis()));
            List<Thread> parallel = new ArrayList<>();
            for (int i = 0; i < slot.faults().size(); i++) {
                Fault f = slot.faults().get(i);
                double secs = slot.seconds().get(i);
                long seed = r.nextLong();
                Thread t = new Thread(() -> inject(f, secs, new Random(seed)), "fault-" + f.label);
                t.start();
                parallel.add(t);
            }
            for (Thread t : parallel) t.join();
        }
        sleepUntil(startNanos + o.duration().toNanos());
        producing.set(false);
        threads.get(0).join(TimeUnit.MINUTES.toMillis(5));
        tick();
        log("stream ended: " + produced.get() + " records produced; checking");
        return verifyAndReport(schedule);
    }

    /**
     * Where the job's watermark ({@code meta:watermark}) stood against the last event's time when the Redis check
     * ended, after {@code seconds}.
     */
    private String catchUp(long watermark, double seconds) {
        if (watermark >= lastTs)
            return String.format(
                    Locale.ROOT, "caught up: watermark past the last event after %.0f s of checking", seconds);
        if (watermark == Long.MIN_VALUE)
            return String.format(Locale.ROOT, "not caught up after %.0f s of checking: no watermark", seconds);
        return String.format(
                Locale.ROOT,
                "not caught up after %.0f s of checking: watermark %s, %.1f s behind the last event",
                seconds,
                Instant.ofEpochMilli(watermark),
                (lastTs - watermark) / 1e3);
    }

    private static void sleepUntil(long nanos) throws InterruptedException {
        long wait = nanos - System.nanoTime();
        if (wait > 0) TimeUnit.NANOSECONDS.sleep(wait);
    }

    private void background(String name, Runnable body) {
        Thread t = new Thread(body, "chaos-" + name);
        t.setDaemon(true);
        t.start();
        threads.add(t);
    }

    private static boolean positiveOnly(int rank) {
        return rank < 20 || rank % 10 == 0;
    }

    private static int rankOf(String counter) {
        String[] parts = counter.split(":");
        return parts.length == 3 ? Integer.parseInt(parts[1]) : -1;
    }

    private List<String> runOptions() {
        // the cluster's fixed-delay strategy allows 10 restarts in a job's life: a long run restarts more often
        return List.of(
                "-Drestart-strategy.type=fixed-delay",
                "-Drestart-strategy.fixed-delay.attempts=100000",
                "-Drestart-strategy.fixed-delay.delay=1 s");
    }

    private List<String> jobArgs(int p) {
        return LocalCluster.kafkaJobArgs(
                broker.bootstrap(), TOPIC, id, redis.url(), PREFIX, p, "--allowed-lateness", "5s");
    }

    private Properties adminProperties() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        return p;
    }

    private KafkaProducer<byte[], byte[]> newProducer() {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        // a broker restart must delay records, never fail them
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "900000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "900000");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    private void send(Integer partition, String key, byte[] value) {
        producer.send(new ProducerRecord<>(TOPIC, partition, key.getBytes(StandardCharsets.UTF_8), value), (md, e) -> {
            if (e != null) {
                failedSends.incrementAndGet();
                producerError.compareAndSet(null, e);
            }
        });
    }

    // ------------------------------------------------------------------ the stream, the poller, the sampler

    private void produce(EventGenerator gen) {
        long t0 = System.nanoTime();
        long i = 0;
        long late = 0;
        try {
            while (producing.get()) {
                Generated g = gen.next();
                i++;
                if (g.delta() < 0 && positiveOnly(rankOf(g.counter()))) continue; // those counters only ever grow
                truth.add(g);
                lastTs = Math.max(lastTs, g.ts());
                send(null, g.counter(), g.line().getBytes(StandardCharsets.UTF_8));
                produced.incrementAndGet();
                if (i % 200 == 0) {
                    // a late event: 3 s behind the stream, within the allowed lateness (5 s): counted, revises closed
                    // windows
                    long ts = gen.eventTime() - 3_000;
                    String line = "{\"counter\":\"" + g.counter() + "\",\"ts\":" + ts + ",\"event_id\":\"late-"
                            + (++late) + "\"}";
                    Generated lateEvent = new Generated(line, g.counter(), 1, ts, "late-" + late, null, false);
                    truth.add(lateEvent);
                    lateEvents.put(line, lateEvent);
                    send(null, g.counter(), line.getBytes(StandardCharsets.UTF_8));
                    produced.incrementAndGet();
                }
                if (i % 50 == 0) {
                    long due = t0 + (long) (i * 1e9 / o.rate());
                    long wait = due - System.nanoTime();
                    if (wait > 0) TimeUnit.NANOSECONDS.sleep(wait);
                }
            }
            producer.flush();
        } catch (Throwable t) {
            producerError.compareAndSet(null, t);
        }
    }

    private void poll(List<String> keys) {
        while (polling.get()) {
            try (Jedis j = new Jedis("127.0.0.1", redis.port, 2000)) {
                while (polling.get()) {
                    List<String> values = j.mget(keys.toArray(String[]::new));
                    for (int i = 0; i < keys.size(); i++) {
                        if (values.get(i) == null) continue;
                        long v = Long.parseLong(values.get(i));
                        String k = keys.get(i);
                        Long before = maxSeen.get(k);
                        if (before != null && v < before) decreases.add(k + ": " + before + " -> " + v);
                        if (before == null || v > before) {
                            maxSeen.put(k, v);
                            lastIncreaseNanos.set(System.nanoTime());
                        }
                    }
                    Thread.sleep(100);
                }
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                try {
                    Thread.sleep(200); // Redis down or stalled: try again
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    /** Every 5 s: events per second produced and processed (offsets the job committed), and the consumer lag. */
    private void sample() {
        long prevProduced = 0, prevCommitted = -1, prevNanos = System.nanoTime();
        Admin admin = null;
        while (polling.get()) {
            try {
                Thread.sleep(5_000);
                if (admin == null) admin = Admin.create(adminProperties());
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets("g-" + id)
                        .partitionsToOffsetAndMetadata()
                        .get(10, TimeUnit.SECONDS);
                Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
                for (int p = 0; p < PARTITIONS; p++) latest.put(new TopicPartition(TOPIC, p), OffsetSpec.latest());
                var ends = admin.listOffsets(latest).all().get(10, TimeUnit.SECONDS);
                long c = 0, end = 0;
                for (var e : ends.entrySet()) {
                    end += e.getValue().offset();
                    OffsetAndMetadata om = committed.get(e.getKey());
                    if (om != null) c += om.offset();
                }
                maxLag = Math.max(maxLag, end - c);
                long now = System.nanoTime(), prod = produced.get();
                double dt = (now - prevNanos) / 1e9;
                if (prevCommitted >= 0)
                    samples.add(new RateChart.Point(since(now), (prod - prevProduced) / dt, (c - prevCommitted) / dt));
                prevProduced = prod;
                prevCommitted = c;
                prevNanos = now;
            } catch (InterruptedException e) {
                break;
            } catch (Exception e) {
                // the broker is down: the next sample covers the gap
                if (admin != null) admin.close(Duration.ofSeconds(1));
                admin = null;
            }
        }
        if (admin != null) admin.close(Duration.ofSeconds(2));
    }

    // ------------------------------------------------------------------ the faults

    private void inject(Fault f, double secs, Random r) {
        long t0 = System.nanoTime();
        String note;
        try {
            long disruptedUntil;
            switch (f) {
                case TM_KILL -> {
                    List<String> tms = cluster.taskManagersOf(job);
                    int victim = tms.isEmpty()
                            ? 1
                            : Integer.parseInt(tms.get(r.nextInt(tms.size())).substring(3));
                    cluster.killTaskManager(victim);
                    // a supervisor (systemd, Kubernetes) starts it again; the job fails over meanwhile
                    cluster.startTaskManager(victim);
                    note = "kill -9 of tm-" + victim + " (job on " + tms + "), started again";
                }
                case JM_KILL -> {
                    String before = job;
                    cluster.killJobManager();
                    cluster.startJobManager();
                    Path checkpoint = latestCheckpoint()
                            .orElseThrow(() -> new IllegalStateException("no retained checkpoint of " + jobs));
                    job = cluster.submit(resumeOptions(checkpoint.toUri().toString()), jobArgs(parallelism));
                    jobs.add(job);
                    note = "kill -9 of the JobManager, restarted; " + before + " resumed from "
                            + checkpoint.getParent().getFileName() + "/" + checkpoint.getFileName() + " as " + job;
                }
                case BROKER_KILL -> {
                    broker.kill();
                    Thread.sleep((long) (secs * 1000));
                    broker.start();
                    note = String.format(
                            Locale.ROOT, "kill -9 of the Kafka broker, restarted on its folder after %.1f s", secs);
                }
                case REDIS_STOP -> {
                    redis.shutdown();
                    Thread.sleep((long) (secs * 1000));
                    redis.start();
                    note = String.format(Locale.ROOT, "redis-server stopped for %.1f s", secs);
                }
                case REDIS_STALL -> {
                    redis.stall(secs);
                    note = String.format(Locale.ROOT, "DEBUG SLEEP %.1f", secs);
                }
                case SAVEPOINT_RESCALE -> {
                    String before = job;
                    int to = parallelism == 2 ? 3 : 2;
                    String savepoint = cluster.stopWithSavepoint(job, o.dir().resolve("savepoints"));
                    job = cluster.submit(resumeOptions(savepoint), jobArgs(to));
                    jobs.add(job);
                    note = "stop-with-savepoint of " + before + " at parallelism " + parallelism + ", resumed as " + job
                            + " at " + to;
                    parallelism = to;
                }
                case BAD_BURST -> note = badBurst();
                case ATTACK_IDS -> note = attackIds();
                default -> throw new IllegalStateException(f.toString());
            }
            disruptedUntil = System.nanoTime();
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(5);
            while (!(cluster.allRunning(job) && lastIncreaseNanos.get() > disruptedUntil)) {
                if (System.nanoTime() > deadline)
                    throw new IllegalStateException(
                            "the job did not write again within 5 minutes; state " + cluster.jobState(job));
                Thread.sleep(100);
            }
            double recovery = (lastIncreaseNanos.get() - t0) / 1e9;
            injected.add(new Injected(f, since(t0), recovery, note, null));
            log(String.format(
                    Locale.ROOT, "%s at %.0f s: %s; writing again after %.1f s", f.label, since(t0), note, recovery));
        } catch (Exception e) {
            injected.add(new Injected(
                    f,
                    since(t0),
                    Double.NaN,
                    "",
                    String.valueOf(e.getMessage()).lines().findFirst().orElse("?")));
            log(f.label + " FAILED: " + e);
        }
    }

    /** {@code flink run} options resuming from a savepoint or retained checkpoint. */
    private List<String> resumeOptions(String path) {
        List<String> all = new ArrayList<>(runOptions());
        all.add("-s");
        all.add(path);
        return all;
    }

    /** The newest retained checkpoint of the newest job that has one. */
    private java.util.Optional<Path> latestCheckpoint() throws IOException {
        for (int i = jobs.size() - 1; i >= 0; i--) {
            var c = cluster.latestCheckpoint(jobs.get(i));
            if (c.isPresent()) return c;
        }
        return java.util.Optional.empty();
    }

    /** A burst of every malformed record the contract rejects, three times over, and invalid UTF-8. */
    private String badBurst() {
        int n = 0;
        for (int rep = 0; rep < 3; rep++) {
            for (String[] bad : EventGenerator.badLines(System.currentTimeMillis())) {
                expectedDead.add(bad[0]);
                send(null, "bad", bad[0].getBytes(StandardCharsets.UTF_8));
                n++;
            }
            expectedDeadBinary.incrementAndGet();
            send(null, "bad", EventGenerator.invalidUtf8Line());
            n++;
        }
        producer.flush();
        return n + " malformed records";
    }

    /** Counter ids made to look like Redis commands, Lua, globs and key names: the valid ones count, the others are dead letters. */
    private String attackIds() {
        String s = sentinel;
        List<String> valid = List.of(
                "*",
                "?",
                "[a-z]*",
                "redis.call('SET','" + s + "','1')",
                "')redis.call('SET','" + s + "','1')--",
                "return(redis.call('FLUSHALL'))",
                "KEYS[1]",
                "ARGV[1]",
                "--[[",
                "]]",
                "rc:*:total",
                "a:b:c:d:e",
                "total",
                "meta:watermark",
                "$(touch%20" + s + ")",
                "../../etc/passwd",
                "<script>alert(1)</script>",
                "%s%n%x",
                "l".repeat(256));
        List<String> invalid = List.of(
                "a\\r\\nSET\\r\\n" + s + "\\r\\n1",
                "*3\\r\\n$3\\r\\nSET\\r\\n$8\\r\\n" + s + "\\r\\n$1\\r\\n1\\r\\n",
                "x y",
                "}",
                "{a}",
                "l".repeat(257));
        long ts = System.currentTimeMillis() - 1_000;
        for (String c : valid) {
            String line = "{\"counter\":\"" + c + "\",\"delta\":2,\"ts\":" + ts + "}";
            truth.add(new Generated(line, c, 2, ts, null, null, false));
            send(null, c, line.getBytes(StandardCharsets.UTF_8));
        }
        for (String c : invalid) {
            String line = "{\"counter\":\"" + c + "\",\"delta\":2,\"ts\":" + ts + "}";
            expectedDead.add(line);
            send(null, "attack", line.getBytes(StandardCharsets.UTF_8));
        }
        producer.flush();
        return valid.size() + " attack ids counted, " + invalid.size() + " rejected";
    }

    /** Ticks per partition far enough ahead to close the windows of the stream (see ClusterFaultIT). */
    private void tick() {
        long tickTs = Math.max(lastTs, System.currentTimeMillis()) + 30_000;
        for (int p = 0; p < PARTITIONS; p++) {
            for (int i = 0; i <= RecentEventTimes.OUTLIERS_IGNORED; i++) {
                String counter = "tick:p" + p;
                String line = "{\"counter\":\"" + counter + "\",\"ts\":" + tickTs + "}";
                truth.add(new Generated(line, counter, 1, tickTs, null, null, false));
                send(p, counter, line.getBytes(StandardCharsets.UTF_8));
            }
        }
        producer.flush();
    }

    // ------------------------------------------------------------------ the checks and the report

    private Outcome verifyAndReport(List<Fault.Slot> schedule) throws Exception {
        List<String> problems = new ArrayList<>();
        if (producerError.get() != null)
            problems.add("producer: " + failedSends.get() + " failed sends, first " + producerError.get());
        // Redis: every total and window equal to the truth, no other count key
        Map<String, Long> expected = truth.redisKeys(PREFIX);
        List<String> wrongKeys = List.of();
        long watermark = Long.MIN_VALUE;
        long checkStart = System.nanoTime();
        long deadline = checkStart + TimeUnit.SECONDS.toNanos(CATCH_UP_SECONDS);
        try (Jedis j = new Jedis("127.0.0.1", redis.port, 10_000)) {
            while (true) {
                List<String> w = ClusterTruth.wrongKeys(expected, ClusterTruth.redisCounts(j, PREFIX));
                wrongKeys = w;
                String wm = j.get(PREFIX + ":meta:watermark");
                watermark = wm == null ? Long.MIN_VALUE : Long.parseLong(wm);
                if ((w.isEmpty() && watermark >= lastTs) || System.nanoTime() > deadline) break;
                if (watermark >= lastTs && withdrawLateDeadLetters() > 0) {
                    expected = truth.redisKeys(PREFIX);
                    continue;
                }
                Thread.sleep(1000);
            }
            if (j.exists(sentinel)) problems.add("an attack id wrote the key " + sentinel);
        }
        polling.set(false);
        // A job still behind at the deadline shows as wrong and lost counts too: say so, so that a slow catch-up
        // is told apart from a wrong state.
        String catchUp = catchUp(watermark, (System.nanoTime() - checkStart) / 1e9);
        log(catchUp);
        if (watermark < lastTs) problems.add(catchUp);
        if (!wrongKeys.isEmpty())
            problems.add(wrongKeys.size() + " Redis keys wrong, e.g. "
                    + wrongKeys.stream().limit(5).toList());
        // counter-rollups, read_committed
        long[] lostDup = new long[2];
        int wrongWindows = checkRollups(watermark, lostDup, problems);
        // dead letters: exactly the bad records
        checkDeadLetters(problems);
        if (!decreases.isEmpty())
            problems.add(decreases.size() + " totals seen going down, e.g. "
                    + decreases.stream().limit(5).toList());
        for (Injected i : injected)
            if (i.error() != null)
                problems.add(i.fault().label + " at " + Math.round(i.atSecond()) + " s failed: " + i.error());
        Set<String> kinds = new TreeSet<>();
        List<Double> recoveries = new ArrayList<>();
        for (Injected i : injected) {
            if (i.error() == null) {
                kinds.add(i.fault().label);
                recoveries.add(i.recoverySeconds());
            }
        }
        Collections.sort(recoveries);
        double p50 = recoveries.isEmpty() ? Double.NaN : recoveries.get((recoveries.size() - 1) / 2);
        double max = recoveries.isEmpty() ? Double.NaN : recoveries.get(recoveries.size() - 1);
        int wrong = wrongKeys.size() + wrongWindows;
        String result = String.format(
                Locale.ROOT,
                "RESULT chaos faults=%d kinds=%d lost=%d duplicated=%d wrong=%d decreases=%d recovery_p50_s=%.1f recovery_max_s=%.1f",
                injected.size(),
                kinds.size(),
                lostDup[0],
                lostDup[1],
                wrong,
                decreases.size(),
                p50,
                max);
        boolean pass = problems.isEmpty() && kinds.size() == Fault.values().length;
        if (kinds.size() != Fault.values().length) problems.add("kinds injected: " + kinds);

        Path chart = o.dir().resolve("chaos-rate.png");
        List<RateChart.Mark> marks = new ArrayList<>();
        for (Injected i : injected) marks.add(new RateChart.Mark(i.atSecond(), i.fault().label));
        RateChart.write(
                chart, "rollcount chaos, seed " + o.seed() + ": events per second", new ArrayList<>(samples), marks);
        Path report = o.dir().resolve("chaos-report.txt");
        StringBuilder sb = new StringBuilder();
        sb.append("rollcount chaos --duration ")
                .append(o.duration().toSeconds())
                .append("s --seed ")
                .append(o.seed())
                .append('\n');
        sb.append("finished ")
                .append(Instant.now())
                .append("; ")
                .append(o.rate())
                .append(" events/s over ")
                .append(o.counters())
                .append(" counters (zipf), ")
                .append(produced.get())
                .append(" records produced, ")
                .append(truth.counted)
                .append(" counted, ")
                .append(truth.duplicates)
                .append(" duplicates, ")
                .append(truth.negativeCounters.size())
                .append(" counters with decrements, ")
                .append(expectedDead.size() + expectedDeadBinary.get())
                .append(" bad records, ")
                .append(withdrawnLate.size())
                .append(" late events dead-lettered as late behind a held-back partition\n");
        sb.append("jobs: ")
                .append(jobs)
                .append("; final parallelism ")
                .append(parallelism)
                .append('\n');
        sb.append(
                "\nfaults (s after the stream began; recovery = until the job ran every task and a polled total grew again):\n");
        for (Injected i : injected) {
            sb.append(String.format(
                    Locale.ROOT,
                    "  %6.0f s  %-18s recovery %6.1f s  %s%s%n",
                    i.atSecond(),
                    i.fault().label,
                    i.recoverySeconds(),
                    i.note(),
                    i.error() == null ? "" : " FAILED: " + i.error()));
        }
        sb.append(String.format(
                Locale.ROOT, "recovery p50 %.1f s, max %.1f s; largest consumer lag %d records%n", p50, max, maxLag));
        sb.append("\nevents per second (produced / processed, every 30 s; chart: ")
                .append(chart.getFileName())
                .append("):\n");
        double nextAt = 0;
        for (RateChart.Point p : samples) {
            if (p.second() >= nextAt) {
                sb.append(String.format(
                        Locale.ROOT, "  %6.0f s  %7.0f  %7.0f%n", p.second(), p.produced(), p.processed()));
                nextAt = p.second() + 30;
            }
        }
        sb.append('\n').append(catchUp).append('\n');
        sb.append("\nchecks: ")
                .append(
                        problems.isEmpty()
                                ? "every Redis total and window equal to the truth (" + expected.size() + " keys), "
                                        + "counter-rollups exactly once, dead letters exactly the bad records, no positive-only total seen going down ("
                                        + maxSeen.size() + " polled)"
                                : String.join("\n  ", problems))
                .append('\n');
        sb.append(result).append('\n');
        Files.writeString(report, sb.toString());
        log("report " + report + ", chart " + chart);
        return new Outcome(result, report, chart, pass, problems);
    }

    /** counter-rollups: no duplicate, revisions without gap, true sums and event counts, every closed window present. Returns the windows wrong. */
    private int checkRollups(long watermark, long[] lostDup, List<String> problems) throws Exception {
        Map<ClusterTruth.Window, long[]> closed = truth.closedRollupWindows(watermark);
        List<String> wrong = new ArrayList<>();
        long lost = 0, dup = 0;
        int records = 0;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (true) {
            wrong.clear();
            List<ConsumerRecord<byte[], byte[]>> all = readCommitted("counter-rollups");
            records = all.size();
            long[] lostAndDup = truth.checkRollups(all, closed, wrong);
            lost = lostAndDup[0];
            dup = lostAndDup[1];
            if (wrong.isEmpty() || System.nanoTime() > deadline) break;
            Thread.sleep(2000);
        }
        lostDup[0] = lost;
        lostDup[1] = dup;
        if (!wrong.isEmpty())
            problems.add("counter-rollups (" + records + " records): " + wrong.size() + " problems, e.g. "
                    + wrong.stream().limit(5).toList());
        else log("counter-rollups exact: " + records + " records, every one of " + closed.size() + " closed windows");
        return wrong.size();
    }

    private void checkDeadLetters(List<String> problems) throws Exception {
        Map<String, Integer> want = new HashMap<>();
        synchronized (expectedDead) {
            for (String s : expectedDead) want.merge(s, 1, Integer::sum);
        }
        long binary = 0;
        List<String> extra = new ArrayList<>();
        List<ConsumerRecord<byte[], byte[]>> all = readCommitted("counter-events-dlq");
        for (ConsumerRecord<byte[], byte[]> r : all) {
            JsonNode n = JSON.readTree(r.value());
            if ("base64".equals(n.path("payload_encoding").asText())) {
                binary++;
                if (!java.util.Arrays.equals(
                        Base64.getDecoder().decode(n.path("payload").asText()), EventGenerator.invalidUtf8Line()))
                    extra.add(n.toString());
                continue;
            }
            String payload = n.path("payload").asText();
            if (withdrawnLate.contains(payload)
                    && EventParser.LATE.equals(n.path("reason").asText())) continue;
            Integer c = want.get(payload);
            if (c == null) extra.add(n.path("reason").asText() + " " + payload);
            else if (c == 1) want.remove(payload);
            else want.put(payload, c - 1);
        }
        if (binary != expectedDeadBinary.get())
            problems.add("dead letters of invalid UTF-8: " + binary + ", expected " + expectedDeadBinary.get());
        if (!want.isEmpty())
            problems.add("bad records without their dead letter: "
                    + want.keySet().stream().limit(5).toList());
        if (!extra.isEmpty())
            problems.add(extra.size() + " unexpected dead letters, e.g. "
                    + extra.stream().limit(5).toList());
        if (want.isEmpty() && extra.isEmpty()) log("dead letters exact: " + all.size());
    }

    /**
     * Takes back from the truth every late event that {@code counter-events-dlq} holds as {@code late} and that was
     * not taken back yet; returns how many it took back now.
     */
    private int withdrawLateDeadLetters() throws IOException {
        int now = 0;
        for (ConsumerRecord<byte[], byte[]> r : readCommitted("counter-events-dlq")) {
            JsonNode n = JSON.readTree(r.value());
            if (!EventParser.LATE.equals(n.path("reason").asText())) continue;
            String payload = n.path("payload").asText();
            Generated g = lateEvents.get(payload);
            if (g != null && withdrawnLate.add(payload)) {
                truth.withdraw(g);
                now++;
            }
        }
        if (now > 0)
            log(withdrawnLate.size() + " late events dead-lettered as late (their partition reached the job after "
                    + "the watermark had passed them by more than the allowed lateness): taken back from the truth");
        return now;
    }

    private List<ConsumerRecord<byte[], byte[]>> readCommitted(String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        return TopicReader.read(p, topic, Map.of(), "read_committed");
    }

    @Override
    public void close() throws Exception {
        producing.set(false);
        polling.set(false);
        for (Thread t : threads) t.interrupt();
        if (producer != null) producer.close(Duration.ofSeconds(5));
        try {
            if (cluster != null) cluster.close();
        } finally {
            try {
                if (broker != null) broker.close();
            } finally {
                if (redis != null) redis.close();
            }
        }
    }
}
