package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.kafka.KafkaBroker;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 10: {@code ./rollcount produce} reports the records Kafka acknowledged, not the lines it
 * handed to the producer. A line over the producer's default {@code max.request.size} (1 MiB) is refused;
 * the report says so and the command exits 1, and the count matches what the topic holds.
 */
class ProduceCommandIT {
    @TempDir
    Path dir;

    @Test
    void reportsOnlyAcknowledgedRecordsAndTheFailures() throws Exception {
        try (KafkaBroker broker = new KafkaBroker(0, dir.resolve("kafka")).start()) {
            String topic = "produce-test";
            broker.createTopics(1, topic);
            String good = "{\"counter\":\"p:a\"}\n";
            String huge = "{\"counter\":\"p:huge\",\"pad\":\"" + "x".repeat(1_200_000) + "\"}\n";
            Path file = dir.resolve("events.jsonl");
            Files.writeString(file, good.repeat(3) + huge + good.repeat(2), StandardCharsets.UTF_8);

            ProduceCommand cmd = new ProduceCommand();
            cmd.input = file;
            cmd.bootstrap = broker.bootstrap();
            cmd.topic = topic;
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            int exit = cmd.produce(
                    new PrintStream(out, true, StandardCharsets.UTF_8),
                    new PrintStream(err, true, StandardCharsets.UTF_8));

            assertThat(exit).isEqualTo(1);
            assertThat(out.toString(StandardCharsets.UTF_8))
                    .startsWith("rollcount: sent 5 records to produce-test in ");
            assertThat(err.toString(StandardCharsets.UTF_8))
                    .startsWith(
                            "rollcount: 1 of 6 lines were not accepted by Kafka (first error: RecordTooLargeException: ");
            assertThat(records(broker, topic)).as("records on the topic").isEqualTo(5);

            // Every line accepted: exit 0, the same count.
            Files.writeString(file, good.repeat(4), StandardCharsets.UTF_8);
            out.reset();
            assertThat(cmd.produce(
                            new PrintStream(out, true, StandardCharsets.UTF_8),
                            new PrintStream(err, true, StandardCharsets.UTF_8)))
                    .isZero();
            assertThat(out.toString(StandardCharsets.UTF_8)).startsWith("rollcount: sent 4 records");
            assertThat(records(broker, topic)).isEqualTo(9);
        }
    }

    private static long records(KafkaBroker broker, String topic) {
        Properties p = new Properties();
        p.putAll(broker.adminProperties());
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            return c.endOffsets(List.of(tp), Duration.ofSeconds(30)).get(tp);
        }
    }
}
