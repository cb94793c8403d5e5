package io.rollcount.job.kafka;

import io.rollcount.job.model.DeadLetterPayload;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The records of {@code counter-events-dlq}: key = the input's key (at most 1 KiB), value =
 * {@link Json#deadLetter}, and every record small enough for both the producer ({@code max.request.size})
 * and the topic ({@code max.message.bytes}). A record either refuses fails the transaction, and the
 * restarted job meets the same input again: a crash loop on one bad record.
 *
 * <p>A dead letter is at most {@link DeadLetterPayload#MAX_SERIALIZED_BYTES} (about 141 KiB), far under the
 * defaults (1 MiB). Where {@code --kafka.properties} or the topic set a smaller limit, the payload is cut
 * further, halving until the record fits; a limit too small for a dead letter without payload
 * ({@link #MIN_LIMIT}) is refused when the job starts, with a message naming the setting.
 */
public final class DeadLetterRecords implements KafkaRecordSerializationSchema<Event> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(DeadLetterRecords.class);

    /** Kafka's defaults: the producer's {@code max.request.size} and a broker's {@code message.max.bytes}. */
    public static final int DEFAULT_MAX_REQUEST_SIZE = 1_048_576;

    public static final int DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;
    /**
     * Bytes of a record besides its key and value: a batch header (61 bytes), the record's own header
     * (at most 21) and room for headers an interceptor may add.
     */
    static final int RECORD_OVERHEAD = 1024;
    /** The least limit accepted: a dead letter with every field at its cap and no payload, its key, the overhead. */
    public static final int MIN_LIMIT = DeadLetterPayload.MAX_SERIALIZED_BYTES
            - 2 * DeadLetterPayload.MAX_PAYLOAD_BYTES
            + DeadLetterPayload.MAX_KEY_BYTES
            + RECORD_OVERHEAD;

    private final String topic;
    private final int limit;

    /** @param limit the most bytes one record may have: the smaller of the producer's and the topic's limits */
    public DeadLetterRecords(String topic, int limit) {
        if (limit < MIN_LIMIT) {
            throw new IllegalArgumentException(
                    "a dead letter needs records of at least " + MIN_LIMIT + " bytes, " + topic + " takes " + limit);
        }
        this.topic = topic;
        this.limit = limit;
    }

    /**
     * The limits of the job's producer ({@code producer}: {@code --kafka.properties}) and of the topic as the
     * brokers report it (asked with the same settings).
     */
    public static DeadLetterRecords forTopic(Properties producer, String topic) {
        int request = intSetting(
                producer.getProperty(ProducerConfig.MAX_REQUEST_SIZE_CONFIG),
                DEFAULT_MAX_REQUEST_SIZE,
                "max.request.size of --kafka.properties");
        int message = topicMaxMessageBytes(producer, topic);
        int limit = Math.min(request, message);
        if (limit < MIN_LIMIT) {
            throw new IllegalArgumentException((request <= message
                            ? "max.request.size " + request + " of --kafka.properties"
                            : "max.message.bytes " + message + " of topic " + topic)
                    + " leaves no room for a dead letter: at least "
                    + MIN_LIMIT + " bytes are needed");
        }
        return new DeadLetterRecords(topic, limit);
    }

    public int limit() {
        return limit;
    }

    @Override
    public ProducerRecord<byte[], byte[]> serialize(Event e, KafkaSinkContext context, Long timestamp) {
        byte[] key = DeadLetterPayload.key(e.key);
        return new ProducerRecord<>(topic, key, value(e, limit - RECORD_OVERHEAD - (key == null ? 0 : key.length)));
    }

    /** The dead letter of {@code e} in at most {@code budget} bytes: its payload cut further while it does not fit. */
    public static byte[] value(Event e, int budget) {
        int max = DeadLetterPayload.MAX_PAYLOAD_BYTES;
        byte[] v = Json.deadLetter(e, max);
        while (v.length > budget && max > 0) {
            max = max < 256 ? 0 : max / 2;
            v = Json.deadLetter(e, max);
        }
        return v;
    }

    private static int intSetting(String value, int fallback, String name) {
        if (value == null || value.isBlank()) return fallback;
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException ex) {
            throw new IllegalArgumentException(name + " is not a number: " + value);
        }
    }

    /** The sinks' producer settings less what {@link KafkaIO#producerProperties} adds, which an admin client does not take. */
    static Properties adminProperties(Properties producer) {
        Properties p = new Properties();
        p.putAll(producer);
        KafkaIO.PRODUCER_ONLY.forEach(p::remove);
        return p;
    }

    /** The topic's effective {@code max.message.bytes}; the broker default when it cannot be read (no DescribeConfigs right). */
    private static int topicMaxMessageBytes(Properties producer, String topic) {
        Properties p = adminProperties(producer);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.putIfAbsent(AdminClientConfig.CLIENT_ID_CONFIG, "rollcount-admin");
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = Admin.create(p)) {
            Map<ConfigResource, Config> configs =
                    admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS);
            ConfigEntry entry = configs.get(resource).get(TopicConfig.MAX_MESSAGE_BYTES_CONFIG);
            if (entry != null && entry.value() != null)
                return intSetting(entry.value(), DEFAULT_MAX_MESSAGE_BYTES, "max.message.bytes");
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        } catch (Exception ex) {
            LOG.warn(
                    "Cannot read max.message.bytes of topic {} ({}); assuming the broker default {} bytes",
                    topic,
                    ex.toString(),
                    DEFAULT_MAX_MESSAGE_BYTES);
        }
        return DEFAULT_MAX_MESSAGE_BYTES;
    }
}
