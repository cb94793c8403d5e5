package io.rollcount.job.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The in-process broker: start, stop and start again on the same port and folder, the data surviving. */
class KafkaBrokerIT {

    @TempDir(cleanup = org.junit.jupiter.api.io.CleanupMode.ON_SUCCESS)
    Path dir;

    @Test
    void restartsOnTheSamePortAndFolderWithItsDataAndTransactions() throws Exception {
        KafkaBroker broker = new KafkaBroker(0, dir.resolve("kafka"));
        try {
            broker.start();
            int port = broker.port();
            assertThat(port).isPositive();
            assertThat(broker.bootstrap()).isEqualTo("127.0.0.1:" + port);
            broker.createTopics(2, "t");
            produce(broker, "t", "a", false);

            // The job's transaction timeout must be accepted by a broker with default settings.
            try (Admin admin = Admin.create(broker.adminProperties())) {
                ConfigResource node = new ConfigResource(ConfigResource.Type.BROKER, "1");
                ConfigEntry max = admin.describeConfigs(List.of(node))
                        .all()
                        .get()
                        .get(node)
                        .get("transaction.max.timeout.ms");
                assertThat(max.value()).isEqualTo("900000");
                assertThat(max.source()).isEqualTo(ConfigEntry.ConfigSource.DEFAULT_CONFIG);
            }

            broker.stop();
            assertThat(broker.isRunning()).isFalse();
            broker.start();
            assertThat(broker.port()).isEqualTo(port);
            produce(broker, "t", "b", true);
            assertThat(readCommitted(broker, "t", 20)).containsExactlyInAnyOrderElementsOf(expected("a", "b"));
        } finally {
            broker.close();
        }

        // A second broker object on the same port and folder (what `./rollcount kafka --dir D` does again).
        int port = broker.port();
        try (KafkaBroker again = new KafkaBroker(port, dir.resolve("kafka")).start()) {
            assertThat(again.bootstrap()).isEqualTo("127.0.0.1:" + port);
            assertThat(readCommitted(again, "t", 20)).containsExactlyInAnyOrderElementsOf(expected("a", "b"));
        }
    }

    private static List<String> expected(String... prefixes) {
        List<String> out = new ArrayList<>();
        for (String p : prefixes) for (int i = 0; i < 10; i++) out.add(p + i);
        return out;
    }

    /** Ten records {@code prefix0..prefix9}, in a transaction when asked. */
    static void produce(KafkaBroker broker, String topic, String prefix, boolean transactional) {
        Properties p = broker.adminProperties();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        if (transactional) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "broker-test-" + prefix);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            if (transactional) {
                producer.initTransactions();
                producer.beginTransaction();
            }
            for (int i = 0; i < 10; i++) producer.send(new ProducerRecord<>(topic, "k" + i, prefix + i));
            if (transactional) producer.commitTransaction();
            producer.flush();
        }
    }

    static List<String> readCommitted(KafkaBroker broker, String topic, int expected) {
        Properties p = broker.adminProperties();
        p.put(ConsumerConfig.GROUP_ID_CONFIG, "broker-test-" + System.nanoTime());
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            while (values.size() < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) values.add(r.value());
            }
            // Anything beyond the expected count would be a duplicate: poll a little longer to see it.
            for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) values.add(r.value());
        }
        return values;
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
