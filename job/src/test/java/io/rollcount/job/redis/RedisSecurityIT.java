package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.support.RedisTestSupport;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configurator;
import org.apache.logging.log4j.core.config.Property;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Issue 7 item 3, the Redis half: a password-protected redis-server with an ACL user limited to the key
 * prefix and to the commands the sink needs, and a TLS-only redis-server with a certificate made here by
 * openssl. Every log line (DEBUG and up, Jedis included) and every exception is checked for the password.
 */
class RedisSecurityIT {
    /** Everything the sink needs: see the ACL list in the report and in {@link RedisSink}'s javadoc. */
    static final String SINK_ACL = "-@all +set +get +pfadd +pexpireat +evalsha +eval +script|load +ping";
    /** What the script runs; ACL checks the commands of a script too. */
    static final String SCRIPT_ACL = "+get +mget +set +del +zadd +pexpireat +hset +hlen +hvals +pexpire";
    /** An expiry in the future for the window keys written here. */
    private static final long FAR_FUTURE = System.currentTimeMillis() + 86_400_000L;

    private static final String ADMIN_PW = "admin-Pw-9f2e";
    private static final String WRITER_PW = "writer-Pw-c41a";
    private static final String PREFIX = "sec";

    private static final List<String> LOG = new CopyOnWriteArrayList<>();
    private static AbstractAppender capture;
    private static RedisServerProcess server;
    private static RedisServerProcess tlsServer;
    private static Path tlsDir;

    @BeforeAll
    static void setUp() throws Exception {
        capture = new AbstractAppender("capture", null, null, true, Property.EMPTY_ARRAY) {
            @Override
            public void append(LogEvent event) {
                StringBuilder sb = new StringBuilder(event.getMessage().getFormattedMessage());
                if (event.getThrown() != null) sb.append('\n').append(stackTrace(event.getThrown()));
                LOG.add(sb.toString());
            }
        };
        capture.start();
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        ctx.getConfiguration().getRootLogger().addAppender(capture, Level.ALL, null);
        Configurator.setLevel("io.rollcount", Level.DEBUG);
        Configurator.setLevel("redis.clients", Level.DEBUG);
        ctx.updateLoggers();

        server = RedisServerProcess.launch("--requirepass", ADMIN_PW);
        try (Jedis admin = admin()) {
            admin.aclSetUser(
                    "rcwriter",
                    "reset",
                    "on",
                    ">" + WRITER_PW,
                    "~" + PREFIX + ":*",
                    "resetchannels",
                    "-@all",
                    "+set",
                    "+get",
                    "+mget",
                    "+pfadd",
                    "+pexpireat",
                    "+pexpire",
                    "+evalsha",
                    "+eval",
                    "+script|load",
                    "+ping",
                    "+del",
                    "+zadd",
                    "+hset",
                    "+hlen",
                    "+hvals");
        }

        tlsDir = RedisServerProcess.newDir();
        openssl(
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.crt",
                "-days",
                "2",
                "-subj",
                "/CN=rollcount-test-ca");
        openssl(
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "server.key",
                "-out",
                "server.csr",
                "-subj",
                "/CN=localhost");
        Files.writeString(tlsDir.resolve("ext.cnf"), "subjectAltName=DNS:localhost\n");
        openssl(
                "x509",
                "-req",
                "-in",
                "server.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "server.crt",
                "-days",
                "2",
                "-extfile",
                "ext.cnf");
        tlsServer = RedisServerProcess.launchTls(
                "--tls-cert-file",
                tlsDir.resolve("server.crt").toString(),
                "--tls-key-file",
                tlsDir.resolve("server.key").toString(),
                "--tls-ca-cert-file",
                tlsDir.resolve("ca.crt").toString(),
                "--tls-auth-clients",
                "no",
                "--requirepass",
                WRITER_PW);
    }

    @AfterAll
    static void tearDown() throws Exception {
        try {
            for (String line : LOG) {
                assertThat(line).doesNotContain(WRITER_PW).doesNotContain(ADMIN_PW);
            }
        } finally {
            LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
            ctx.getConfiguration().getRootLogger().removeAppender("capture");
            Configurator.setLevel("io.rollcount", Level.WARN);
            Configurator.setLevel("redis.clients", Level.WARN);
            ctx.updateLoggers();
            if (server != null) server.close();
            if (tlsServer != null) tlsServer.close();
        }
    }

    private static void openssl(String... args) throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of("openssl"));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd)
                .directory(tlsDir.toFile())
                .redirectErrorStream(true)
                .redirectOutput(tlsDir.resolve("openssl.log").toFile())
                .start();
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue())
                .as("openssl " + args[0] + ": " + Files.readString(tlsDir.resolve("openssl.log")))
                .isZero();
    }

    private static Jedis admin() {
        Jedis j = new Jedis("127.0.0.1", server.port);
        j.auth(ADMIN_PW);
        return j;
    }

    static String stackTrace(Throwable t) {
        StringWriter sw = new StringWriter();
        t.printStackTrace(new PrintWriter(sw));
        return sw.toString();
    }

    private static void assertNoPassword(Throwable t) {
        assertThat(stackTrace(t)).doesNotContain(WRITER_PW).doesNotContain(ADMIN_PW);
    }

    /** One write of every kind under the prefix, as the job's operators make them. */
    private static void writeEveryKind(RedisSinkWriter w, byte[] sketch) throws Exception {
        RedisKeys keys = new RedisKeys(PREFIX);
        String total = keys.total("post:1");
        String win = keys.window("post:1", Resolution.H1, 0);
        String top = keys.top("post", Resolution.H1, 0);
        w.write(RedisWrite.count(total, keys.versionOf("post:1", total), 5, 1, true, RedisWrite.NO_WINDOW, 0), null);
        w.write(RedisWrite.count(win, keys.versionOf("post:1", win), 5, 1, false, 0, FAR_FUTURE), null);
        w.write(
                RedisWrite.users(keys.uniques("post:1", Resolution.H1, 0), new String[] {"a", "b"}, 0, FAR_FUTURE),
                null);
        w.write(
                RedisWrite.zset(
                        top, keys.versionOfGlobal(top), 1, new String[] {"post:1"}, new double[] {5}, 0, FAR_FUTURE),
                null);
        w.write(
                RedisWrite.zset(
                        keys.trending("post"),
                        null,
                        0,
                        new String[] {"post:1"},
                        new double[] {1.5},
                        RedisWrite.NO_WINDOW,
                        0),
                null);
        w.write(RedisWrite.max(keys.watermark(), 1000), null);
        w.writeWatermark(
                new org.apache.flink.api.common.eventtime.Watermark(2000)); // the writer's own: HSET/HLEN/HVALS
        w.flush(false);
    }

    private static byte[] sketch(Jedis j, String scratch) {
        j.pfadd(scratch, "alice", "bob");
        byte[] b = j.get(scratch.getBytes());
        j.del(scratch);
        return b;
    }

    @Test
    void aclUserLimitedToThePrefixAndTheSinksCommandsCanWriteEveryKind() throws Exception {
        RedisSink sink = RedisSink.builder()
                .setUrl("redis://rcwriter:" + WRITER_PW + "@127.0.0.1:" + server.port)
                .setKeyPrefix(PREFIX)
                .setRetryTimeout(Duration.ofSeconds(2))
                .build();
        assertThat(sink.toString()).doesNotContain(WRITER_PW);
        try (Jedis admin = admin()) {
            admin.aclLogReset();
            RedisSinkWriter w = TestWriterContext.writer(sink, new TestWriterContext());
            writeEveryKind(w, sketch(admin, PREFIX + ":_scratch"));
            // nothing the sink sent (connection set-up included) was denied
            assertThat(admin.aclLog()).as("ACL LOG").isEmpty();
            RedisKeys keys = new RedisKeys(PREFIX);
            assertThat(admin.get(keys.total("post:1"))).isEqualTo("5");
            assertThat(admin.pfcount(keys.uniques("post:1", Resolution.H1, 0))).isEqualTo(2);
            assertThat(admin.zscore(keys.trending("post"), "post:1")).isEqualTo(1.5);
            assertThat(admin.get(keys.watermark()))
                    .as("the writer's own watermark, past the MAX write")
                    .isEqualTo("2000");

            // a key outside the prefix is refused by the ACL, at once, naming the key
            w.write(RedisWrite.max("other:meta:watermark", 1), null);
            long start = System.nanoTime();
            assertThatThrownBy(() -> w.flush(false))
                    .isInstanceOf(RedisSinkException.class)
                    .hasMessageContaining("NOPERM")
                    .hasMessageContaining("other:meta:watermark")
                    .satisfies(RedisSecurityIT::assertNoPassword);
            assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(1500);
            w.close();
            assertThat(admin.exists("other:meta:watermark")).isFalse();
            RedisTestSupport.deleteAll(admin, PREFIX);
        }
    }

    @Test
    void passwordFromAFileWorksAndAWrongPasswordFailsAtOnceWithoutShowingIt(@org.junit.jupiter.api.io.TempDir Path dir)
            throws Exception {
        Path pw = dir.resolve("redis-password");
        Files.writeString(pw, WRITER_PW + "\n");
        RedisEndpoint e = RedisEndpoint.builder()
                .setUrl("redis://rcwriter@127.0.0.1:" + server.port)
                .setPasswordFile(pw)
                .build();
        try (Jedis j = e.connect()) {
            assertThat(j.ping()).isEqualTo("PONG");
        }

        String wrong = "wrong-Pw-77";
        RedisSink sink = RedisSink.builder()
                .setUrl("redis://rcwriter:" + wrong + "@127.0.0.1:" + server.port)
                .setKeyPrefix(PREFIX)
                .setRetryTimeout(Duration.ofSeconds(20))
                .build();
        RedisSinkWriter w = TestWriterContext.writer(sink, new TestWriterContext());
        w.write(RedisWrite.max(PREFIX + ":meta:watermark", 1), null);
        long start = System.nanoTime();
        assertThatThrownBy(() -> w.flush(false))
                .isInstanceOf(RedisSinkException.class)
                .hasMessageContaining("refused access for user rcwriter")
                .satisfies(t -> assertThat(stackTrace(t)).doesNotContain(wrong))
                .satisfies(RedisSecurityIT::assertNoPassword);
        assertThat((System.nanoTime() - start) / 1_000_000)
                .as("no retries for refused credentials")
                .isLessThan(5000);
        w.close();
        for (String line : LOG) assertThat(line).doesNotContain(wrong);

        // an unauthenticated client gets nothing
        try (Jedis anon = new Jedis("127.0.0.1", server.port)) {
            assertThatThrownBy(() -> anon.get(PREFIX + ":meta:watermark"))
                    .isInstanceOf(JedisException.class)
                    .hasMessageContaining("NOAUTH");
        }
    }

    @Test
    void retriesLogTheEndpointWithoutItsPassword() throws Exception {
        int port = RedisServerProcess.freePort();
        RedisSink sink = RedisSink.builder()
                .setUrl("redis://rcwriter:" + WRITER_PW + "@127.0.0.1:" + port)
                .setRetryTimeout(Duration.ofMillis(300))
                .setBackoff(Duration.ofMillis(20), Duration.ofMillis(100))
                .build();
        RedisSinkWriter w = TestWriterContext.writer(sink, new TestWriterContext());
        w.write(RedisWrite.max("rc:meta:watermark", 1), null);
        assertThatThrownBy(() -> w.flush(false))
                .isInstanceOf(RedisSinkException.class)
                .hasMessageContaining("redis://rcwriter:***@127.0.0.1:" + port)
                .satisfies(RedisSecurityIT::assertNoPassword);
        w.close();
        assertThat(LOG).anySatisfy(line -> assertThat(line).contains("redis://rcwriter:***@127.0.0.1:" + port));
        for (String line : LOG) assertThat(line).doesNotContain(WRITER_PW);
    }

    @Test
    void tlsWithTheTestCa() throws Exception {
        String url = "rediss://:" + WRITER_PW + "@localhost:" + tlsServer.port;
        RedisEndpoint e = RedisEndpoint.builder()
                .setUrl(url)
                .setCaCertificatePem(tlsDir.resolve("ca.crt"))
                .build();
        assertThat(e.toString()).isEqualTo("rediss://:***@localhost:" + tlsServer.port);
        RedisSink sink = RedisSink.builder().setEndpoint(e).setKeyPrefix(PREFIX).build();
        RedisSinkWriter w = TestWriterContext.writer(sink, new TestWriterContext());
        try (Jedis j = e.connect()) {
            writeEveryKind(w, sketch(j, PREFIX + ":_scratch"));
            assertThat(j.get(new RedisKeys(PREFIX).total("post:1"))).isEqualTo("5");
            RedisTestSupport.deleteAll(j, PREFIX);
        }
        w.close();
    }

    @Test
    void tlsRefusesAnUntrustedCertificateOrAnotherHostNameAtOnce() throws Exception {
        // the JVM's default trust store does not know the test CA
        RedisSink untrusted = RedisSink.builder()
                .setUrl("rediss://:" + WRITER_PW + "@localhost:" + tlsServer.port)
                .setKeyPrefix(PREFIX)
                .setRetryTimeout(Duration.ofSeconds(20))
                .build();
        RedisSinkWriter w = TestWriterContext.writer(untrusted, new TestWriterContext());
        w.write(RedisWrite.max(PREFIX + ":meta:watermark", 1), null);
        long start = System.nanoTime();
        assertThatThrownBy(() -> w.flush(false))
                .isInstanceOf(RedisSinkException.class)
                .hasMessageContaining("certificate")
                .satisfies(RedisSecurityIT::assertNoPassword);
        assertThat((System.nanoTime() - start) / 1_000_000).isLessThan(5000);
        w.close();

        // trusted CA, but the certificate names localhost, not 127.0.0.1
        RedisEndpoint byIp = RedisEndpoint.builder()
                .setUrl("rediss://:" + WRITER_PW + "@127.0.0.1:" + tlsServer.port)
                .setCaCertificatePem(tlsDir.resolve("ca.crt"))
                .build();
        assertThatThrownBy(byIp::connect)
                .isInstanceOf(JedisException.class)
                .satisfies(RedisSecurityIT::assertNoPassword);
        RedisEndpoint noHostCheck = RedisEndpoint.builder()
                .setUrl("rediss://:" + WRITER_PW + "@127.0.0.1:" + tlsServer.port)
                .setCaCertificatePem(tlsDir.resolve("ca.crt"))
                .setVerifyHostname(false)
                .build();
        try (Jedis j = noHostCheck.connect()) {
            assertThat(j.ping()).isEqualTo("PONG");
        }
    }
}
