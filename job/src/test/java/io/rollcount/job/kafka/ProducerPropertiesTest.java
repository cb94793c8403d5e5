package io.rollcount.job.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Properties;
import org.junit.jupiter.api.Test;

/** The sinks' producer settings, and the admin client that reads the dead-letter topic's limit from the same ones. */
class ProducerPropertiesTest {

    @Test
    void theAdminClientGetsTheClientSettingsButNoneOfTheProducerOnlyOnes() {
        Properties clients = new Properties();
        clients.put("bootstrap.servers", "broker:9092");
        clients.put("security.protocol", "SASL_SSL");
        clients.put("max.request.size", "2000000");
        Properties producer = KafkaIO.producerProperties(clients, Duration.ofMinutes(10));
        assertThat(producer)
                .containsEntry("linger.ms", "100")
                .containsEntry("batch.size", "262144")
                .containsEntry("compression.type", "lz4")
                .containsEntry("transaction.timeout.ms", "600000");

        Properties admin = DeadLetterRecords.adminProperties(producer);
        assertThat(admin)
                .doesNotContainKeys("linger.ms", "batch.size", "compression.type", "transaction.timeout.ms")
                .containsEntry("bootstrap.servers", "broker:9092")
                .containsEntry("security.protocol", "SASL_SSL");
        assertThat(producer)
                .as("the producer's own settings are left as they were")
                .containsKey("linger.ms");
    }
}
