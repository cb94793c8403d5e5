package io.rollcount.job.pipeline;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.rollcount.job.kafka.TopicReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/** Reading the job's output topics back, from given offsets on, as a consumer would. */
final class KafkaOutputs {
    private static final JsonFactory JSON = new JsonFactory();

    private KafkaOutputs() {}

    /** The current end offsets of a topic for a reader of that isolation level (read_committed: last stable offsets). */
    static Map<TopicPartition, Long> endOffsets(Properties client, String topic, String isolation) {
        return TopicReader.endOffsets(client, topic, isolation);
    }

    /**
     * Whether consumer group {@code group} has committed (the job's source does so on each completed checkpoint)
     * the end offset of every partition of {@code topic}.
     */
    static boolean committedToEnd(Properties client, String topic, String group) throws Exception {
        Map<TopicPartition, Long> end = endOffsets(client, topic, "read_committed");
        try (Admin admin = Admin.create(client)) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(30, TimeUnit.SECONDS);
            return end.entrySet().stream()
                    .allMatch(e -> committed.get(e.getKey()) != null
                            && committed.get(e.getKey()).offset() >= e.getValue());
        }
    }

    /** Every record of {@code topic} from the given offsets (0 for a partition not in the map) up to the current end. */
    static List<ConsumerRecord<byte[], byte[]>> read(
            Properties client, String topic, Map<TopicPartition, Long> from, String isolation) {
        return TopicReader.read(client, topic, from, isolation);
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
