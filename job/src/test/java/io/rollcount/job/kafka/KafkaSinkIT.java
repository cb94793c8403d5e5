package io.rollcount.job.kafka;

import static io.rollcount.job.kafka.KafkaTestSupport.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.kafka.KafkaTestSupport.KV;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import io.rollcount.job.model.Rollup;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The exactly-once sinks of {@code counter-rollups} and {@code counter-events-dlq} in a MiniCluster job,
 * read back with {@code isolation.level=read_committed}: exactly the records written, none twice, also
 * when the job fails after some records and restarts from its last checkpoint.
 */
class KafkaSinkIT {
    /** A broker of this class's own, started before its {@code @BeforeAll} methods. */
    @RegisterExtension
    static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();

    private static final int RECORDS = 600;

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(KafkaTestSupport::miniCluster);

    /** Set by a test to make the job fail once; cleared by the failure. */
    static final AtomicBoolean FAIL_ONCE = new AtomicBoolean();

    static final AtomicInteger FAILURES = new AtomicInteger();

    @BeforeAll
    static void startBroker() throws Exception {
        // Fewer partitions than the default would do too; two show that keys spread and nothing is lost.
        KAFKA.broker().createTopics(2, KafkaIO.ROLLUPS_TOPIC, KafkaIO.DEAD_LETTER_TOPIC);
    }

    static Rollup rollup(long i) {
        return new Rollup(
                "post:" + (i % 13) + ":likes",
                "1m",
                i * 60_000L,
                (i + 1) * 60_000L,
                i * 3 - 7,
                i + 1,
                i % 2 == 0 ? null : i / 2,
                (int) (i % 3));
    }

    static Event deadLetter(long i) {
        Event e = new Event();
        e.payload = i % 4 == 0 ? new byte[] {(byte) 0xff, (byte) i} : utf8("bad " + i);
        e.key = i % 3 == 0 ? null : utf8("k" + i);
        e.source = "counter-events/" + (i % 2) + "/" + i;
        return e.deadLetter("invalid_json", "detail " + i);
    }

    static boolean isDeadLetter(long i) {
        return i % 5 == 0;
    }

    private JobSettings options(String prefix) {
        return JobSettings.builder()
                .set("--kafka.bootstrap", KAFKA.broker().bootstrap())
                .set("--kafka.transactional-id-prefix", prefix)
                .build();
    }

    /** Writes RECORDS rollups and dead letters at a bounded rate, with checkpoints every 200 ms. */
    private void runJob(JobSettings o, int failAfter, double perSecond) throws Exception {
        JobConnectors.ensureOutputTopics(o);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(200);
        env.configure(KafkaTestSupport.boundedRestarts());
        DataStream<Long> numbers = env.fromSource(
                        new DataGeneratorSource<>(
                                i -> i, RECORDS, RateLimiterStrategy.perSecond(perSecond), Types.LONG),
                        WatermarkStrategy.noWatermarks(),
                        "numbers")
                .map(new FailOnce(failAfter))
                .returns(Types.LONG);
        numbers.filter(i -> !isDeadLetter(i))
                .map(KafkaSinkIT::rollup)
                .returns(Rollup.class)
                .sinkTo(JobConnectors.rollupsSink(o))
                .name("rollups");
        numbers.filter(KafkaSinkIT::isDeadLetter)
                .map(KafkaSinkIT::deadLetter)
                .returns(Event.class)
                .sinkTo(JobConnectors.deadLetterSink(o))
                .name("dead letters");
        // The trending topic is not created by the test: the sink factory creates it.
        numbers.filter(i -> i % 50 == 0)
                .returns(Types.LONG)
                .sinkTo(KafkaIO.<Long>trending(
                        JobConnectors.kafkaProducerProperties(o),
                        o.kafkaTransactionalIdPrefix,
                        o.kafkaTopicTrending,
                        o.redis.keyPrefix(),
                        i -> "ns" + (i % 3),
                        KafkaSinkIT::trendingValue))
                .name("trending");
        env.execute("kafka sink test");
    }

    static byte[] trendingValue(Long i) {
        return utf8("{\"ns\":\"ns" + (i % 3) + "\",\"kind\":\"trending\",\"at\":" + i + "}");
    }

    private static List<KV> expectedTrending() {
        List<KV> out = new ArrayList<>();
        for (long i = 0; i < RECORDS; i += 50) out.add(KV.of(utf8("ns" + (i % 3)), trendingValue(i)));
        return out;
    }

    private static List<KV> expectedRollups() {
        List<KV> out = new ArrayList<>();
        for (long i = 0; i < RECORDS; i++) {
            if (!isDeadLetter(i)) {
                Rollup r = rollup(i);
                out.add(KV.of(utf8(r.counter), Json.rollup(new io.rollcount.job.JobOptions().redisKeyPrefix, r)));
            }
        }
        return out;
    }

    private static List<KV> expectedDeadLetters() {
        List<KV> out = new ArrayList<>();
        for (long i = 0; i < RECORDS; i++) {
            if (isDeadLetter(i)) {
                Event e = deadLetter(i);
                out.add(KV.of(e.key, Json.deadLetter(e)));
            }
        }
        return out;
    }

    @Test
    void writesEveryRollupAndDeadLetterExactlyOnce() throws Exception {
        check("sink-test-plain", -1);
    }

    @Test
    void aFailureAfterSomeRecordsRestartsFromTheCheckpointWithoutDuplicates() throws Exception {
        int before = FAILURES.get();
        FAIL_ONCE.set(true);
        check("sink-test-failure", RECORDS / 4);
        assertThat(FAILURES.get()).as("the job failed once and recovered").isEqualTo(before + 1);
        assertThat(FAIL_ONCE.get()).isFalse();
    }

    private void check(String prefix, int failAfter) throws Exception {
        Map<TopicPartition, Long> rollupsFrom =
                KafkaTestSupport.endOffsets(KAFKA.broker().adminProperties(), KafkaIO.ROLLUPS_TOPIC);
        Map<TopicPartition, Long> dlqFrom =
                KafkaTestSupport.endOffsets(KAFKA.broker().adminProperties(), KafkaIO.DEAD_LETTER_TOPIC);
        Map<TopicPartition, Long> trendingFrom = topicExists(KafkaIO.TRENDING_TOPIC)
                ? KafkaTestSupport.endOffsets(KAFKA.broker().adminProperties(), KafkaIO.TRENDING_TOPIC)
                : Map.of();
        runJob(options(prefix), failAfter, 300);

        List<KV> rollups = KafkaTestSupport.kvs(
                KafkaTestSupport.readCommitted(KAFKA.broker().adminProperties(), KafkaIO.ROLLUPS_TOPIC, rollupsFrom));
        List<KV> deadLetters = KafkaTestSupport.kvs(
                KafkaTestSupport.readCommitted(KAFKA.broker().adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, dlqFrom));
        // Exactly the records, each once (the lists compare as multisets: a duplicate fails).
        assertThat(rollups).hasSize(expectedRollups().size()).containsExactlyInAnyOrderElementsOf(expectedRollups());
        assertThat(deadLetters)
                .hasSize(expectedDeadLetters().size())
                .containsExactlyInAnyOrderElementsOf(expectedDeadLetters());
        List<KV> all = KafkaTestSupport.kvs(KafkaTestSupport.read(
                KAFKA.broker().adminProperties(), KafkaIO.ROLLUPS_TOPIC, rollupsFrom, "read_uncommitted"));
        System.out.println(prefix + ": " + rollups.size() + " rollups committed, " + all.size()
                + " records written in all (aborted transactions included)");
        List<KV> trending = KafkaTestSupport.kvs(
                KafkaTestSupport.readCommitted(KAFKA.broker().adminProperties(), KafkaIO.TRENDING_TOPIC, trendingFrom));
        assertThat(trending).hasSize(expectedTrending().size()).containsExactlyInAnyOrderElementsOf(expectedTrending());
        assertThat(deadLetters).anySatisfy(kv -> assertThat(kv.key()).isNull());
        assertThat(new String(Json.deadLetter(deadLetter(10)), StandardCharsets.UTF_8))
                .isEqualTo(
                        "{\"reason\":\"invalid_json\",\"detail\":\"detail 10\",\"payload\":\"bad 10\",\"payload_encoding\":\"utf8\","
                                + "\"payload_truncated\":false,\"size\":6,\"source\":\"counter-events/0/10\"}");
    }

    private static boolean topicExists(String topic) throws Exception {
        try (Admin admin = Admin.create(KAFKA.broker().adminProperties())) {
            return admin.listTopics().names().get().contains(topic);
        }
    }

    /**
     * Passes numbers through; with {@link #FAIL_ONCE} set, the first subtask that has seen a completed
     * checkpoint and its n-th number throws, once: the restart is from that checkpoint, with records of an
     * open transaction behind it.
     */
    static final class FailOnce extends RichMapFunction<Long, Long> implements CheckpointListener {
        private final int failAfter;
        private transient int seen;
        private transient volatile boolean checkpointed;

        FailOnce(int failAfter) {
            this.failAfter = failAfter;
        }

        @Override
        public void open(OpenContext ctx) {
            seen = 0;
        }

        @Override
        public Long map(Long value) {
            if (failAfter >= 0 && ++seen >= failAfter / 2 && checkpointed && FAIL_ONCE.compareAndSet(true, false)) {
                FAILURES.incrementAndGet();
                throw new IllegalStateException("injected failure after " + seen + " records of this subtask");
            }
            return value;
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            checkpointed = true;
        }
    }
}
