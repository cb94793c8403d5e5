package io.rollcount.job.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.TopicPartition;

/** Reading and writing the in-process broker from tests. */
final class KafkaTestSupport {
    private KafkaTestSupport() {}

    /** A MiniCluster of one TaskManager with 2 slots. */
    static MiniClusterResourceConfiguration miniCluster() {
        return new MiniClusterResourceConfiguration.Builder()
                .setNumberTaskManagers(1)
                .setNumberSlotsPerTaskManager(2)
                .setConfiguration(boundedRestarts())
                .build();
    }

    /** With checkpointing on, a failing job restarts forever by default: tests allow a few restarts only. */
    static Configuration boundedRestarts() {
        Configuration c = new Configuration();
        c.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        c.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3);
        c.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(200));
        return c;
    }

    /** A key and value of one record, as text (null stays null; bytes that are not UTF-8 become replacement chars). */
    record KV(String key, String value) {
        static KV of(byte[] k, byte[] v) {
            return new KV(
                    k == null ? null : new String(k, StandardCharsets.UTF_8),
                    v == null ? null : new String(v, StandardCharsets.UTF_8));
        }
    }

    /** The current end offsets of every partition of a topic (read_committed: the last stable offsets). */
    static Map<TopicPartition, Long> endOffsets(Properties client, String topic) {
        return TopicReader.endOffsets(client, topic, "read_committed");
    }

    /**
     * Every record committed to {@code topic} after the given offsets (a partition not in the map: from its
     * start), read with {@code isolation.level=read_committed} up to the current last stable offsets.
     */
    static List<ConsumerRecord<byte[], byte[]>> readCommitted(
            Properties client, String topic, Map<TopicPartition, Long> from) {
        return TopicReader.read(client, topic, from, "read_committed");
    }

    static List<ConsumerRecord<byte[], byte[]>> read(
            Properties client, String topic, Map<TopicPartition, Long> from, String isolation) {
        return TopicReader.read(client, topic, from, isolation);
    }

    static List<KV> kvs(List<ConsumerRecord<byte[], byte[]>> records) {
        return records.stream().map(r -> KV.of(r.key(), r.value())).collect(Collectors.toList());
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }
}
