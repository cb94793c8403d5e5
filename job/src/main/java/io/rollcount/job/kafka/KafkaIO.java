package io.rollcount.job.kafka;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import io.rollcount.job.model.Rollup;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.KafkaSourceBuilder;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.util.function.SerializableFunction;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * The job's Kafka source and its exactly-once Kafka sinks (contract sections 1 and 4).
 *
 * Each factory takes the values it needs, not the job's options: {@code RollcountJob} maps the options to them
 * (its {@code kafkaSource}, {@code rollupsSink}, {@code deadLetterSink}, {@code trendingSink}).
 * <ul>
 *   <li>{@link #source}: the topic ({@code --kafka.topic}), group ({@code --kafka.group-id}), starting offsets
 *       ({@code --kafka.starting-offsets}), bounded or not ({@code --bounded}); offsets live in Flink's checkpoints (and are committed to the group on each
 *       checkpoint, for lag monitoring only); every record becomes one {@link Event} through
 *       {@link EventDeserializer}.</li>
 *   <li>{@link #rollups}, {@link #deadLetters}, {@link #trending}: {@link DeliveryGuarantee#EXACTLY_ONCE}
 *       (Kafka transactions committed on Flink checkpoints; consumers read with
 *       {@code isolation.level=read_committed}); transactional ids {@code <--kafka.transactional-id-prefix>-rollups},
 *       {@code -dlq}, {@code -trending}; {@code transaction.timeout.ms} from {@code --kafka.transaction-timeout}.</li>
 * </ul>
 * Every client gets the settings of {@code --kafka.properties} ({@link KafkaClients#properties}): the
 * {@code clients} argument of the source and of {@link #ensureOutputTopics}; the sinks take
 * {@link #producerProperties} of them.
 * {@link #ensureOutputTopics}, called once before the graph is built, checks that the brokers answer and creates
 * the output topics that are missing, so a wrong {@code --kafka.bootstrap} fails the job's start with a message
 * rather than hanging it; the sink factories make no admin call of their own.
 *
 * <p>The output records carry no Flink timestamp but the producer's wall clock: a backfill's rollups have
 * event times of long ago, and Kafka's time-based retention would delete them at once.
 */
public final class KafkaIO {
    public static final String ROLLUPS_TOPIC = "counter-rollups";
    public static final String TRENDING_TOPIC = "counter-trending";
    public static final String DEAD_LETTER_TOPIC = "counter-events-dlq";
    /** The topics the job writes by default, created at start when missing. */
    public static final List<String> OUTPUT_TOPICS = List.of(ROLLUPS_TOPIC, TRENDING_TOPIC, DEAD_LETTER_TOPIC);
    /**
     * The record header of {@code counter-rollups} and {@code counter-trending} that names the Redis key prefix the
     * record was counted for (UTF-8), as the value's {@code prefix} field does: readers filter on it without parsing.
     */
    public static final String PREFIX_HEADER = "rollcount-prefix";

    private KafkaIO() {}

    // ---------------------------------------------------------------- source

    /**
     * The input of the job: every record of {@code topic} as an {@link Event} (valid or dead letter; events more
     * than {@code maxFuture} ahead of the wall clock are dead letters), read with the client settings
     * {@code clients} as group {@code groupId} from {@code startingOffsets}; {@code bounded}: up to the end
     * offsets found at start.
     */
    public static KafkaSource<Event> source(
            Properties clients,
            String topic,
            String groupId,
            OffsetsInitializer startingOffsets,
            Duration maxFuture,
            boolean bounded) {
        KafkaSourceBuilder<Event> b = KafkaSource.<Event>builder()
                .setProperties(clients)
                .setTopics(topic)
                .setGroupId(groupId)
                .setStartingOffsets(startingOffsets)
                .setDeserializer(new EventDeserializer(maxFuture.toMillis()))
                // Offsets are restored from Flink's checkpoints; the group's committed offsets are for
                // monitoring (consumer lag) and for --kafka.starting-offsets committed on a fresh start.
                .setProperty("commit.offsets.on.checkpoint", "true")
                .setProperty(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        if (bounded) b.setBounded(OffsetsInitializer.latest());
        return b.build();
    }

    // ---------------------------------------------------------------- sinks

    /**
     * Rollups to {@code topic} ({@code counter-rollups} by default): key = counter id, value = {@link Json#rollup}
     * with {@code keyPrefix}, header {@value #PREFIX_HEADER} = {@code keyPrefix}; transactional ids
     * {@code <transactionalIdPrefix>-rollups}.
     */
    public static KafkaSink<Rollup> rollups(
            Properties producer, String transactionalIdPrefix, String topic, String keyPrefix) {
        return exactlyOnce(
                producer,
                transactionalIdPrefix,
                "rollups",
                new Serializer<>(topic, r -> utf8(r.counter), r -> Json.rollup(keyPrefix, r), keyPrefix));
    }

    /**
     * Dead letters to {@code topic} ({@code counter-events-dlq} by default): key = the input record's key (may be
     * null), value = {@link Json#deadLetter}; every record fits the producer's and the topic's size limits
     * ({@link DeadLetterRecords}); transactional ids {@code <transactionalIdPrefix>-dlq}.
     */
    public static KafkaSink<Event> deadLetters(Properties producer, String transactionalIdPrefix, String topic) {
        return exactlyOnce(producer, transactionalIdPrefix, "dlq", DeadLetterRecords.forTopic(producer, topic));
    }

    /**
     * Lists to {@code topic} ({@code counter-trending} by default): key = the namespace, value = the bytes
     * {@code value} makes, header {@value #PREFIX_HEADER} = {@code keyPrefix}; transactional ids
     * {@code <transactionalIdPrefix>-trending}.
     */
    public static <T> KafkaSink<T> trending(
            Properties producer,
            String transactionalIdPrefix,
            String topic,
            String keyPrefix,
            SerializableFunction<T, String> namespace,
            SerializableFunction<T, byte[]> value) {
        return exactlyOnce(
                producer,
                transactionalIdPrefix,
                "trending",
                new Serializer<>(topic, t -> utf8(namespace.apply(t)), value, keyPrefix));
    }

    /**
     * An exactly-once sink to {@code topic} (which must exist: {@link #ensureOutputTopics}) with transactional ids
     * {@code <transactionalIdPrefix>-<idSuffix>}: every sink of one job needs its own suffix, and every job on one
     * Kafka cluster its own prefix.
     */
    public static <T> KafkaSink<T> exactlyOnce(
            Properties producer,
            String transactionalIdPrefix,
            String topic,
            String idSuffix,
            SerializableFunction<T, byte[]> key,
            SerializableFunction<T, byte[]> value) {
        return exactlyOnce(producer, transactionalIdPrefix, idSuffix, new Serializer<>(topic, key, value, null));
    }

    /** An exactly-once sink with the given records. */
    static <T> KafkaSink<T> exactlyOnce(
            Properties producer,
            String transactionalIdPrefix,
            String idSuffix,
            KafkaRecordSerializationSchema<T> records) {
        return KafkaSink.<T>builder()
                .setKafkaProducerConfig(producer)
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(transactionalIdPrefix(transactionalIdPrefix, idSuffix))
                .setRecordSerializer(records)
                .build();
    }

    /**
     * Batching of the sinks' producers, under the client settings (which override them): the sinks are
     * exactly-once, so a record is visible to a {@code read_committed} consumer only when the checkpoint that
     * covers it commits its transaction (every {@code --checkpoint.interval}, 10 s by default); waiting up to
     * 100 ms to fill batches of up to 256 KiB, compressed with LZ4, delays nothing such a consumer sees, and
     * sends the broker fewer, larger batches than the client's defaults (5 ms, 16 KiB, uncompressed).
     */
    static final Map<String, String> PRODUCER_BATCHING = Map.of(
            ProducerConfig.LINGER_MS_CONFIG, "100",
            ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(256 << 10),
            ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");

    /** What {@link #producerProperties} adds to the client settings: producer settings that no other client takes. */
    static final Set<String> PRODUCER_ONLY = Set.of(
            ProducerConfig.LINGER_MS_CONFIG,
            ProducerConfig.BATCH_SIZE_CONFIG,
            ProducerConfig.COMPRESSION_TYPE_CONFIG,
            ProducerConfig.TRANSACTION_TIMEOUT_CONFIG);

    /**
     * The producer settings of the sinks: {@link #PRODUCER_BATCHING}, then the client settings {@code clients}
     * ({@code --kafka.properties} and the bootstrap) over it, and the transaction timeout
     * ({@code --kafka.transaction-timeout}).
     */
    public static Properties producerProperties(Properties clients, Duration transactionTimeout) {
        Properties p = new Properties();
        p.putAll(PRODUCER_BATCHING);
        p.putAll(clients);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, String.valueOf(transactionTimeout.toMillis()));
        return p;
    }

    /** {@code <prefix>-<suffix>}, the prefix {@code rollcount} when none is given. */
    public static String transactionalIdPrefix(String prefix, String suffix) {
        String p = prefix == null || prefix.isBlank() ? "rollcount" : prefix.trim();
        return p + "-" + suffix;
    }

    /**
     * Checks the brokers of {@code clients} and creates the output {@code topics} that are missing: once per job,
     * before its graph is built ({@code JobConnectors.assemble}); the sink factories above expect their topic to
     * exist and make no admin call.
     */
    public static void ensureOutputTopics(Properties clients, String... topics) {
        KafkaClients.ensureTopics(clients, KafkaClients.DEFAULT_CHECK_TIMEOUT, topics);
    }

    private static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    /**
     * One record per element: key and value from the given functions, no partition (Kafka's hash of the key), no
     * timestamp, and the header {@value #PREFIX_HEADER} where a key prefix is given.
     */
    static final class Serializer<T> implements KafkaRecordSerializationSchema<T> {
        private static final long serialVersionUID = 1L;
        private final String topic;
        private final SerializableFunction<T, byte[]> key;
        private final SerializableFunction<T, byte[]> value;
        /** The value of the {@value #PREFIX_HEADER} header; null: no header. */
        private final byte[] keyPrefix;

        Serializer(
                String topic,
                SerializableFunction<T, byte[]> key,
                SerializableFunction<T, byte[]> value,
                String keyPrefix) {
            this.topic = topic;
            this.key = key;
            this.value = value;
            this.keyPrefix = utf8(keyPrefix);
        }

        @Override
        public ProducerRecord<byte[], byte[]> serialize(T element, KafkaSinkContext context, Long timestamp) {
            ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, key.apply(element), value.apply(element));
            if (keyPrefix != null) r.headers().add(PREFIX_HEADER, keyPrefix);
            return r;
        }
    }
}
