package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.support.RedisTestSupport;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

/**
 * Tests that need a redis-server of their own: counting the commands the server received, SCRIPT FLUSH,
 * and outages (the server stopped and started again on the same port), and a port nothing listens on.
 */
class RedisSinkOwnServerIT {
    private static RedisServerProcess server;
    /** Now, for windows whose keys expire at their end plus retention: they must still live when checked. */
    private static final long NOW = System.currentTimeMillis();

    @BeforeAll
    static void startServer() throws Exception {
        server = RedisServerProcess.launch();
    }

    @AfterAll
    static void stopServer() throws Exception {
        if (server != null) server.close();
    }

    /**
     * A writer of a sink to {@code url} under {@code prefix}, retrying for {@code retryTimeout} with pauses of
     * 20 ms doubling up to 200 ms.
     */
    private static RedisSinkWriter writer(String url, String prefix, Duration retryTimeout) throws Exception {
        return TestWriterContext.writer(
                RedisSink.builder()
                        .setUrl(url)
                        .setKeyPrefix(prefix)
                        .setRetryTimeout(retryTimeout)
                        .setBackoff(Duration.ofMillis(20), Duration.ofMillis(200))
                        .build(),
                new TestWriterContext());
    }

    /** The count write of {@code counter}'s total. */
    private static RedisWrite total(RedisKeys keys, String counter, long value, long version) {
        String total = keys.total(counter);
        return RedisWrite.count(total, keys.versionOf(counter, total), value, version, true, RedisWrite.NO_WINDOW, 0);
    }

    /** The count write of {@code counter}'s window at {@code r} from {@code start}, expiring as the job's. */
    private static RedisWrite window(
            RedisKeys keys, String counter, Resolution r, long start, long value, long version, boolean positive) {
        String win = keys.window(counter, r, start);
        return RedisWrite.count(
                win, keys.versionOf(counter, win), value, version, positive, start, r.expireAtMillis(start));
    }

    private static long commandCalls(Jedis admin, String command) {
        Matcher m = Pattern.compile("cmdstat_" + command + ":calls=(\\d+)").matcher(admin.info("commandstats"));
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    @Test
    void redisReceivesPlainCommandsInTheSteadyStateAndTheScriptOnlyForTheMarkAndTheWatermark() throws Exception {
        String prefix = RedisTestSupport.randomPrefix();
        RedisKeys keys = new RedisKeys(prefix);
        try (Jedis admin = new Jedis("127.0.0.1", server.port)) {
            admin.configResetStat();
            RedisSinkWriter w = writer(server.url(), prefix, RedisSink.DEFAULT_RETRY_TIMEOUT);
            for (int round = 1; round <= 3; round++) {
                for (int c = 0; c < 100; c++) {
                    String counter = "c" + c;
                    w.write(total(keys, counter, round, round), null);
                    for (Resolution r : Resolution.all()) {
                        w.write(window(keys, counter, r, r.windowStart(NOW), round, round, true), null);
                    }
                    w.write(
                            RedisWrite.users(
                                    keys.uniquesAll(counter), new String[] {"u" + round}, RedisWrite.NO_WINDOW, 0),
                            null);
                }
                w.write(RedisWrite.max(keys.watermark(), round), null);
                w.flush(false);
            }
            w.close();
            // and the SET of the mark and of the watermark in the script, and the SET NX of the epoch (RedisEpoch)
            assertThat(commandCalls(admin, "set")).isEqualTo(3 * 100 * (1 + Resolution.all().length) + 1 + 3 + 1);
            assertThat(commandCalls(admin, "pfadd")).isEqualTo(3 * 100);
            // the mark once (its windows do not move), the MAX write of each round
            assertThat(commandCalls(admin, "evalsha")).isEqualTo(1 + 3);
            assertThat(commandCalls(admin, "script\\|load")).isEqualTo(1);
            // the mark, read once by the writer, and the script's GET of the mark and of the watermark; the epoch
            // read once at the first connection and once with each batch (the loss check, in the batch's pipeline)
            assertThat(commandCalls(admin, "get")).isEqualTo(1 + 1 + 3 + 1 + 3);
            assertThat(w.metrics.commandsSent.getCount())
                    .isEqualTo(3 * 100 * (2 + Resolution.all().length) + 4 + 2 + 2 + 3);
            assertThat(admin.get(keys.total("c7"))).isEqualTo("3");
            assertThat(admin.pfcount(keys.uniquesAll("c7"))).isEqualTo(3L);
            assertThat(admin.get(keys.watermark())).isEqualTo("3");
            RedisTestSupport.deleteAll(admin, prefix);
        }
    }

    @Test
    void runsTheCallByEvalAfterScriptFlush() throws Exception {
        String prefix = RedisTestSupport.randomPrefix();
        RedisKeys keys = new RedisKeys(prefix);
        try (Jedis admin = new Jedis("127.0.0.1", server.port)) {
            RedisSinkWriter w = writer(server.url(), prefix, RedisSink.DEFAULT_RETRY_TIMEOUT);
            w.write(RedisWrite.max(keys.watermark(), 1), null);
            w.flush(false);
            admin.scriptFlush();
            w.write(RedisWrite.max(keys.watermark(), 2), null);
            w.flush(false);
            assertThat(admin.get(keys.watermark())).isEqualTo("2");
            // load, get the mark, the epoch's SET NX and GET, (GET of the epoch, evalsha) twice, eval after NOSCRIPT
            assertThat(w.metrics.commandsSent.getCount()).isEqualTo(9);
            w.close();
            RedisTestSupport.deleteAll(admin, prefix);
        }
    }

    @Test
    void failsAfterTheRetryTimeoutWhenNothingListens() throws Exception {
        int port = RedisServerProcess.freePort();
        RedisSinkWriter w = writer("redis://127.0.0.1:" + port, "rc", Duration.ofMillis(1500));
        w.write(RedisWrite.max("rc:meta:watermark", 1), null);
        long start = System.nanoTime();
        assertThatThrownBy(() -> w.flush(false))
                .isInstanceOf(RedisSinkException.class)
                .hasMessageContaining("redis://127.0.0.1:" + port)
                .hasMessageContaining("still failing after retrying for 1500 ms");
        long tookMillis = (System.nanoTime() - start) / 1_000_000;
        assertThat(tookMillis).isBetween(1400L, 6000L);
        assertThat(w.metrics.retries.getCount()).isGreaterThan(3);
        w.close();
    }

    @Test
    void survivesAnOutageShorterThanTheRetryTimeout() throws Exception {
        try (RedisServerProcess own = RedisServerProcess.launch()) {
            String prefix = RedisTestSupport.randomPrefix();
            RedisKeys keys = new RedisKeys(prefix);
            RedisSinkWriter w = writer(own.url(), prefix, Duration.ofSeconds(30));
            String total = keys.total("o");
            w.write(total(keys, "o", 1, 1), null);
            w.flush(false);

            own.stop();
            CompletableFuture<Void> restart = CompletableFuture.runAsync(() -> {
                try {
                    Thread.sleep(1500);
                    own.start();
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            w.write(total(keys, "o", 2, 2), null);
            long start = System.nanoTime();
            w.flush(false); // blocks, retrying, until the server is back
            restart.join();
            assertThat((System.nanoTime() - start) / 1_000_000).isGreaterThanOrEqualTo(1400L);
            assertThat(w.metrics.retries.getCount()).isGreaterThan(0);
            try (Jedis check = new Jedis("127.0.0.1", own.port)) {
                assertThat(check.get(total)).isEqualTo("2"); // the restarted server (no persistence) got the write
            }
            w.close();
        }
    }
    /** A Redis at its {@code maxmemory} with {@code noeviction}: every write is refused with OOM. */
    private static void fill(Jedis admin) {
        admin.configSet("maxmemory-policy", "noeviction");
        admin.set("ballast".getBytes(), new byte[4 << 20]);
        admin.configSet("maxmemory", "1mb");
        assertThatThrownBy(() -> admin.set("probe", "1")).hasMessageStartingWith("OOM");
    }

    @Test
    void oomIsRetriedUntilRedisHasRoomAgainThenEveryWriteLandsExactly() throws Exception {
        try (RedisServerProcess own = RedisServerProcess.launch();
                Jedis admin = new Jedis("127.0.0.1", own.port)) {
            String prefix = RedisTestSupport.randomPrefix();
            RedisKeys keys = new RedisKeys(prefix);
            RedisSinkWriter w = writer(own.url(), prefix, Duration.ofSeconds(60));
            fill(admin);
            String[] users = new String[30];
            for (int u = 0; u < 30; u++) users[u] = "u" + u;
            long start = Resolution.M1.windowStart(NOW);
            for (int c = 0; c < 50; c++) {
                String counter = "oom:" + c;
                w.write(total(keys, counter, c + 1, 1), null);
                w.write(window(keys, counter, Resolution.M1, start, c + 1, 1, false), null);
                w.write(RedisWrite.users(keys.uniquesAll(counter), users, RedisWrite.NO_WINDOW, 0), null);
            }
            w.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(180_000));
            CompletableFuture<Void> flush = CompletableFuture.runAsync(() -> {
                try {
                    w.flush(false);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (w.metrics.retries.getCount() < 3 && System.nanoTime() < deadline) Thread.sleep(20);
            assertThat(w.metrics.retries.getCount()).isGreaterThanOrEqualTo(3);
            assertThat(flush).isNotDone();
            // refused whole: nothing half written (the epoch may have been created when the writer connected, before)
            assertThat(RedisTestSupport.keysOf(admin, prefix))
                    .filteredOn(k -> !k.equals(keys.epoch()))
                    .isEmpty();

            admin.configSet("maxmemory", "0"); // room again
            flush.get(30, java.util.concurrent.TimeUnit.SECONDS);
            for (int c = 0; c < 50; c++) {
                String counter = "oom:" + c;
                assertThat(admin.get(keys.total(counter))).isEqualTo(Integer.toString(c + 1));
                assertThat(admin.get(keys.window(counter, Resolution.M1, start)))
                        .isEqualTo(Integer.toString(c + 1));
                assertThat(admin.pfcount(keys.uniquesAll(counter))).isEqualTo(30L);
            }
            assertThat(admin.get(keys.watermark())).isEqualTo("180000");
            assertThat(w.metrics.keysRejected.getCount()).isZero();
            w.close();
        }
    }

    @Test
    void oomLongerThanTheRetryTimeoutFailsSayingSo() throws Exception {
        try (RedisServerProcess own = RedisServerProcess.launch();
                Jedis admin = new Jedis("127.0.0.1", own.port)) {
            String prefix = RedisTestSupport.randomPrefix();
            RedisKeys keys = new RedisKeys(prefix);
            RedisSinkWriter w = writer(own.url(), prefix, Duration.ofMillis(1000));
            fill(admin);
            w.write(total(keys, "x", 1, 1), null);
            assertThatThrownBy(() -> w.flush(false))
                    .isInstanceOf(RedisSinkException.class)
                    .hasMessageContaining("still failing after retrying for 1000 ms")
                    .hasMessageContaining("OOM command not allowed");
            assertThat(w.metrics.retries.getCount()).isGreaterThan(1);
            assertThat(w.metrics.keysRejected.getCount()).isZero();
            w.close();
        }
    }
}
