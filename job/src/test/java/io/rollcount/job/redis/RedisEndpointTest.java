package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.JobOptions;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** URL parsing, password sources and redaction; no server needed. */
class RedisEndpointTest {
    private static final String SECRET = "s3cr3t-Pw";

    @Test
    void parsesEveryPartOfTheUrl() {
        RedisEndpoint e = RedisEndpoint.parse("redis://writer:" + SECRET + "%40x@redis.example:6380/2");
        assertThat(e.host()).isEqualTo("redis.example");
        assertThat(e.port()).isEqualTo(6380);
        assertThat(e.database()).isEqualTo(2);
        assertThat(e.user()).isEqualTo("writer");
        assertThat(e.hasPassword()).isTrue();
        assertThat(e.tls()).isFalse();
        assertThat(e.toString()).isEqualTo("redis://writer:***@redis.example:6380/2");
        assertThat(e.redact("auth failed for " + SECRET + "@x")).isEqualTo("auth failed for ***");

        RedisEndpoint t = RedisEndpoint.parse("rediss://cache.internal");
        assertThat(t.tls()).isTrue();
        assertThat(t.port()).isEqualTo(6379);
        assertThat(t.database()).isZero();
        assertThat(t.user()).isNull();
        assertThat(t.hasPassword()).isFalse();
        assertThat(t.toString()).isEqualTo("rediss://cache.internal:6379");

        RedisEndpoint v6 = RedisEndpoint.parse("redis://:" + SECRET + "@[::1]:7000");
        assertThat(v6.host()).isEqualTo("::1");
        assertThat(v6.port()).isEqualTo(7000);
        assertThat(v6.user()).isNull();
        assertThat(v6.toString()).isEqualTo("redis://:***@[::1]:7000");

        assertThat(RedisEndpoint.parse("REDIS://h:1/").database()).isZero();
        assertThat(RedisEndpoint.parse("redis://u@h").user()).isEqualTo("u");
        assertThat(RedisEndpoint.parse("redis://u@h").toString()).isEqualTo("redis://u@h:6379");
    }

    @Test
    void invalidUrlsNameTheSettingAndHideThePassword() {
        String[] bad = {
            "http://u:" + SECRET + "@h:1",
            "redis://u:" + SECRET + "@h:port",
            "redis://u:" + SECRET + "@h:0",
            "redis://u:" + SECRET + "@h:1/db",
            "redis://u:" + SECRET + "@:1",
            "redis://u:" + SECRET + "@h:1?ssl=true",
            "redis://u:" + SECRET + "@[::1:1",
            "redis://u:" + SECRET + "%zz@h",
            "",
            "127.0.0.1:6379"
        };
        for (String url : bad) {
            assertThatThrownBy(() -> RedisEndpoint.parse(url))
                    .as(url)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("--redis")
                    .satisfies(ex -> assertThat(ex.getMessage()).doesNotContain(SECRET));
        }
        assertThatThrownBy(() -> RedisEndpoint.parse("redis://u:" + SECRET + "@h:port"))
                .hasMessage("--redis: the port must be a number in redis://u:***@h:port");
    }

    @Test
    void passwordFromFileOrEnvironment(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("pw");
        Files.writeString(file, SECRET + "\n");
        RedisEndpoint e = RedisEndpoint.builder()
                .setUrl("redis://writer@h:1")
                .setPasswordFile(file)
                .build();
        assertThat(e.hasPassword()).isTrue();
        assertThat(e.redact(SECRET)).isEqualTo("***");
        assertThat(e.toString()).isEqualTo("redis://writer:***@h:1");

        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setUrl("redis://writer:x@h:1")
                        .setPasswordFile(file)
                        .build())
                .hasMessageStartingWith("--redis.password-file");
        Path empty = dir.resolve("empty");
        Files.writeString(empty, "\n");
        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setUrl("redis://h:1")
                        .setPasswordFile(empty)
                        .build())
                .hasMessageStartingWith("--redis.password-file")
                .hasMessageContaining("empty");
        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setUrl("redis://h:1")
                        .setPasswordFile(dir.resolve("missing"))
                        .build())
                .hasMessageStartingWith("--redis.password-file");

        JobOptions options = new JobOptions();
        options.redis = "redis://writer@h:1";
        RedisEndpoint fromEnv = RedisEndpoint.fromOptions(options, Map.of(RedisEndpoint.PASSWORD_ENV, SECRET));
        assertThat(fromEnv.hasPassword()).isTrue();
        assertThat(fromEnv.redact(SECRET)).isEqualTo("***");
        options.redisPasswordFile = file.toString();
        assertThat(RedisEndpoint.fromOptions(options, Map.of(RedisEndpoint.PASSWORD_ENV, "other"))
                        .redact(SECRET))
                .isEqualTo("***");
        options.redis = "redis://writer:" + SECRET + "@h:1";
        options.redisPasswordFile = null;
        RedisEndpoint urlWins = RedisEndpoint.fromOptions(options, Map.of(RedisEndpoint.PASSWORD_ENV, "other"));
        assertThat(urlWins.redact(SECRET)).isEqualTo("***");
        assertThat(urlWins.redact("other")).isEqualTo("other");
    }

    @Test
    void sinkFromOptionsAndSerialization() throws Exception {
        JobOptions options = new JobOptions();
        options.redis = "rediss://writer:" + SECRET + "@h:6380/1";
        options.redisKeyPrefix = "app";
        options.redisRetryTimeout = Duration.ofSeconds(5);
        RedisSink sink = RedisSink.fromOptions(options);
        assertThat(sink.keyPrefix).isEqualTo("app");
        assertThat(sink.retryTimeoutMillis).isEqualTo(5000);
        assertThat(sink.toString()).doesNotContain(SECRET).contains("rediss://writer:***@h:6380/1");

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(sink);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            RedisSink copy = (RedisSink) in.readObject();
            assertThat(copy.endpoint()).isEqualTo(sink.endpoint());
        }
    }

    @Test
    void sinkBuilderNamesTheSettingAtFault() {
        assertThatThrownBy(() -> RedisSink.builder().build()).hasMessageStartingWith("--redis");
        assertThatThrownBy(() -> RedisSink.builder()
                        .setUrl("redis://h")
                        .setKeyPrefix("a{b")
                        .build())
                .hasMessageStartingWith("--redis.key-prefix");
        assertThatThrownBy(() -> RedisSink.builder()
                        .setUrl("redis://h")
                        .setRetryTimeout(Duration.ofSeconds(-1))
                        .build())
                .hasMessageStartingWith("--redis.retry-timeout");
        assertThatThrownBy(() -> RedisSink.builder()
                        .setUrl("redis://h")
                        .setMaxBufferedKeys(0)
                        .build())
                .hasMessageContaining("maxBufferedKeys");
        assertThatThrownBy(() -> RedisSink.builder()
                        .setUrl("redis://h")
                        .setFlushInterval(Duration.ZERO)
                        .build())
                .hasMessageContaining("flushInterval");
    }

    @Test
    void aClusterSeedListTakesTheFirstNodesCredentialsAndNoDatabase() throws Exception {
        RedisEndpoint e = RedisEndpoint.builder()
                .setCluster(true)
                .setUrl("rediss://writer:" + SECRET + "@a.example:7000,b.example:7001,rediss://[::1]:7002")
                .build();
        assertThat(e.cluster()).isTrue();
        assertThat(e.seeds()).containsExactly("a.example:7000", "b.example:7001", "[::1]:7002");
        assertThat(e.tls()).isTrue();
        assertThat(e.user()).isEqualTo("writer");
        assertThat(e.toString())
                .isEqualTo("rediss://writer:***@a.example:7000,b.example:7001,[::1]:7002")
                .doesNotContain(SECRET);
        // what a TaskManager receives
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (java.io.ObjectOutputStream out = new java.io.ObjectOutputStream(bytes)) {
            out.writeObject(e);
        }
        try (java.io.ObjectInputStream in =
                new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(bytes.toByteArray()))) {
            RedisEndpoint back = (RedisEndpoint) in.readObject();
            assertThat(back).isEqualTo(e);
            assertThat(back.seeds()).isEqualTo(e.seeds());
        }
        // a cluster endpoint: one counter per script call
        assertThat(RedisSink.builder().setEndpoint(e).setCountersPerCall(64).build().countersPerCall)
                .isEqualTo(1);

        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setCluster(true)
                        .setUrl("redis://a:7000/3")
                        .build())
                .hasMessage("--redis: a Redis Cluster has database 0 only: remove '/3' (--redis.cluster is set)");
        assertThatThrownBy(() ->
                        RedisEndpoint.builder().setUrl("redis://a:7000,b:7001").build())
                .hasMessageStartingWith(
                        "--redis: a list of nodes is the seed list of a Redis Cluster: add --redis.cluster");
        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setCluster(true)
                        .setUrl("rediss://a:7000,redis://b:7001")
                        .build())
                .hasMessageStartingWith("--redis: every seed node takes the scheme of the first (rediss://)");
        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setCluster(true)
                        .setUrl("redis://u:" + SECRET + "@a:7000,v:w@b:7001")
                        .build())
                .hasMessageStartingWith("--redis: seed node 2 must be host:port")
                .hasMessageNotContaining(SECRET);
        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setCluster(true)
                        .setUrl("redis://a:7000,b:port")
                        .build())
                .hasMessageStartingWith("--redis: the port must be a number");
    }
}
