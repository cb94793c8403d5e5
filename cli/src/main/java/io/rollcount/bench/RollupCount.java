package io.rollcount.bench;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** The records a {@code read_committed} consumer finds on a topic now, counted from its beginning to its end. */
final class RollupCount {
    private RollupCount() {}

    static long committed(Properties clients, String topic, Duration timeout) {
        Properties p = new Properties();
        p.putAll(clients);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50000");
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, String.valueOf(64 << 20));
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, String.valueOf(16 << 20));
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            var infos = c.partitionsFor(topic, Duration.ofSeconds(60));
            if (infos == null) return 0;
            List<TopicPartition> parts = infos.stream()
                    .map(i -> new TopicPartition(topic, i.partition()))
                    .toList();
            c.assign(parts);
            c.seekToBeginning(parts);
            Map<TopicPartition, Long> end = c.endOffsets(parts, Duration.ofSeconds(60));
            long deadline = System.nanoTime() + timeout.toNanos();
            long n = 0;
            while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline)
                    throw new IllegalStateException("counting " + topic + " took over " + timeout.toSeconds() + " s");
                n += c.poll(Duration.ofMillis(500)).count();
            }
            return n;
        }
    }
}
