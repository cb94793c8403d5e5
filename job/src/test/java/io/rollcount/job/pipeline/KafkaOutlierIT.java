package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 2 from Kafka: on a single-partition topic, one event 9 minutes ahead of the rest (inside
 * {@code --max-future}, so it counts) among 150,000 must not move the partition's watermark: nothing is
 * late, every event counts exactly, the outlier in its own window, and no dead letter at all.
 */
class KafkaOutlierIT {
    private static final int RECORDS = 150_000;

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slots(2);

    @TempDir
    Path dir;

    /**
     * Every total and window sum equals the ground truth and no other counter key exists. (Not
     * {@link RedisTruth}: its expiry check expects every window to have ended within the last 10 minutes,
     * and here one window is 5 minutes ahead of the wall clock.)
     */
    private static void assertSumsEqualTruth(RedisTestSupport redis, GroundTruth truth) {
        Map<String, Long> expected = truth.redisKeys(redis.prefix);
        Map<String, Long> actual = new java.util.HashMap<>();
        for (String key : redis.keys()) {
            if (key.startsWith(redis.prefix + ":{") && !key.contains("}:_") && !key.contains("}:u:")) {
                actual.put(key, Long.parseLong(redis.jedis.get(key)));
            }
        }
        java.util.List<String> wrong = new java.util.ArrayList<>();
        expected.forEach((k, v) -> {
            if (!v.equals(actual.get(k))) wrong.add(k + ": expected " + v + " got " + actual.get(k));
        });
        actual.keySet().stream().filter(k -> !expected.containsKey(k)).forEach(k -> wrong.add(k + ": unexpected"));
        assertThat(wrong.size())
                .as("wrong or unexpected keys (of " + expected.size() + "), e.g. "
                        + wrong.stream().limit(10).toList())
                .isZero();
        assertThat(redis.jedis.get(redis.prefix + ":meta:watermark")).isEqualTo(Long.toString(Long.MAX_VALUE));
    }

    @Test
    void oneEventNineMinutesAheadMakesNothingLate() throws Exception {
        String id = UUID.randomUUID().toString().substring(0, 8);
        try (KafkaBroker broker = new KafkaBroker(0, dir.resolve("kafka")).start();
                RedisTestSupport redis = new RedisTestSupport()) {
            String topic = "outlier-" + id;
            broker.createTopics(1, topic);
            for (String t : KafkaIO.OUTPUT_TOPICS) broker.createTopics(1, t);
            assertThat(KafkaOutputs.endOffsets(broker.adminProperties(), topic, "read_committed"))
                    .hasSize(1);

            // 150 s of event time ending a minute before now; the outlier 9 minutes after its neighbours
            // (about 5.5 minutes ahead of the wall clock: inside the default --max-future of 10 minutes).
            long start = KafkaInput.startFor(RECORDS, 60_000);
            EventGenerator gen =
                    new EventGenerator(5, EventGenerator.Workload.zipf, 3_000, 500, start, 1_000, 3_000, 0.0);
            GroundTruth truth = new GroundTruth();
            try (KafkaProducer<byte[], byte[]> p = KafkaInput.producer(broker.adminProperties())) {
                for (int i = 0; i < RECORDS; i++) {
                    Generated g;
                    if (i == 2_000) {
                        long ts = gen.eventTime() + 9 * 60_000L;
                        String line = "{\"counter\":\"post:ahead:likes\",\"ts\":" + ts + "}";
                        g = new Generated(line, "post:ahead:likes", 1, ts, null, null, false);
                    } else {
                        g = gen.next();
                    }
                    truth.add(g);
                    p.send(new ProducerRecord<>(
                            topic,
                            g.counter().getBytes(StandardCharsets.UTF_8),
                            g.line().getBytes(StandardCharsets.UTF_8)));
                }
                p.flush();
            }
            Map<TopicPartition, Long> dlqFrom =
                    KafkaOutputs.endOffsets(broker.adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, "read_committed");

            JobSettings o = JobRuns.kafkaSettings(
                    broker.bootstrap(),
                    topic,
                    "outlier-" + id,
                    true,
                    redis.url(),
                    redis.prefix,
                    Duration.ofMillis(500));
            StreamExecutionEnvironment env = JobRuns.environment(o, 2, 2, null);
            JobConnectors.ensureOutputTopics(o);
            Pipeline.build(
                    env,
                    o,
                    JobConnectors.kafkaSource(o),
                    new Pipeline.Outputs(JobConnectors.redisSink(o), JobConnectors.deadLetterSink(o), 0, null));
            long started = System.nanoTime();
            env.execute("kafka-outlier-it");
            System.out.printf("KafkaOutlierIT: %,d records in %.1f s%n", RECORDS, (System.nanoTime() - started) / 1e9);

            List<ConsumerRecord<byte[], byte[]>> dead =
                    KafkaOutputs.read(broker.adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, dlqFrom, "read_committed");
            assertThat(dead.stream()
                            .map(r -> new String(r.value(), StandardCharsets.UTF_8))
                            .toList())
                    .as("dead letters (a late one is what the outlier used to cause)")
                    .isEmpty();
            assertSumsEqualTruth(redis, truth);
            assertThat(redis.jedis.get(redis.prefix + ":{post:ahead:likes}:total"))
                    .isEqualTo("1");
        }
    }
}
