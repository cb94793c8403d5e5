package io.rollcount.job.pipeline;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Collectors;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/** Reading the job's output topics back, from given offsets on, as a consumer would. */
final class KafkaOutputs {
    private static final JsonFactory JSON = new JsonFactory();

    private KafkaOutputs() {}

    /** The current end offsets of a topic for a reader of that isolation level (read_committed: last stable offsets). */
    static Map<TopicPartition, Long> endOffsets(Properties client, String topic, String isolation) {
        try (KafkaConsumer<byte[], byte[]> c = consumer(client, isolation)) {
            return new HashMap<>(c.endOffsets(partitions(c, topic), Duration.ofSeconds(60)));
        }
    }

    /** Every record of {@code topic} from the given offsets (0 for a partition not in the map) up to the current end. */
    static List<ConsumerRecord<byte[], byte[]>> read(Properties client, String topic, Map<TopicPartition, Long> from, String isolation) {
        List<ConsumerRecord<byte[], byte[]>> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = consumer(client, isolation)) {
            List<TopicPartition> parts = partitions(c, topic);
            c.assign(parts);
            for (TopicPartition tp : parts) c.seek(tp, from.getOrDefault(tp, 0L));
            Map<TopicPartition, Long> end = c.endOffsets(parts, Duration.ofSeconds(60));
            long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (parts.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) throw new AssertionError("reading " + topic + " did not reach " + end + " in 120 s");
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) out.add(r);
            }
        }
        return out;
    }

    private static List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> c, String topic) {
        return c.partitionsFor(topic, Duration.ofSeconds(60)).stream()
                .map(pi -> new TopicPartition(topic, pi.partition())).collect(Collectors.toList());
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

    /** The fields of a flat JSON object: strings, longs, booleans and nulls (a nested value fails). */
    static Map<String, Object> parse(byte[] value) {
        Map<String, Object> m = new LinkedHashMap<>();
        try (JsonParser p = JSON.createParser(value)) {
            if (p.nextToken() != JsonToken.START_OBJECT) throw new AssertionError("not a JSON object: " + text(value));
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = p.nextToken();
                Object v = switch (t) {
                    case VALUE_STRING -> p.getText();
                    case VALUE_NUMBER_INT -> p.getLongValue();
                    case VALUE_NULL -> null;
                    case VALUE_TRUE -> Boolean.TRUE;
                    case VALUE_FALSE -> Boolean.FALSE;
                    default -> throw new AssertionError("unexpected " + t + " in " + text(value));
                };
                if (m.containsKey(name)) throw new AssertionError("field " + name + " twice in " + text(value));
                m.put(name, v);
            }
            if (p.nextToken() != null) throw new AssertionError("trailing data in " + text(value));
        } catch (IOException e) {
            throw new UncheckedIOException("not JSON: " + text(value), e);
        }
        return m;
    }

    static String text(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }
}
