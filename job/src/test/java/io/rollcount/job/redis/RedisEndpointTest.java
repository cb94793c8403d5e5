package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * URL parsing, password sources and redaction, and the setters' checks of both builders (each refused value
 * named by its setter); no server needed. The command line's options mapped to these builders:
 * {@code ConnectorOptionsTest}.
 */
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
                    .hasMessageStartingWith("RedisEndpoint.builder().setUrl: ")
                    .satisfies(ex -> assertThat(ex.getMessage()).doesNotContain(SECRET));
        }
        assertThatThrownBy(() -> RedisEndpoint.parse("redis://u:" + SECRET + "@h:port"))
                .hasMessage("RedisEndpoint.builder().setUrl: the port must be a number in redis://u:***@h:port");
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
                .hasMessage(
                        "RedisEndpoint.builder().setPasswordFile: the setUrl URL carries a password already; give it in one place only");
        Path empty = dir.resolve("empty");
        Files.writeString(empty, "\n");
        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setUrl("redis://h:1")
                        .setPasswordFile(empty)
                        .build())
                .hasMessage("RedisEndpoint.builder().setPasswordFile: " + empty + " is empty");
        assertThatThrownBy(() -> RedisEndpoint.builder().setUrl("redis://h:1").setPasswordFile(dir.resolve("missing")))
                .hasMessage("RedisEndpoint.builder().setPasswordFile: cannot read " + dir.resolve("missing")
                        + ": NoSuchFileException");

        RedisEndpoint fallback = RedisEndpoint.builder()
                .setUrl("redis://writer@h:1")
                .setFallbackPassword(SECRET)
                .build();
        assertThat(fallback.hasPassword()).isTrue();
        assertThat(fallback.redact(SECRET)).isEqualTo("***");
        // the URL's password, or the file's, wins over the fallback
        RedisEndpoint urlWins = RedisEndpoint.builder()
                .setUrl("redis://writer:" + SECRET + "@h:1")
                .setFallbackPassword("other")
                .build();
        assertThat(urlWins.redact(SECRET)).isEqualTo("***");
        assertThat(urlWins.redact("other")).isEqualTo("other");
        RedisEndpoint fileWins = RedisEndpoint.builder()
                .setUrl("redis://writer@h:1")
                .setPasswordFile(file)
                .setFallbackPassword("other")
                .build();
        assertThat(fileWins.redact(SECRET)).isEqualTo("***");
        assertThat(fileWins.redact("other")).isEqualTo("other");
    }

    @Test
    void aSinkTravelsToItsWritersWithoutShowingThePassword() throws Exception {
        RedisSink sink = RedisSink.builder()
                .setUrl("rediss://writer:" + SECRET + "@h:6380/1")
                .setKeyPrefix("app")
                .setRetryTimeout(Duration.ofSeconds(5))
                .build();
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
    void eachSinkSetterRefusesABadValueAtOnceNamingItself() {
        String at = "RedisSink.builder().";
        assertThatThrownBy(() -> RedisSink.builder().build())
                .isInstanceOf(InvalidSettingException.class)
                .hasMessage(at + "setEndpoint: the Redis endpoint must be set");
        assertThatThrownBy(() -> RedisSink.builder().setEndpoint(null))
                .hasMessage(at + "setEndpoint: the Redis endpoint must be set");
        assertThatThrownBy(() -> RedisSink.builder().setUrl("http://h"))
                .hasMessage("RedisEndpoint.builder().setUrl: must start with redis:// or rediss:// (got 'http://')");
        assertThatThrownBy(() -> RedisSink.builder().setKeyPrefix("a{b"))
                .hasMessage(at + "setKeyPrefix: must be non-empty and free of '{' and '}', got 'a{b'");
        assertThatThrownBy(() -> RedisSink.builder().setKeyPrefix(" "))
                .hasMessage(at + "setKeyPrefix: must be non-empty and free of '{' and '}', got ' '");
        assertThatThrownBy(() -> RedisSink.builder().setKeyPrefix(null))
                .hasMessage(at + "setKeyPrefix: must be non-empty and free of '{' and '}', got none");
        assertThatThrownBy(() -> RedisSink.builder().setRetryTimeout(Duration.ofSeconds(-1)))
                .hasMessage(at + "setRetryTimeout: must not be negative, got -1000 ms");
        assertThatThrownBy(() -> RedisSink.builder().setRetryTimeout(null))
                .hasMessage(at + "setRetryTimeout: must not be negative, got none");
        assertThatThrownBy(() -> RedisSink.builder().setMaxBufferedKeys(0))
                .hasMessage(at + "setMaxBufferedKeys: must be at least 1, got 0");
        assertThatThrownBy(() -> RedisSink.builder().setMaxBufferedBytes(0))
                .hasMessage(at + "setMaxBufferedBytes: must be at least 1 byte, got 0");
        assertThatThrownBy(() -> RedisSink.builder().setFlushInterval(Duration.ZERO))
                .hasMessage(at + "setFlushInterval: must be at least 1 ms, got 0 ms");
        assertThatThrownBy(() -> RedisSink.builder().setFlushInterval(Duration.ofNanos(999_999)))
                .hasMessage(at + "setFlushInterval: must be at least 1 ms, got 0 ms");
        assertThatThrownBy(() -> RedisSink.builder().setBackoff(Duration.ZERO, Duration.ofSeconds(1)))
                .hasMessage(at + "setBackoff: the initial pause must be at least 1 ms, got 0 ms");
        assertThatThrownBy(() -> RedisSink.builder().setBackoff(Duration.ofMillis(50), Duration.ofMillis(10)))
                .hasMessage(at + "setBackoff: the largest pause must not be below the initial 50 ms, got 10 ms");
        assertThatThrownBy(() -> RedisSink.builder().setMaxWritesPerCall(0))
                .hasMessage(at + "setMaxWritesPerCall: must be at least 1, got 0");
        assertThatThrownBy(() -> RedisSink.builder().setCountersPerCall(-3))
                .hasMessage(at + "setCountersPerCall: must be at least 1, got -3");
        // the limits themselves are accepted
        RedisSink edge = RedisSink.builder()
                .setUrl("redis://h")
                .setFlushInterval(Duration.ofMillis(1))
                .setRetryTimeout(Duration.ZERO)
                .setBackoff(Duration.ofMillis(1), Duration.ofMillis(1))
                .setMaxBufferedKeys(1)
                .setMaxBufferedBytes(1)
                .setMaxWritesPerCall(1)
                .setCountersPerCall(1)
                .build();
        assertThat(edge.flushIntervalMillis).isEqualTo(1);
        assertThat(edge.retryTimeoutMillis).isZero();
    }

    @Test
    void eachEndpointSetterRefusesABadValueAtOnceNamingItself(@TempDir Path dir) {
        String at = "RedisEndpoint.builder().";
        assertThatThrownBy(() -> RedisEndpoint.builder().setUrl(" "))
                .isInstanceOf(InvalidSettingException.class)
                .hasMessage(at + "setUrl: the Redis URL must be set (redis://host:port or rediss://host:port)");
        assertThatThrownBy(() -> RedisEndpoint.builder().build())
                .hasMessage(at + "setUrl: the Redis URL must be set (redis://host:port or rediss://host:port)");
        // the syntax is checked by the setter, before build()
        assertThatThrownBy(() -> RedisEndpoint.builder().setUrl("redis://h:99999"))
                .hasMessage(at + "setUrl: the port must be 1 to 65535 in redis://h:99999");
        assertThatThrownBy(() -> RedisEndpoint.builder().setConnectTimeoutMillis(0))
                .hasMessage(at + "setConnectTimeoutMillis: must be positive, got 0 ms");
        assertThatThrownBy(() -> RedisEndpoint.builder().setSocketTimeoutMillis(-1))
                .hasMessage(at + "setSocketTimeoutMillis: must be positive, got -1 ms");
        assertThatThrownBy(() -> RedisEndpoint.builder().setCaCertificatePem(dir.resolve("no-ca.pem")))
                .hasMessageStartingWith(at + "setCaCertificatePem: cannot read " + dir.resolve("no-ca.pem"));
        // a seed list set before setCluster(true) is fine: build() checks the URL against it
        assertThat(RedisEndpoint.builder()
                        .setUrl("redis://a:7000,b:7001")
                        .setCluster(true)
                        .build()
                        .seeds())
                .containsExactly("a:7000", "b:7001");
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
                .hasMessage(
                        "RedisEndpoint.builder().setUrl: a Redis Cluster has database 0 only: remove '/3' (setCluster is set)");
        assertThatThrownBy(() ->
                        RedisEndpoint.builder().setUrl("redis://a:7000,b:7001").build())
                .hasMessageStartingWith(
                        "RedisEndpoint.builder().setUrl: a list of nodes is the seed list of a Redis Cluster: add setCluster");
        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setCluster(true)
                        .setUrl("rediss://a:7000,redis://b:7001")
                        .build())
                .hasMessageStartingWith(
                        "RedisEndpoint.builder().setUrl: every seed node takes the scheme of the first (rediss://)");
        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setCluster(true)
                        .setUrl("redis://u:" + SECRET + "@a:7000,v:w@b:7001")
                        .build())
                .hasMessageStartingWith("RedisEndpoint.builder().setUrl: seed node 2 must be host:port")
                .hasMessageNotContaining(SECRET);
        assertThatThrownBy(() -> RedisEndpoint.builder()
                        .setCluster(true)
                        .setUrl("redis://a:7000,b:port")
                        .build())
                .hasMessageStartingWith("RedisEndpoint.builder().setUrl: the port must be a number");
    }
}
