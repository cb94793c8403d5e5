package io.rollcount.job.kafka;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

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
            return new KV(k == null ? null : new String(k, StandardCharsets.UTF_8), v == null ? null : new String(v, StandardCharsets.UTF_8));
        }
    }

    /** The current end offsets of every partition of a topic (read_committed: the last stable offsets). */
    static Map<TopicPartition, Long> endOffsets(Properties client, String topic) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(client)) {
            List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(pi -> new TopicPartition(topic, pi.partition())).collect(Collectors.toList());
            return new HashMap<>(c.endOffsets(parts, Duration.ofSeconds(30)));
        }
    }

    /**
     * Every record committed to {@code topic} after the given offsets (a partition not in the map: from its
     * start), read with {@code isolation.level=read_committed} up to the current last stable offsets.
     */
    static List<ConsumerRecord<byte[], byte[]>> readCommitted(Properties client, String topic, Map<TopicPartition, Long> from) {
        return read(client, topic, from, "read_committed");
    }

    static List<ConsumerRecord<byte[], byte[]>> read(Properties client, String topic, Map<TopicPartition, Long> from, String isolation) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        Properties p = new Properties();
        p.putAll(client);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        try (KafkaConsumer<byte[], byte[]> c = consumer(p)) {
            List<TopicPartition> parts = c.partitionsFor(topic, Duration.ofSeconds(30)).stream()
                    .map(pi -> new TopicPartition(topic, pi.partition())).collect(Collectors.toList());
            c.assign(parts);
            for (TopicPartition tp : parts) c.seek(tp, from.getOrDefault(tp, 0L));
            Map<TopicPartition, Long> end = c.endOffsets(parts, Duration.ofSeconds(30));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) throw new AssertionError("reading " + topic + " did not reach " + end + " in 60 s");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) out.add(r);
            }
        }
        return out;
    }

    static List<KV> kvs(List<ConsumerRecord<byte[], byte[]>> records) {
        return records.stream().map(r -> KV.of(r.key(), r.value())).collect(Collectors.toList());
    }

    private static KafkaConsumer<byte[], byte[]> consumer(Properties client) {
        Properties p = new Properties();
        p.putAll(client);
        p.putIfAbsent(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }
}
