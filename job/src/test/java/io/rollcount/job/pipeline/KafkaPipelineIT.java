package io.rollcount.job.pipeline;

import static io.rollcount.job.support.JobAwait.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.kafka.KafkaBrokerExtension;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.pipeline.FailureInjection.Place;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The whole job through Kafka (issue 3 item 5): the in-process KRaft broker ({@link KafkaBroker}), the real
 * Redis, and {@link Pipeline#build} with the production source and sinks ({@code JobConnectors.kafkaSource},
 * {@code redisSink}, {@code deadLetterSink}, {@code rollupsSink}) on a MiniCluster with
 * RocksDB and 300 ms checkpoints. The expected results are computed by the test from the generated records
 * ({@link KafkaInput}, {@link GroundTruth}), never by the job's code.
 *
 * <p>The output topics are shared by the runs of this class (their names are fixed by the contract): each
 * run reads them from the offsets they had before it started.
 */
class KafkaPipelineIT {
    /** A broker of this class's own, started before its {@code @BeforeAll} methods. */
    @RegisterExtension
    static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();

    @TempDir
    static Path dir;

    /** Input of test a (the contract's default topic name), and of the three runs of test b (smaller, to keep the class quick). */
    private static final String INPUT = "counter-events";

    private static final int RECORDS = 60_000;
    private static final String INPUT_B = "counter-events-b";
    private static final int RECORDS_B = 20_000;
    private static final int RECORDS_C = 24_000;

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slots(2);

    /** The inputs of tests a and b: produced once, read from the start by each run with a group of its own. */
    static KafkaInput input;

    static KafkaInput inputB;

    @BeforeAll
    static void startBrokerAndProduce() throws Exception {
        createTopic(3, INPUT);
        createTopic(3, INPUT_B);
        for (String t : KafkaIO.OUTPUT_TOPICS) createTopic(2, t);
        input = new KafkaInput(INPUT, 42, RECORDS, KafkaInput.startFor(RECORDS, 60_000));
        inputB = new KafkaInput(INPUT_B, 43, RECORDS_B, KafkaInput.startFor(RECORDS_B, 60_000));
        try (KafkaProducer<byte[], byte[]> p =
                KafkaInput.producer(KAFKA.broker().adminProperties())) {
            input.produce(p, RECORDS);
            inputB.produce(p, RECORDS_B);
        }
        for (KafkaInput in : List.of(input, inputB)) {
            assertThat(in.allBadLinesSent()).isTrue();
            assertThat(in.truth.duplicates).as("the stream has redeliveries").isGreaterThan(300);
            assertThat(in.truth.negativeCounters)
                    .as("the stream has decrements")
                    .isNotEmpty();
        }
    }

    /**
     * Creates a topic and waits until every partition's leader answers (a ListOffsets request):
     * {@link KafkaBroker#createTopics} returns once the metadata names a leader, and a produce request sent
     * right then may still be refused (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION).
     */
    private static void createTopic(int partitions, String topic) throws Exception {
        createTopic(KAFKA.broker(), partitions, topic);
    }

    /** Creates {@code topic} with {@code partitions} on {@code broker} and waits until each partition answers. */
    static void createTopic(KafkaBroker broker, int partitions, String topic) throws Exception {
        broker.createTopics(partitions, topic);
        assertThat(KafkaOutputs.endOffsets(broker.adminProperties(), topic, "read_committed"))
                .hasSize(partitions);
    }

    // ------------------------------------------------------------------ a. ground truth

    /**
     * a. A bounded run over the whole topic: Redis holds exactly the ground truth; {@code counter-rollups}
     * (read_committed) holds exactly one record per window that exists, revision 0, with the exact sum and
     * events count; {@code counter-events-dlq} holds exactly the bad records, with reason, payload, source
     * and key.
     */
    @Test
    void a_groundTruthThroughKafka() throws Exception {
        try (Run run = new Run(INPUT, true)) {
            FailureInjection.reset(Place.NONE, true);
            StreamExecutionEnvironment env = run.environment(3, Duration.ofMillis(200));
            Pipeline.build(
                    env,
                    run.options,
                    JobConnectors.kafkaSource(run.options),
                    run.outputs(JobConnectors.redisSink(run.options), JobConnectors.rollupsSink(run.options)));
            env.execute("kafka-pipeline-a");

            assertRedisEqualsTruth(run.redis, input.truth);
            List<ConsumerRecord<byte[], byte[]>> rollups = run.committedRollups();
            int revisions = assertRollupsExact(rollups, input.truth);
            assertThat(revisions)
                    .as("revisions > 0 in a run without failure or late events")
                    .isZero();
            List<ConsumerRecord<byte[], byte[]>> deadLetters = run.committedDeadLetters();
            assertDeadLettersExact(deadLetters, input.deadLetters);
            assertThat(input.deadLetters.values())
                    .extracting(KafkaInput.DeadLetter::reason)
                    .contains("future_ts", "invalid_utf8");
            System.out.printf(
                    "KafkaPipelineIT a: %d records, %d counted, %d redeliveries, %d Redis values, %d rollups, %d dead letters%n",
                    RECORDS,
                    input.truth.counted,
                    input.truth.duplicates,
                    input.truth.redisKeys("").size(),
                    rollups.size(),
                    deadLetters.size());
        }
    }

    // ------------------------------------------------------------------ b. exactly once under failure

    /**
     * b. One failure, after two completed checkpoints, at {@code place}; the job restarts from its last
     * checkpoint (the rollups writers are restored from it) and finishes. Then the committed outputs have no
     * duplicate and no gap, Redis is exact, and a poller that read totals every 20 ms never saw one go back.
     */
    @ParameterizedTest(name = "b. failure {0}")
    @EnumSource(
            value = Place.class,
            names = {"AFTER_SOURCE", "KEYED_OPERATOR", "SINK_TRANSACTION"})
    void b_exactlyOnceUnderFailure(Place place) throws Exception {
        try (Run run = new Run(INPUT_B, true);
                TotalsPoller poller = run.poller(inputB)) {
            FailureInjection.reset(place, true);
            StreamExecutionEnvironment env = run.environment(3, Duration.ofMillis(200));
            // Each reader holds after 3000 records until two checkpoints completed, so the failure lands mid-stream.
            Source<Event, ?, ?> source = new GatedSource<>(JobConnectors.kafkaSource(run.options), 3_000);
            Sink<RedisWrite> redis = FailingSinks.redis(JobConnectors.redisSink(run.options), 500);
            // every resolution rolled up here (--rollups.resolutions), the default elsewhere
            JobSettings everyResolution = run.options.toBuilder()
                    .set("--rollups.resolutions", "5s,1m,5m,1h,1d")
                    .build();
            FailingSinks.Kafka<Rollup, ?, ?> rollups = new FailingSinks.Kafka<>(JobConnectors.rollupsSink(run.options));
            Pipeline.build(env, everyResolution, source, run.outputs(redis, rollups));
            env.execute("kafka-pipeline-b-" + place);
            poller.close();

            assertThat(FailureInjection.FAILED).as("the failure was injected").isTrue();
            assertThat(FailingSinks.RESTORED_WRITERS.get())
                    .as("rollups writers restored from a checkpoint")
                    .isPositive();
            Throwable thrown = FailureInjection.THROWN.get();
            List<String> frames = Arrays.stream(thrown.getStackTrace())
                    .map(f -> f.getClassName() + "." + f.getMethodName())
                    .toList();
            switch (place) {
                case AFTER_SOURCE ->
                    assertThat(frames)
                            .as("thrown by the source reader")
                            .anyMatch(f -> f.contains("GatedSource$Reader.pollNext"));
                // The Redis writer is chained to the keyed operator: the exception passes through its timer callback.
                case KEYED_OPERATOR ->
                    assertThat(frames)
                            .as("thrown inside the keyed operator's flush")
                            .contains("io.rollcount.job.ops.CountPerCounter.flush");
                case SINK_TRANSACTION -> {
                    // The records of the failed transaction reached the broker and were never committed.
                    int uncommitted = run.rollups("read_uncommitted").size();
                    int committed = run.committedRollups().size();
                    assertThat(uncommitted)
                            .as("read_uncommitted sees the aborted transaction's records")
                            .isGreaterThan(committed);
                    System.out.printf(
                            "KafkaPipelineIT b: %d rollups committed, %d more on the broker in aborted transactions%n",
                            committed, uncommitted - committed);
                }
                default -> throw new AssertionError(place);
            }

            assertThat(poller.maxSeen).as("the poller saw totals").isNotEmpty();
            assertThat(poller.decreases).as("totals that went backwards").isEmpty();
            assertRedisEqualsTruth(run.redis, inputB.truth);
            int revisions =
                    assertRollupsExact(run.committedRollups(), inputB.truth, Set.of("5s", "1m", "5m", "1h", "1d"));
            assertDeadLettersExact(run.committedDeadLetters(), inputB.deadLetters);
            System.out.printf(
                    "KafkaPipelineIT b %s: %s; %d revisions above 0; poller read %d times, %d totals%n",
                    place, thrown.getMessage(), revisions, poller.polls.get(), poller.maxSeen.size());
        }
    }

    // ------------------------------------------------------------------ c. broker restart

    /**
     * c. An unbounded job; the broker is stopped and started again on the same port and folder while the job
     * runs (open transactions, records not yet read); production goes on after the restart. Once every input
     * record is in a completed checkpoint, the job is stopped with a draining savepoint (every window closes),
     * and the results are exact.
     */
    @Test
    void c_brokerRestartMidStream() throws Exception {
        String topic = "counter-events-c";
        int records = RECORDS_C;
        createTopic(3, topic);
        KafkaInput in = new KafkaInput(topic, 7, records, KafkaInput.startFor(records, 60_000));
        try (KafkaProducer<byte[], byte[]> p =
                KafkaInput.producer(KAFKA.broker().adminProperties())) {
            in.produce(p, records / 2);
        }
        try (Run run = new Run(topic, false);
                TotalsPoller poller = run.poller(in)) {
            // The readers hold after 2500 records each until the test releases them, after the broker is back.
            FailureInjection.reset(Place.NONE, false);
            // No idleness here: the hold, the outage and the wait for the last checkpoint each exceed the default
            // 10 s, and a source whose splits are all idle does not pass the end-of-time watermark of a draining
            // stop-with-savepoint on (seen: rc:meta:watermark stays at the last event time). With idleness off,
            // the watermark is the minimum over every partition, so no event is late and no window is revised.
            JobSettings options = run.options.toBuilder()
                    .set("--idle-timeout", Duration.ofMinutes(10))
                    .build();
            StreamExecutionEnvironment env = run.environment(30, Duration.ofSeconds(1));
            Pipeline.build(
                    env,
                    options,
                    new GatedSource<>(JobConnectors.kafkaSource(options), 2_500),
                    // The pass-through wrapper (no failure planned) only counts writers restored from a checkpoint.
                    run.outputs(
                            JobConnectors.redisSink(options),
                            new FailingSinks.Kafka<>(JobConnectors.rollupsSink(options))));
            JobClient job = env.executeAsync("kafka-pipeline-c");
            try {
                // Mid-stream: records read and not yet read, transactions committed, the next ones open.
                await(
                        "two checkpoints and committed dead letters",
                        Duration.ofSeconds(120),
                        () -> FailureInjection.completedCheckpoints() >= 2
                                && run.committedCount(KafkaIO.DEAD_LETTER_TOPIC, run.deadLettersFrom) > 0,
                        job);

                int port = KAFKA.broker().port();
                KAFKA.broker().stop();
                Thread.sleep(3_000); // the outage itself, not a synchronisation
                KAFKA.broker().start();
                assertThat(KAFKA.broker().port()).isEqualTo(port);

                try (KafkaProducer<byte[], byte[]> p =
                        KafkaInput.producer(KAFKA.broker().adminProperties())) {
                    in.produce(p, records / 2);
                }
                assertThat(in.allBadLinesSent()).isTrue();
                FailureInjection.released = true;

                await(
                        "every input record in a completed checkpoint",
                        Duration.ofSeconds(180),
                        () -> run.allInputCommitted(topic),
                        job);
                job.stopWithSavepoint(true, dir.resolve("savepoints").toUri().toString(), SavepointFormatType.CANONICAL)
                        .get(180, TimeUnit.SECONDS);
            } finally {
                if (!job.getJobStatus().get().isGloballyTerminalState())
                    job.cancel().get(60, TimeUnit.SECONDS);
            }
            poller.close();

            assertThat(poller.maxSeen).as("the poller saw totals").isNotEmpty();
            assertThat(poller.decreases).as("totals that went backwards").isEmpty();
            assertRedisEqualsTruth(run.redis, in.truth);
            int revisions = assertRollupsExact(run.committedRollups(), in.truth);
            assertThat(revisions).as("revisions > 0: some event was late").isZero();
            assertDeadLettersExact(run.committedDeadLetters(), in.deadLetters);
            System.out.printf(
                    "KafkaPipelineIT c: %d revisions above 0; %d rollups writers restored from a checkpoint; poller read %d times, %d totals%n",
                    revisions, FailingSinks.RESTORED_WRITERS.get(), poller.polls.get(), poller.maxSeen.size());
        }
    }

    // ------------------------------------------------------------------ one run of the job

    /** The options, Redis prefix and output offsets of one run. */
    private static final class Run implements AutoCloseable {
        final String id = UUID.randomUUID().toString().substring(0, 8);
        final RedisTestSupport redis = new RedisTestSupport();
        final JobSettings options;
        final Map<TopicPartition, Long> rollupsFrom;
        final Map<TopicPartition, Long> deadLettersFrom;

        Run(String topic, boolean bounded) {
            options = JobRuns.kafkaSettings(
                    KAFKA.broker().bootstrap(),
                    topic,
                    "kpit-" + id,
                    bounded,
                    redis.url(),
                    redis.prefix,
                    Duration.ofMillis(300));
            JobConnectors.ensureOutputTopics(options);
            rollupsFrom =
                    KafkaOutputs.endOffsets(KAFKA.broker().adminProperties(), KafkaIO.ROLLUPS_TOPIC, "read_committed");
            deadLettersFrom = KafkaOutputs.endOffsets(
                    KAFKA.broker().adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, "read_committed");
            FailingSinks.RESTORED_WRITERS.set(0);
        }

        StreamExecutionEnvironment environment(int attempts, Duration delay) {
            return JobRuns.environment(JobRuns.configuration(options, attempts, delay), 2);
        }

        /** The production outputs of a Kafka run (as {@code JobConnectors.assemble} makes them), with the given Redis and rollups sinks. */
        Pipeline.Outputs outputs(Sink<RedisWrite> redisSink, Sink<Rollup> rollups) {
            return JobRuns.kafkaOutputs(redisSink, rollups, options);
        }

        /** Polls the totals of the 30 hottest counters outside the {@code user:} namespace (the only one with decrements). */
        TotalsPoller poller(KafkaInput in) {
            EventGenerator names = new EventGenerator(1, EventGenerator.Workload.zipf, 3_000, 1, 0, 1, 0, 0);
            List<String> keys = new ArrayList<>();
            for (int rank = 0; keys.size() < 30; rank++) {
                String c = names.counterId(rank);
                if (c.startsWith("user:")) continue;
                assertThat(in.truth.negativeCounters).doesNotContain(c);
                keys.add(redis.prefix + ":{" + c + "}:total");
            }
            return new TotalsPoller(redis.host, redis.port, keys);
        }

        List<ConsumerRecord<byte[], byte[]>> rollups(String isolation) {
            return KafkaOutputs.read(KAFKA.broker().adminProperties(), KafkaIO.ROLLUPS_TOPIC, rollupsFrom, isolation);
        }

        List<ConsumerRecord<byte[], byte[]>> committedRollups() {
            return rollups("read_committed");
        }

        List<ConsumerRecord<byte[], byte[]>> committedDeadLetters() {
            return KafkaOutputs.read(
                    KAFKA.broker().adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, deadLettersFrom, "read_committed");
        }

        /** Records committed to an output topic since the run started (read_committed end offsets). */
        long committedCount(String topic, Map<TopicPartition, Long> from) {
            Map<TopicPartition, Long> now =
                    KafkaOutputs.endOffsets(KAFKA.broker().adminProperties(), topic, "read_committed");
            return now.entrySet().stream()
                    .mapToLong(e -> e.getValue() - from.getOrDefault(e.getKey(), 0L))
                    .sum();
        }

        /** The job's consumer group has committed (on a completed checkpoint) the end offset of every input partition. */
        boolean allInputCommitted(String topic) throws Exception {
            return KafkaOutputs.committedToEnd(KAFKA.broker().adminProperties(), topic, options.kafkaGroupId);
        }

        @Override
        public void close() {
            redis.close();
        }
    }

    // ------------------------------------------------------------------ expected outputs

    /** Every total and window sum equals the ground truth, nothing else but bookkeeping keys, the final watermark. */
    static void assertRedisEqualsTruth(RedisTestSupport redis, GroundTruth truth) {
        RedisTruth.assertEquals(redis, truth);
    }

    /**
     * Per (counter, resolution, window): the windows are exactly those of the ground truth; revisions are
     * 0, 1, 2... with none twice and none missing (so exactly one revision 0); the last revision has the
     * exact sum and events count. Returns how many records have a revision above 0.
     */
    static int assertRollupsExact(List<ConsumerRecord<byte[], byte[]>> records, GroundTruth truth) {
        return assertRollupsExact(records, truth, Set.of("1m", "1h", "1d"));
    }

    /** The same, for the resolutions {@code rolledUp} ({@code --rollups.resolutions}): no rollup of any other. */
    static int assertRollupsExact(
            List<ConsumerRecord<byte[], byte[]>> records, GroundTruth truth, Set<String> rolledUp) {
        record Value(long sum, long events) {}
        Map<String, Value> expected = new HashMap<>();
        truth.byCounter.forEach((counter, m) -> m.forEach((suffix, sum) -> {
            if (suffix.equals("total")) return;
            String[] parts = suffix.split(":");
            if (!rolledUp.contains(parts[0])) return;
            long start = Long.parseLong(parts[1]) * 1000L;
            expected.put(
                    counter + "|" + parts[0] + "|" + start,
                    new Value(sum, truth.eventsPerWindow.get(counter + "|" + suffix)));
        }));
        Map<String, List<Map<String, Object>>> byWindow = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            Map<String, Object> v = KafkaOutputs.parse(r.value());
            assertThat(v.keySet())
                    .containsExactly(
                            "prefix", "counter", "res", "start", "end", "sum", "events", "uniques", "revision");
            // the key prefix it was counted for, in the value and in the header
            assertThat(v.get("prefix")).as("prefix of " + v).isNotNull();
            assertThat(KafkaOutputs.text(r.headers()
                            .lastHeader(io.rollcount.job.kafka.KafkaIO.PREFIX_HEADER)
                            .value()))
                    .as("header of " + v)
                    .isEqualTo(v.get("prefix"));
            assertThat(KafkaOutputs.text(r.key())).as("key of " + v).isEqualTo(v.get("counter"));
            Resolution res = Resolution.ofLabel((String) v.get("res"));
            assertThat((long) v.get("end") - (long) v.get("start"))
                    .as("window length of " + v)
                    .isEqualTo(res.sizeMillis);
            byWindow.computeIfAbsent(
                            v.get("counter") + "|" + v.get("res") + "|" + v.get("start"), k -> new ArrayList<>())
                    .add(v);
        }
        Set<String> missing = new HashSet<>(expected.keySet());
        missing.removeAll(byWindow.keySet());
        Set<String> extra = new HashSet<>(byWindow.keySet());
        extra.removeAll(expected.keySet());
        assertThat(missing.size())
                .as("windows without a rollup (of " + expected.size() + "), e.g. " + first(missing))
                .isZero();
        assertThat(extra.size())
                .as("rollups of windows that do not exist, e.g. " + first(extra))
                .isZero();
        List<String> wrong = new ArrayList<>();
        int revisions = 0;
        for (var e : byWindow.entrySet()) {
            List<Map<String, Object>> list = new ArrayList<>(e.getValue());
            list.sort((x, y) -> Long.compare((long) x.get("revision"), (long) y.get("revision")));
            for (int i = 0; i < list.size(); i++) {
                if ((long) list.get(i).get("revision") != i) {
                    wrong.add(e.getKey() + ": revisions "
                            + list.stream().map(m -> m.get("revision")).toList() + " (duplicate or gap)");
                    break;
                }
            }
            revisions += list.size() - 1;
            Map<String, Object> last = list.get(list.size() - 1);
            Value want = expected.get(e.getKey());
            if ((long) last.get("sum") != want.sum() || (long) last.get("events") != want.events()) {
                wrong.add(e.getKey() + ": expected " + want + " got " + last);
            }
        }
        assertThat(wrong.size())
                .as("wrong windows (of " + byWindow.size() + "), e.g. " + first(wrong))
                .isZero();
        return revisions;
    }

    /** Exactly the bad records, once each: reason, payload (base64 where not UTF-8), source topic/partition/offset, key. */
    static void assertDeadLettersExact(
            List<ConsumerRecord<byte[], byte[]>> records, Map<String, KafkaInput.DeadLetter> expected) {
        Map<String, KafkaInput.DeadLetter> actual = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            Map<String, Object> v = KafkaOutputs.parse(r.value());
            assertThat(v.keySet())
                    .containsExactly(
                            "reason", "detail", "payload", "payload_encoding", "payload_truncated", "size", "source");
            assertThat(v.get("payload_truncated"))
                    .as("a small record is whole: " + v)
                    .isEqualTo(false);
            String source = (String) v.get("source");
            KafkaInput.DeadLetter d = new KafkaInput.DeadLetter(
                    (String) v.get("reason"), (String) v.get("payload"), KafkaOutputs.text(r.key()));
            assertThat(actual.put(source, d)).as("dead letter twice: " + v).isNull();
        }
        List<String> wrong = new ArrayList<>();
        expected.forEach((source, d) -> {
            if (!Objects.equals(actual.get(source), d))
                wrong.add(source + ": expected " + d + " got " + actual.get(source));
        });
        actual.forEach((source, d) -> {
            if (!expected.containsKey(source)) wrong.add(source + ": unexpected " + d);
        });
        assertThat(wrong)
                .as("dead letters (expected " + expected.size() + ", got " + actual.size() + ")")
                .isEmpty();
    }

    private static String first(java.util.Collection<?> items) {
        return items.stream().limit(10).map(String::valueOf).toList().toString();
    }
}
