package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.redis.InvalidSettingException;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisSink;
import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The job's options mapped to the connectors' builders ({@code JobConnectors.redisEndpoint}, {@code redisSink},
 * the Kafka factories): what each option sets, a refused value named by its option, and that the connectors
 * themselves know nothing of the options. No server needed.
 */
class ConnectorOptionsTest {
    private static final String SECRET = "s3cr3t-Pw";

    /** The Redis settings of {@code --redis url}, with {@code --redis.password-file passwordFile} unless it is null. */
    private static RedisSettings redis(String url, String passwordFile) {
        return new RedisSettings(url, false, passwordFile, "rc");
    }

    private static RedisSettings redis(String url) {
        return redis(url, null);
    }

    private static RedisSettings cluster(String url) {
        return new RedisSettings(url, true, null, "rc");
    }

    @Test
    void theRedisOptionsSetTheEndpoint(@TempDir Path dir) throws IOException {
        RedisSettings o = redis("redis://writer@h:1");
        RedisEndpoint fromEnv = JobConnectors.redisEndpoint(o, Map.of(RedisEndpoint.PASSWORD_ENV, SECRET));
        assertThat(fromEnv.hasPassword()).isTrue();
        assertThat(fromEnv.redact(SECRET)).isEqualTo("***");
        assertThat(JobConnectors.redisEndpoint(o, Map.of()).hasPassword()).isFalse();

        Path file = dir.resolve("pw");
        Files.writeString(file, SECRET + "\n");
        RedisEndpoint fileWins = JobConnectors.redisEndpoint(
                redis("redis://writer@h:1", file.toString()), Map.of(RedisEndpoint.PASSWORD_ENV, "other"));
        assertThat(fileWins.redact(SECRET)).isEqualTo("***");
        assertThat(fileWins.redact("other")).isEqualTo("other");

        RedisEndpoint c = JobConnectors.redisEndpoint(cluster("redis://a:7000,b:7001"), Map.of());
        assertThat(c.cluster()).isTrue();
        assertThat(c.seeds()).containsExactly("a:7000", "b:7001");
    }

    @Test
    void aRefusedRedisSettingIsNamedByItsOption(@TempDir Path dir) throws IOException {
        assertThatThrownBy(() -> JobConnectors.redisEndpoint(redis("http://u:" + SECRET + "@h"), Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--redis: must start with redis:// or rediss:// (got 'http://')");
        assertThatThrownBy(() -> JobConnectors.redisEndpoint(redis("redis://u:" + SECRET + "@h:port"), Map.of()))
                .hasMessage("--redis: the port must be a number in redis://u:***@h:port");
        assertThatThrownBy(() -> JobConnectors.redisEndpoint(redis("redis://a:7000,b:7001"), Map.of()))
                .hasMessage("--redis: a list of nodes is the seed list of a Redis Cluster: add --redis.cluster (got "
                        + "redis://a:7000,b:7001)");
        assertThatThrownBy(() -> JobConnectors.redisEndpoint(cluster("redis://a:7000/2"), Map.of()))
                .hasMessage("--redis: a Redis Cluster has database 0 only: remove '/2' (--redis.cluster is set)");

        Path file = dir.resolve("pw");
        Files.writeString(file, SECRET + "\n");
        assertThatThrownBy(() -> JobConnectors.redisEndpoint(redis("redis://writer:x@h:1", file.toString()), Map.of()))
                .hasMessage(
                        "--redis.password-file: the --redis URL carries a password already; give it in one place only");
        assertThatThrownBy(() -> JobConnectors.redisEndpoint(
                        redis("redis://h:1", dir.resolve("missing").toString()), Map.of()))
                .hasMessage("--redis.password-file: cannot read " + dir.resolve("missing") + ": NoSuchFileException");
        assertThatThrownBy(() -> JobConnectors.redisEndpoint(
                        redis("rediss://h:1"),
                        Map.of(RedisEndpoint.CA_ENV, dir.resolve("no-ca.pem").toString())))
                .hasMessageStartingWith("$ROLLCOUNT_REDIS_CA: cannot read " + dir.resolve("no-ca.pem"));

        // settings refuse them as they are made; the sink's builder would name them by their options too
        assertThatThrownBy(() -> JobSettings.of("--input", "x", "--redis", "redis://h:1", "--redis.key-prefix", "a{b"))
                .hasMessage("--redis.key-prefix must be non-empty and free of '{' and '}'");
        assertThat(sinkRefusal(() -> RedisSink.builder().setKeyPrefix("a{b")))
                .isEqualTo("--redis.key-prefix: must be non-empty and free of '{' and '}', got 'a{b'");
        assertThatThrownBy(() -> JobSettings.of("--input", "x", "--redis.retry-timeout", "PT-1S"))
                .hasMessage("--redis.retry-timeout must be at least 0s, not -1s");
        assertThat(sinkRefusal(() -> RedisSink.builder().setRetryTimeout(Duration.ofSeconds(-1))))
                .isEqualTo("--redis.retry-timeout: must not be negative, got -1000 ms");
    }

    /** The message of the Redis sink builder's refusal, naming the setting by its option. */
    private static String sinkRefusal(Runnable set) {
        try {
            set.run();
            return null;
        } catch (InvalidSettingException e) {
            return e.messageNaming(JobConnectors.REDIS_SETTING_OPTIONS);
        }
    }

    @Test
    void theJobsRedisSinkOfTheOptions() {
        JobSettings o = JobSettings.builder()
                .set("--input", "x")
                .set("--redis", "rediss://writer:" + SECRET + "@h:6380/1")
                .set("--redis.key-prefix", "app")
                .set("--redis.retry-timeout", Duration.ofSeconds(5))
                .build();
        RedisSink sink = JobConnectors.redisSink(o);
        assertThat(sink.endpoint()).isEqualTo(JobConnectors.redisEndpoint(o.redis));
        assertThat(sink.toString())
                .isEqualTo("RedisSink{rediss://writer:***@h:6380/1, prefix=app}")
                .doesNotContain(SECRET);
    }

    @Test
    void theKafkaOptionsSetTheClientsAndSinks(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("client.properties");
        Files.writeString(file, "bootstrap.servers=from-file:9092\nsecurity.protocol=SASL_SSL\n");
        JobSettings.Builder b = JobSettings.builder()
                .set("--input", "x")
                .set("--kafka.properties", file)
                .set("--kafka.transaction-timeout", Duration.ofMinutes(3));
        JobSettings o = b.build();
        Properties fromFile = JobConnectors.kafkaProperties(o);
        assertThat(fromFile).containsEntry("bootstrap.servers", "from-file:9092");
        assertThat(fromFile).containsEntry("security.protocol", "SASL_SSL");
        o = b.set("--kafka.bootstrap", " broker:9092 ").build();
        assertThat(JobConnectors.kafkaProperties(o)).containsEntry("bootstrap.servers", "broker:9092");
        Properties producer = JobConnectors.kafkaProducerProperties(o);
        assertThat(producer).containsEntry("transaction.timeout.ms", "180000");
        assertThat(producer).containsEntry("security.protocol", "SASL_SSL");
        // the sinks batch (their records are visible at the checkpoint's commit anyway) unless the file says otherwise
        assertThat(producer)
                .containsEntry("linger.ms", "100")
                .containsEntry("batch.size", "262144")
                .containsEntry("compression.type", "lz4");
        assertThat(JobConnectors.kafkaProperties(o)).doesNotContainKey("linger.ms"); // the source's consumer: none
        Path tuned = dir.resolve("tuned.properties");
        Files.writeString(tuned, "linger.ms=7\ncompression.type=zstd\n");
        o = b.set("--kafka.properties", tuned).build();
        assertThat(JobConnectors.kafkaProducerProperties(o))
                .containsEntry("linger.ms", "7")
                .containsEntry("compression.type", "zstd")
                .containsEntry("batch.size", "262144");
        o = b.set("--kafka.properties", file).build();
        assertThat(KafkaIO.transactionalIdPrefix(o.kafkaTransactionalIdPrefix, "rollups"))
                .isEqualTo("rollcount-rollups");
        assertThat(KafkaIO.transactionalIdPrefix(" job7 ", "dlq")).isEqualTo("job7-dlq");

        JobSettings none = JobSettings.of("--input", "x");
        assertThatThrownBy(() -> JobConnectors.kafkaProperties(none))
                .hasMessage("--kafka.bootstrap is required for Kafka (or bootstrap.servers in --kafka.properties)");
        JobSettings noFile = none.toBuilder()
                .set("--kafka.bootstrap", "broker:9092")
                .set("--kafka.properties", dir.resolve("none.properties"))
                .build();
        assertThatThrownBy(() -> JobConnectors.kafkaSource(noFile))
                .hasMessage("--kafka.properties: no such file " + dir.resolve("none.properties"));
    }

    /**
     * The connectors stand on their own: no class of {@code io.rollcount.job.redis} or {@code io.rollcount.job.kafka}
     * refers to the options or the settings ({@code JobOptions}, {@code RedisOptions}, {@code JobSettings},
     * {@code RedisSettings}), neither in its compiled form (the constant
     * pool names every class it uses) nor in its source (imports, links).
     */
    @Test
    void theConnectorsDoNotKnowTheOptions() throws IOException, URISyntaxException {
        Path classes = Path.of(RedisSink.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        Path sources = Path.of("src/main/java");
        assertThat(sources.resolve("io/rollcount/job/JobOptions.java")).exists();
        List<String> offenders = new ArrayList<>();
        int checked = 0;
        for (String pkg : List.of("io/rollcount/job/redis", "io/rollcount/job/kafka")) {
            for (Path root : List.of(classes.resolve(pkg), sources.resolve(pkg))) {
                try (Stream<Path> files = Files.list(root)) {
                    for (Path f : files.filter(Files::isRegularFile).toList()) {
                        String text = new String(Files.readAllBytes(f), StandardCharsets.ISO_8859_1);
                        checked++;
                        for (String name : List.of("JobOptions", "RedisOptions", "JobSettings", "RedisSettings")) {
                            if (text.contains("io/rollcount/job/" + name)
                                    || text.contains("io.rollcount.job." + name)
                                    || text.matches("(?s).*\\b" + name + "\\b.*")) {
                                offenders.add(f + " refers to " + name);
                            }
                        }
                    }
                }
            }
        }
        assertThat(checked).isGreaterThan(40);
        assertThat(offenders).isEmpty();
        // the check sees a dependency where there is one
        Path job = classes.resolve("io/rollcount/job/RollcountJob.class");
        assertThat(new String(Files.readAllBytes(job), StandardCharsets.ISO_8859_1))
                .contains("io/rollcount/job/JobOptions");
    }
}
