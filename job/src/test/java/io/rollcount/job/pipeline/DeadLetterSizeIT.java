package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.kafka.KafkaBrokerExtension;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.model.DeadLetterPayload;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.RedisTestSupport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Issue 18 item 1, the Kafka poison pill: on a single-partition topic, among good events, a 200 KB record
 * of control bytes (its JSON-escaped dead letter was 1.2 MB) and an 800 KB record of invalid UTF-8 (1.07 MB
 * as base64). The broker and the job's producer keep Kafka's default size limits ({@code max.request.size}
 * 1 MiB, {@code max.message.bytes} 1 MB), and the job may not restart at all: it must finish with every good
 * record counted exactly, and each giant record as one dead letter with its first 64 KiB, its size and
 * {@code payload_truncated}.
 */
class DeadLetterSizeIT {
    /** A broker of this class's own, started before its {@code @BeforeAll} methods. */
    @RegisterExtension
    static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();

    private static final String INPUT = "counter-events-poison";
    private static final int RECORDS = 6_000;

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slots(2);

    @BeforeAll
    static void startBroker() throws Exception {
        KAFKA.broker().createTopics(1, INPUT);
        assertThat(KafkaOutputs.endOffsets(KAFKA.broker().adminProperties(), INPUT, "read_committed"))
                .hasSize(1);
    }

    @Test
    void giantRecordsBecomeOneTruncatedDeadLetterEachAndTheJobFinishesExact() throws Exception {
        byte[] control = new byte[200_000];
        for (int i = 0; i < control.length; i++) control[i] = (byte) (1 + i % 31);
        byte[] invalid = new byte[800_000];
        for (int i = 0; i < invalid.length; i++)
            invalid[i] = (byte) (i % 2 == 0 ? 0xC3 : 0x28); // a lead byte without its continuation

        KafkaInput input = new KafkaInput(INPUT, 99, RECORDS, KafkaInput.startFor(RECORDS, 60_000));
        Map<String, byte[]> giants = new HashMap<>();
        try (KafkaProducer<byte[], byte[]> p =
                KafkaInput.producer(KAFKA.broker().adminProperties())) {
            input.produce(p, RECORDS / 2);
            RecordMetadata a = p.send(new ProducerRecord<>(INPUT, "poison-control".getBytes(), control))
                    .get();
            input.produce(p, RECORDS / 4);
            RecordMetadata b = p.send(new ProducerRecord<>(INPUT, "poison-utf8".getBytes(), invalid))
                    .get();
            input.produce(p, RECORDS / 4);
            giants.put(a.topic() + "/" + a.partition() + "/" + a.offset(), control);
            giants.put(b.topic() + "/" + b.partition() + "/" + b.offset(), invalid);
        }

        try (RedisTestSupport redis = new RedisTestSupport()) {
            String id = UUID.randomUUID().toString().substring(0, 8);
            JobSettings o = JobRuns.kafkaSettings(
                    KAFKA.broker().bootstrap(),
                    INPUT,
                    "dlsize-" + id,
                    true,
                    redis.url(),
                    redis.prefix,
                    Duration.ofMillis(300));
            JobConnectors.ensureOutputTopics(o);
            Map<TopicPartition, Long> dlqFrom = KafkaOutputs.endOffsets(
                    KAFKA.broker().adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, "read_committed");

            // no restart: one sink error fails the test, never hides in a restart
            StreamExecutionEnvironment env = JobRuns.environment(o, 2, 0, null);
            Pipeline.build(env, o, JobConnectors.kafkaSource(o), JobRuns.kafkaOutputs(o));
            long started = System.nanoTime();
            env.execute("dead-letter-size");

            RedisTruth.assertEquals(redis, input.truth);
            List<ConsumerRecord<byte[], byte[]>> all = KafkaOutputs.read(
                    KAFKA.broker().adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, dlqFrom, "read_committed");
            List<ConsumerRecord<byte[], byte[]>> small = new ArrayList<>();
            Map<String, Map<String, Object>> seen = new HashMap<>();
            for (ConsumerRecord<byte[], byte[]> r : all) {
                Map<String, Object> v = KafkaOutputs.parse(r.value());
                String source = (String) v.get("source");
                if (!giants.containsKey(source)) {
                    small.add(r);
                    continue;
                }
                assertThat(seen.put(source, v))
                        .as("dead letter twice: " + source)
                        .isNull();
                byte[] raw = giants.get(source);
                assertThat(r.value().length).isLessThanOrEqualTo(DeadLetterPayload.MAX_SERIALIZED_BYTES);
                assertThat(v)
                        .containsEntry("reason", raw == control ? "invalid_json" : "invalid_utf8")
                        .containsEntry("payload_encoding", "base64")
                        .containsEntry("payload_truncated", true)
                        .containsEntry("size", (long) raw.length);
                assertThat(Base64.getDecoder().decode((String) v.get("payload")))
                        .isEqualTo(Arrays.copyOf(raw, DeadLetterPayload.MAX_PAYLOAD_BYTES));
                assertThat(KafkaOutputs.text(r.key())).isEqualTo(raw == control ? "poison-control" : "poison-utf8");
            }
            assertThat(seen.keySet())
                    .as("one dead letter per giant record")
                    .containsExactlyInAnyOrderElementsOf(giants.keySet());
            KafkaPipelineIT.assertDeadLettersExact(small, input.deadLetters);
            System.out.printf(
                    "DeadLetterSizeIT: %d records, %d counted, %d dead letters (2 giants), job finished in %.1f s%n",
                    RECORDS, input.truth.counted, all.size(), (System.nanoTime() - started) / 1e9);
        }
    }
}
