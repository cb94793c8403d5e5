package io.rollcount.job.kafka;

import static io.rollcount.job.kafka.KafkaTestSupport.utf8;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.kafka.KafkaTestSupport.KV;
import io.rollcount.job.model.Event;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 7, item 3 (the Kafka half): a broker whose only client listener takes SASL_SSL with SCRAM-SHA-256,
 * a certificate made by the test with keytool, and the job's source, sinks and admin client configured by
 * nothing but {@code --kafka.bootstrap} and a {@code --kafka.properties} file.
 */
class KafkaSecurityIT {
    private static final String TOPIC = "secure-events";
    private static final String USER = "rollcount-job";
    private static final String PASSWORD = "s3cret-Pa55-" + Long.toHexString(System.nanoTime());
    private static final String STORE_PASSWORD = "store-pw-" + Long.toHexString(System.nanoTime());

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(KafkaTestSupport::miniCluster);

    @TempDir
    static Path dir;

    static KafkaBroker broker;
    static Path clientProperties;

    @BeforeAll
    static void startSecuredBroker() throws Exception {
        Path keyStore = dir.resolve("broker.p12");
        Path cert = dir.resolve("broker.crt");
        Path trustStore = dir.resolve("client-trust.p12");
        keytool(
                "-genkeypair",
                "-alias",
                "broker",
                "-keyalg",
                "RSA",
                "-keysize",
                "2048",
                "-validity",
                "2",
                "-dname",
                "CN=localhost",
                "-ext",
                "SAN=ip:127.0.0.1,dns:localhost",
                "-storetype",
                "PKCS12",
                "-keystore",
                keyStore.toString(),
                "-storepass",
                STORE_PASSWORD,
                "-keypass",
                STORE_PASSWORD);
        keytool(
                "-exportcert",
                "-rfc",
                "-alias",
                "broker",
                "-keystore",
                keyStore.toString(),
                "-storepass",
                STORE_PASSWORD,
                "-file",
                cert.toString());
        keytool(
                "-importcert",
                "-noprompt",
                "-alias",
                "broker",
                "-file",
                cert.toString(),
                "-storetype",
                "PKCS12",
                "-keystore",
                trustStore.toString(),
                "-storepass",
                STORE_PASSWORD);

        broker = KafkaBroker.builder()
                .port(0)
                .dir(dir.resolve("kafka"))
                .scram(true)
                .scramUser(USER, PASSWORD)
                .sslKeyStore(keyStore, STORE_PASSWORD)
                .build()
                .start();
        broker.createTopics(2, TOPIC);
        clientProperties = writeClientProperties("client.properties", PASSWORD, trustStore);

        // The test writes its input through the broker's internal listener; the job only sees the secured one.
        Properties p = broker.adminProperties();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < 6; i++)
                producer.send(new ProducerRecord<>(TOPIC, utf8("k" + i), utf8("bad" + i)))
                        .get();
        }
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) broker.close();
    }

    private static Path writeClientProperties(String name, String password, Path trustStore) throws IOException {
        Path file = dir.resolve(name);
        Properties p = new Properties();
        p.put("security.protocol", "SASL_SSL");
        p.put("sasl.mechanism", "SCRAM-SHA-256");
        p.put(
                "sasl.jaas.config",
                "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + USER + "\" password=\""
                        + password + "\";");
        p.put("ssl.truststore.location", trustStore.toString());
        p.put("ssl.truststore.type", "PKCS12");
        p.put("ssl.truststore.password", STORE_PASSWORD);
        try (var out = Files.newOutputStream(file)) {
            p.store(out, null);
        }
        return file;
    }

    private static void keytool(String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0)
            throw new IllegalStateException("keytool failed: " + out);
    }

    private static JobSettings options(Path properties) {
        return JobSettings.builder()
                .set("--kafka.bootstrap", broker.bootstrap())
                .set("--kafka.properties", properties.toString())
                .set("--kafka.topic", TOPIC)
                .set("--kafka.group-id", "secure")
                .set("--kafka.starting-offsets", JobSettings.StartingOffsets.earliest)
                .set("--kafka.transactional-id-prefix", "secure-test")
                .set("--bounded", true)
                .build();
    }

    @Test
    void theJobReadsAndWritesThroughSaslSslWithOnlyAPropertiesFile() throws Exception {
        assertThat(broker.clientProtocol().name).isEqualTo("SASL_SSL");
        JobSettings o = options(clientProperties);
        JobConnectors.ensureOutputTopics(o);
        Map<TopicPartition, Long> from = Map.of();

        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(2);
        env.enableCheckpointing(200);
        env.configure(KafkaTestSupport.boundedRestarts());
        env.fromSource(JobConnectors.kafkaSource(o), WatermarkStrategy.noWatermarks(), "kafka")
                .filter(Event::isDeadLetter)
                .sinkTo(JobConnectors.deadLetterSink(o))
                .name("dead letters");
        env.execute("secured kafka");

        List<KV> dlq = KafkaTestSupport.kvs(
                KafkaTestSupport.readCommitted(broker.adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, from));
        assertThat(dlq).extracting(KV::key).containsExactlyInAnyOrder("k0", "k1", "k2", "k3", "k4", "k5");
        for (KV kv : dlq) {
            String n = kv.key().substring(1);
            assertThat(kv.value()).contains("\"payload\":\"bad" + n + "\"").contains("\"source\":\"" + TOPIC + "/");
        }
    }

    @Test
    void aWrongPasswordFailsEarlyWithoutShowingIt() throws Exception {
        String wrong = "not-the-password-" + Long.toHexString(System.nanoTime());
        Path file = writeClientProperties("wrong.properties", wrong, dir.resolve("client-trust.p12"));
        assertThatThrownBy(() -> KafkaClients.ensureTopics(
                        JobConnectors.kafkaProperties(options(file)),
                        Duration.ofSeconds(10),
                        KafkaIO.DEAD_LETTER_TOPIC))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("--kafka.bootstrap " + broker.bootstrap())
                .satisfies(e -> {
                    assertThat(e.getMessage())
                            .doesNotContain(wrong)
                            .doesNotContain(PASSWORD)
                            .doesNotContain(STORE_PASSWORD);
                    assertThat(e.getMessage()).containsIgnoringCase("authentication");
                });
        // Without the properties file the secured listener is not reachable at all.
        JobSettings plain = options(clientProperties).toBuilder()
                .set("--kafka.properties", null)
                .build();
        assertThatThrownBy(() -> KafkaClients.ensureTopics(
                        JobConnectors.kafkaProperties(plain), Duration.ofSeconds(3), KafkaIO.DEAD_LETTER_TOPIC))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("--kafka.bootstrap");
    }
}
