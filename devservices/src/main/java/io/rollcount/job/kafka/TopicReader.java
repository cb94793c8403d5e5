package io.rollcount.job.kafka;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Reads a topic back, as a consumer of the given isolation level would, from given offsets up to its current end:
 * in tests, and in {@code chaos}'s final checks. A topic without partitions reads as empty.
 */
public final class TopicReader {
    private TopicReader() {}

    /** The current end offsets of every partition of a topic for a reader of that isolation level (read_committed: last stable offsets). */
    public static Map<TopicPartition, Long> endOffsets(Properties client, String topic, String isolation) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(client, isolation)) {
            return new HashMap<>(c.endOffsets(partitions(c, topic), Duration.ofSeconds(60)));
        }
    }

    /** Every record of {@code topic} from the given offsets (0 for a partition not in the map) up to the current end. */
    public static List<ConsumerRecord<byte[], byte[]>> read(
            Properties client, String topic, Map<TopicPartition, Long> from, String isolation) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(client, isolation)) {
            List<TopicPartition> parts = partitions(c, topic);
            c.assign(parts);
            for (TopicPartition tp : parts) c.seek(tp, from.getOrDefault(tp, 0L));
            Map<TopicPartition, Long> end = c.endOffsets(parts, Duration.ofSeconds(60));
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline)
                    throw new IllegalStateException("reading " + topic + " did not reach " + end + " in 120 s");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) out.add(r);
            }
        }
        return out;
    }

    private static List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> c, String topic) {
        var infos = c.partitionsFor(topic, Duration.ofSeconds(60));
        if (infos == null) return new ArrayList<>();
        return infos.stream()
                .map(pi -> new TopicPartition(topic, pi.partition()))
                .collect(Collectors.toList());
    }

    private static KafkaConsumer<byte[], byte[]> consumer(Properties client, String isolation) {
        Properties p = new Properties();
        p.putAll(client);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }
}
