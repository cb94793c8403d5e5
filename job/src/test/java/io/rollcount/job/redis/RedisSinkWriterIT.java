package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.internal.ConfirmedKeys;
import io.rollcount.job.redis.internal.MarkGuard;
import io.rollcount.job.support.RedisTestSupport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.resps.Tuple;

/**
 * The writer against the shared real Redis (127.0.0.1:6379), each test under its own random key prefix. A
 * fresh prefix has no {@code P:_mark}: the writer writes plain. {@link #restart} stands for a restore: a new
 * writer that finds the mark and guards totals and windows up to it until Redis is not ahead.
 */
class RedisSinkWriterIT {
    /** A window start of the recent past, so that keys with a fixed expiry (end + retention) still live. */
    private static final long NOW_WINDOW = System.currentTimeMillis() / 3_600_000 * 3_600_000;

    private String prefix;
    private RedisKeys keys;
    private Jedis redis;
    private TestWriterContext ctx;
    private RedisSinkWriter writer;

    @BeforeEach
    void setUp() throws Exception {
        prefix = RedisTestSupport.randomPrefix();
        keys = new RedisKeys(prefix);
        redis = new Jedis("127.0.0.1", 6379);
        ctx = new TestWriterContext();
        writer = TestWriterContext.writer(sink().build(), ctx);
    }

    private RedisSink.Builder sink() {
        return RedisSink.builder()
                .setUrl(RedisTestSupport.SHARED_URL)
                .setKeyPrefix(prefix)
                .setRetryTimeout(Duration.ofSeconds(5));
    }

    @AfterEach
    void tearDown() throws Exception {
        if (writer != null) writer.close();
        RedisTestSupport.deleteAll(redis, prefix);
        redis.close();
    }

    /** A new writer, as after a restore: it reads {@code P:_mark} (set here if absent) before its first write. */
    private void restart() throws Exception {
        writer.close();
        if (redis.get(keys.mark()) == null) redis.set(keys.mark(), Long.toString(NOW_WINDOW + 86_400_000L));
        writer = TestWriterContext.writer(sink().build(), new TestWriterContext());
    }

    private RedisWrite count(String counter, long value, long version, boolean monotone) {
        String k = keys.total(counter);
        return RedisWrite.count(k, keys.versionOf(counter, k), value, version, monotone, RedisWrite.NO_WINDOW, 0);
    }

    private RedisWrite window(String counter, Resolution r, long start, long value, long version, boolean monotone) {
        String k = keys.window(counter, r, start);
        return RedisWrite.count(
                k, keys.versionOf(counter, k), value, version, monotone, start, r.expireAtMillis(start));
    }

    private RedisWrite users(String key, long windowStart, long expireAt, String... users) {
        return RedisWrite.users(key, users, windowStart, expireAt);
    }

    private void write(RedisWrite... ws) throws Exception {
        for (RedisWrite w : ws) writer.write(w, null);
        writer.flush(false);
    }

    @Test
    void aRestoredWriterNeverLowersAValueThenWritesPlainOnceCaughtUp() throws Exception {
        String total = keys.total("a");
        write(count("a", 50, 5, false));
        assertThat(redis.get(total)).isEqualTo("50");
        assertThat(redis.get(keys.versionOf("a", total))).isEqualTo("5");
        assertThat(writer.metrics.writesPlain.getCount()).isEqualTo(1);
        assertThat(writer.metrics.writesGuarded.getCount()).isZero();

        // a replay after a restore: older versions, one flush each, all guarded and skipped
        restart();
        for (int v = 1; v <= 5; v++) write(count("a", v * 10, v, false));
        assertThat(redis.get(total)).isEqualTo("50");
        assertThat(writer.metrics.writesStale.getCount()).isEqualTo(5);
        assertThat(writer.metrics.writesGuarded.getCount()).isEqualTo(5);
        write(count("a", 65, 6, false)); // caught up (a negative delta: newer version wins although smaller)
        assertThat(redis.get(total)).isEqualTo("65");
        assertThat(writer.metrics.writesGuarded.getCount()).isEqualTo(6);
        write(count("a", 70, 7, false)); // from now on plain
        assertThat(redis.get(total)).isEqualTo("70");
        assertThat(redis.get(keys.versionOf("a", total))).isEqualTo("7");
        assertThat(writer.metrics.writesGuarded.getCount()).isEqualTo(6);
        assertThat(writer.metrics.writesPlain.getCount()).isEqualTo(1);
    }

    @Test
    void monotoneGuardedWritesSkipSmallerValuesEvenWithNewerVersion() throws Exception {
        String total = keys.total("m");
        write(count("m", 100, 10, true));
        restart();
        write(count("m", 40, 4, true));
        assertThat(redis.get(total)).isEqualTo("100");
        restart();
        write(count("m", 40, 4, false)); // not monotone, no version stored: the version decides
        assertThat(redis.get(total)).isEqualTo("40");
    }

    @Test
    void monotoneWritesCreateNoVersionButGuardedOnesRespectAndKeepOneThatExists() throws Exception {
        String total = keys.total("r");
        String v = keys.versionOf("r", total);
        write(count("r", 2, 1, true)); // positive-only so far: no bookkeeping
        assertThat(redis.get(total)).isEqualTo("2");
        assertThat(redis.exists(v)).isFalse();
        write(count("r", 1, 2, false)); // a negative delta: versioned from now on
        assertThat(redis.get(total)).isEqualTo("1");
        assertThat(redis.get(v)).isEqualTo("2");
        // a replay of the state before the negative delta: larger, but older than the stored version
        restart();
        write(count("r", 2, 1, true));
        assertThat(redis.get(total)).isEqualTo("1");
        write(count("r", 5, 3, true)); // newer and larger: applied, and the version it found kept current
        assertThat(redis.get(total)).isEqualTo("5");
        assertThat(redis.get(v)).isEqualTo("3");
    }

    @Test
    void valuesBeyondDoublePrecisionCompareExactly() throws Exception {
        String total = keys.total("big");
        long big = 9_007_199_254_740_993L; // 2^53 + 1: a double cannot tell it from 2^53
        write(count("big", big, big, false));
        restart();
        write(count("big", big - 1, big - 1, false));
        assertThat(redis.get(total)).isEqualTo(Long.toString(big));
        write(count("big", -big, big + 1, false));
        assertThat(redis.get(total)).isEqualTo(Long.toString(-big));
        restart();
        write(count("big", -big - 1, big + 2, true)); // monotone: -big-1 < -big, skipped
        assertThat(redis.get(total)).isEqualTo(Long.toString(-big));
    }

    @Test
    void windowsAboveTheMarkAreNeverGuardedAndTheMarkIsRaisedBeforeTheirWrites() throws Exception {
        write(window("w", Resolution.M1, NOW_WINDOW, 3, 3, true));
        long mark = Long.parseLong(redis.get(keys.mark()));
        assertThat(mark).isEqualTo(MarkGuard.markFor(NOW_WINDOW)).isGreaterThan(NOW_WINDOW);
        restart(); // finds the mark
        // at or below the mark: guarded; a replay of an older value is skipped
        write(window("w", Resolution.M1, NOW_WINDOW, 2, 2, true));
        assertThat(redis.get(keys.window("w", Resolution.M1, NOW_WINDOW))).isEqualTo("3");
        assertThat(writer.metrics.writesGuarded.getCount()).isEqualTo(1);
        // above the mark: plain, and the mark grows first
        long later = mark + 60_000;
        write(window("w", Resolution.M1, later, 1, 1, true));
        assertThat(writer.metrics.writesGuarded.getCount()).isEqualTo(1);
        assertThat(writer.metrics.writesPlain.getCount()).isEqualTo(1);
        assertThat(Long.parseLong(redis.get(keys.mark()))).isGreaterThanOrEqualTo(later);
        assertThat(redis.get(keys.window("w", Resolution.M1, later))).isEqualTo("1");
    }

    @Test
    void everyWindowKeyExpiresAtItsWindowEndPlusRetentionPlainOrGuarded() throws Exception {
        long start = NOW_WINDOW;
        for (Resolution r : Resolution.values()) {
            long s = r.windowStart(start);
            write(window("t", r, s, 5, 1, false)); // versioned: the version key too
            String k = keys.window("t", r, s);
            assertThat(redis.pexpireTime(k)).as(k).isEqualTo(s + r.sizeMillis + r.ttlMillis);
            assertThat(redis.pexpireTime(keys.versionOf("t", k))).isEqualTo(s + r.sizeMillis + r.ttlMillis);
        }
        restart();
        String k = keys.window("t", Resolution.M1, start);
        write(window("t", Resolution.M1, start, 6, 2, false)); // guarded, applied: the same expiry
        assertThat(writer.metrics.writesGuarded.getCount()).isEqualTo(1);
        assertThat(redis.get(k)).isEqualTo("6");
        assertThat(redis.pexpireTime(k)).isEqualTo(Resolution.M1.expireAtMillis(start));
        assertThat(redis.pexpireTime(keys.versionOf("t", k))).isEqualTo(Resolution.M1.expireAtMillis(start));
        write(count("t", 1, 1, false));
        assertThat(redis.pexpireTime(keys.total("t"))).isEqualTo(-1L);
        assertThat(redis.pexpireTime(keys.versionOf("t", keys.total("t")))).isEqualTo(-1L);
    }

    @Test
    void usersArePfaddedOncePerKeyPerFlushAndEqualAPfaddBuiltKeyByteForByte() throws Exception {
        String u = keys.uniques("u", Resolution.H1, NOW_WINDOW);
        long at = Resolution.H1.expireAtMillis(NOW_WINDOW);
        // counted from the writer's start: its early connection (GET P:_mark, SCRIPT LOAD, the epoch) runs on its
        // I/O thread, before or after any line here, and always before the first batch
        writer.write(users(u, NOW_WINDOW, at, "alice", "bob"), null);
        writer.write(users(u, NOW_WINDOW, at, "bob", "carol"), null);
        writer.write(users(keys.uniquesAll("u"), RedisWrite.NO_WINDOW, 0, "alice"), null);
        writer.flush(false);
        // GET P:_mark, SCRIPT LOAD and the epoch's SET NX + GET on connecting, the epoch's GET with the batch, PFADD +
        // PEXPIREAT, PFADD
        assertThat(writer.metrics.commandsSent.getCount()).isEqualTo(2 + 2 + 1 + 2 + 1);
        assertThat(writer.metrics.writesCoalesced.getCount()).isEqualTo(1);
        String ref = prefix + ":_ref";
        redis.pfadd(ref, "carol", "alice", "bob");
        assertThat(redis.get(u.getBytes())).isEqualTo(redis.get(ref.getBytes()));
        assertThat(redis.pexpireTime(u)).isEqualTo(at);
        assertThat(redis.pexpireTime(keys.uniquesAll("u"))).isEqualTo(-1L);
        // a replay changes nothing
        restart();
        write(users(u, NOW_WINDOW, at, "alice"));
        assertThat(redis.get(u.getBytes())).isEqualTo(redis.get(ref.getBytes()));
        assertThat(redis.pfcount(u)).isEqualTo(3L);
    }

    @Test
    void coalescesPerKeyAndSendsPlainCommandsWithoutAMark() throws Exception {
        // counted from the writer's start: its early connection (GET P:_mark, SCRIPT LOAD, the epoch) runs on its
        // I/O thread, before or after any line here, and always before the first batch
        List<RedisWrite> ws = new ArrayList<>();
        for (int c = 0; c < 20; c++) {
            String counter = "post:" + c + ":likes";
            for (int v = 1; v <= 10; v++) ws.add(count(counter, v * 3L, v, true));
            for (Resolution r : Resolution.values()) {
                ws.add(window(counter, r, r.windowStart(NOW_WINDOW), 7, 1, true));
                ws.add(window(counter, r, r.windowStart(NOW_WINDOW), 9, 2, true));
            }
        }
        ws.add(RedisWrite.max(keys.watermark(), NOW_WINDOW));
        write(ws.toArray(new RedisWrite[0]));
        // GET P:_mark + SCRIPT LOAD + the epoch's SET NX and GET, the mark raised, the epoch's GET with the batch, one
        // SET
        // per key, the watermark's script call
        assertThat(writer.metrics.commandsSent.getCount())
                .isEqualTo(2 + 2 + 1 + 1 + 20 * (1 + Resolution.values().length) + 1);
        assertThat(writer.metrics.writesCoalesced.getCount()).isEqualTo(20 * 9 + 20 * Resolution.values().length);
        assertThat(writer.metrics.writesGuarded.getCount()).isZero();
        for (int c = 0; c < 20; c++) {
            String counter = "post:" + c + ":likes";
            assertThat(redis.get(keys.total(counter))).isEqualTo("30");
            assertThat(redis.get(keys.window(counter, Resolution.M1, Resolution.M1.windowStart(NOW_WINDOW))))
                    .isEqualTo("9");
        }
        // and the mark
        assertThat(writer.metrics.keysWritten.getCount()).isEqualTo(20 * (1 + Resolution.values().length) + 1 + 1);
    }

    @Test
    void zsetIsReplacedAtomicallyWithVersionCheck() throws Exception {
        String top = keys.top("post", Resolution.M1, NOW_WINDOW);
        String tv = keys.versionOfGlobal(top);
        long at = Resolution.M1.expireAtMillis(NOW_WINDOW);
        write(RedisWrite.zset(top, tv, 2, new String[] {"a", "b", "c"}, new double[] {3, 2, 1}, NOW_WINDOW, at));
        assertThat(redis.zrevrangeWithScores(top, 0, -1))
                .extracting(Tuple::getElement)
                .containsExactly("a", "b", "c");
        assertThat(redis.pexpireTime(top)).isEqualTo(at);
        assertThat(redis.pexpireTime(tv)).isEqualTo(at);

        write(RedisWrite.zset(top, tv, 1, new String[] {"x"}, new double[] {9}, NOW_WINDOW, at)); // older: skipped
        assertThat(redis.zcard(top)).isEqualTo(3);

        write(RedisWrite.zset(
                top, tv, 3, new String[] {"d", "e"}, new double[] {5.5, Double.POSITIVE_INFINITY}, NOW_WINDOW, at));
        assertThat(redis.zrevrangeWithScores(top, 0, -1))
                .containsExactly(new Tuple("e", Double.POSITIVE_INFINITY), new Tuple("d", 5.5));
        assertThat(redis.get(tv)).isEqualTo("3");
        assertThat(redis.pexpireTime(top)).isEqualTo(at);

        write(RedisWrite.zset(top, tv, 4, new String[0], new double[0], NOW_WINDOW, at));
        assertThat(redis.exists(top)).isFalse();

        // an untagged key without version (trending)
        String trending = keys.trending("post");
        write(RedisWrite.zset(trending, null, 0, new String[] {"p1"}, new double[] {0.25}, RedisWrite.NO_WINDOW, 0));
        assertThat(redis.zscore(trending, "p1")).isEqualTo(0.25);
        assertThat(redis.pttl(trending)).isEqualTo(-1L);
    }

    @Test
    void keysOfAnotherTypeAreRejectedOnceEachWhileEveryOtherKeyIsWrittenPlainOrGuarded() throws Exception {
        String badTotal = keys.total("bad");
        String badUniques = keys.uniquesAll("worse");
        String badWindow = keys.window("worst", Resolution.M1, NOW_WINDOW);
        redis.hset(badTotal, "f", "v");
        redis.set(badUniques, "not a HyperLogLog");
        redis.rpush(badWindow, "x");
        List<RedisWrite> ws = new ArrayList<>();
        for (String c : List.of("a", "bad", "b", "worse", "worst", "c")) {
            ws.add(count(c, 5, 1, true));
            ws.add(window(c, Resolution.M1, NOW_WINDOW, 5, 1, true));
            ws.add(users(keys.uniquesAll(c), RedisWrite.NO_WINDOW, 0, "u1", "u2"));
        }
        write(ws.toArray(new RedisWrite[0]));
        for (String c : List.of("a", "bad", "b", "worse", "worst", "c")) {
            if (!c.equals("bad")) assertThat(redis.get(keys.total(c))).isEqualTo("5");
            if (!c.equals("worst"))
                assertThat(redis.get(keys.window(c, Resolution.M1, NOW_WINDOW))).isEqualTo("5");
            if (!c.equals("worse"))
                assertThat(redis.pfcount(keys.uniquesAll(c))).isEqualTo(2L);
        }
        // the foreign keys are left as they were, and reported once each
        assertThat(redis.hgetAll(badTotal)).isEqualTo(java.util.Map.of("f", "v"));
        assertThat(redis.get(badUniques)).isEqualTo("not a HyperLogLog");
        assertThat(redis.lrange(badWindow, 0, -1)).containsExactly("x");
        assertThat(writer.metrics.keysRejected.getCount()).isEqualTo(3);
        assertThat(writer.metrics.firstRejected).isNotNull();
        assertThat(writer.heldWatermark()).isEqualTo(NOW_WINDOW);
        // the next flushes write the good keys again and report nobody twice; guarded writes reject the same way
        write(count("a", 6, 2, true), count("bad", 6, 2, true), users(badUniques, RedisWrite.NO_WINDOW, 0, "u3"));
        assertThat(redis.get(keys.total("a"))).isEqualTo("6");
        assertThat(writer.metrics.keysRejected.getCount()).isEqualTo(3);
        restart();
        write(count("a", 7, 3, true), count("bad", 7, 3, true));
        assertThat(writer.metrics.writesGuarded.getCount()).isEqualTo(2);
        assertThat(redis.get(keys.total("a"))).isEqualTo("7");
        assertThat(redis.hgetAll(badTotal)).isEqualTo(java.util.Map.of("f", "v"));
        assertThat(writer.metrics.keysRejected.getCount()).isEqualTo(1);
    }

    @Test
    void aNonIntegerVersionRejectsTheVersionKeyOnly() throws Exception {
        restart();
        String total = keys.total("bad");
        String v = keys.versionOf("bad", total);
        redis.set(v, "banana");
        write(count("bad", 1, 1, false), count("good", 1, 1, false));
        assertThat(redis.get(total)).isNull();
        assertThat(redis.get(v)).isEqualTo("banana");
        assertThat(redis.get(keys.total("good"))).isEqualTo("1");
        assertThat(writer.metrics.keysRejected.getCount()).isEqualTo(1);
    }

    @Test
    void aServerThatLostTheScriptRunsTheCallByEval() throws Exception {
        restart();
        write(count("s", 1, 1, true)); // connected, script loaded
        redis.scriptFlush();
        write(count("s2", 2, 1, true)); // guarded (the mark exists): EVALSHA meets NOSCRIPT, EVAL runs it
        assertThat(redis.get(keys.total("s2"))).isEqualTo("2");
        assertThat(writer.metrics.writesGuarded.getCount()).isEqualTo(2);
    }

    @Test
    void aSiblingThatStartedTogetherDoesNotGuardWhatTheOtherMarked() throws Exception {
        // both writers read the mark when they start (ahead of their first batch): none yet
        RedisSinkWriter sibling = TestWriterContext.writer(sink().build(), new TestWriterContext());
        try {
            for (int i = 0;
                    i < 500
                            && (sibling.metrics.commandsSent.getCount() < 2
                                    || writer.metrics.commandsSent.getCount() < 2);
                    i++) Thread.sleep(10);
            write(window("a", Resolution.M1, NOW_WINDOW, 1, 1, true)); // this one raises the mark
            assertThat(redis.get(keys.mark())).isNotNull();
            sibling.write(window("b", Resolution.M1, NOW_WINDOW, 1, 1, true), null);
            sibling.write(count("b", 1, 1, true), null);
            sibling.flush(false);
            assertThat(sibling.metrics.writesGuarded.getCount()).isZero();
            assertThat(sibling.metrics.writesPlain.getCount()).isEqualTo(2);
        } finally {
            sibling.close();
        }
    }

    @Test
    void plainWritesOnlyModeNeitherGuardsNorMarks() throws Exception {
        writer.close();
        redis.set(keys.mark(), Long.toString(NOW_WINDOW + 86_400_000L));
        writer = TestWriterContext.writer(sink().setPlainWritesOnly(true).build(), ctx);
        write(count("f", 10, 10, true));
        write(count("f", 5, 5, true)); // the floor mode does go backwards: it is for measuring only
        write(window("f", Resolution.M1, NOW_WINDOW + 10 * 86_400_000L, 1, 1, true));
        assertThat(redis.get(keys.total("f"))).isEqualTo("5");
        assertThat(writer.metrics.writesGuarded.getCount()).isZero();
        assertThat(redis.get(keys.mark())).isEqualTo(Long.toString(NOW_WINDOW + 86_400_000L));
    }

    @Test
    void confirmedKeysAreBoundedAndBeyondStayGuarded() {
        ConfirmedKeys set = new ConfirmedKeys(1_000);
        for (long i = 0; i < 1_000; i++) assertThat(set.add(i * 7919)).isTrue();
        assertThat(set.add(-1)).isFalse();
        assertThat(set.contains(-1)).isFalse();
        for (long i = 0; i < 1_000; i++) assertThat(set.contains(i * 7919)).isTrue();
        assertThat(set.size()).isEqualTo(1_000);
    }

    @Test
    void maxKeepsTheLargest() throws Exception {
        String wm = keys.watermark();
        write(RedisWrite.max(wm, 100));
        write(RedisWrite.max(wm, 50));
        assertThat(redis.get(wm)).isEqualTo("100");
        write(RedisWrite.max(wm, 300), RedisWrite.max(wm, 200));
        assertThat(redis.get(wm)).isEqualTo("300");
        assertThat(redis.pttl(wm)).isEqualTo(-1L);
    }

    /**
     * A rebuild's sketches of a counter's windows (two 1d windows in one flush) merged into {@code u:all}: it
     * keeps the users PFADDed to it and gains theirs, with no expiry.
     */
    @Test
    void sketchesMergeIntoUAllBesideItsUsersWithoutExpiry() throws Exception {
        String all = keys.uniquesAll("s");
        String scratch = prefix + ":_scratch";
        write(users(all, RedisWrite.NO_WINDOW, 0, "user-0", "user-1", "user-999"));
        writer.write(RedisWrite.sketch(all, sketchOf(scratch, 0, 300), RedisWrite.NO_WINDOW, 0), null);
        writer.write(RedisWrite.sketch(all, sketchOf(scratch, 200, 600), RedisWrite.NO_WINDOW, 0), null);
        writer.flush(false);
        String ref = prefix + ":_ref";
        String[] expected = new String[601];
        for (int i = 0; i < 600; i++) expected[i] = "user-" + i;
        expected[600] = "user-999";
        redis.pfadd(ref, expected);
        assertThat(redis.pfcount(all)).isEqualTo(redis.pfcount(ref));
        assertThat(redis.pexpireTime(all)).isEqualTo(-1L);
        assertThat(redis.exists(RedisKeys.stagingKeyOf(all)))
                .as("the staging key, dropped")
                .isFalse();
        redis.del(ref);
    }

    private byte[] sketchOf(String scratch, int from, int to) {
        String[] users = new String[to - from];
        for (int i = from; i < to; i++) users[i - from] = "user-" + i;
        redis.pfadd(scratch, users);
        byte[] bytes = redis.get(scratch.getBytes());
        redis.del(scratch);
        return bytes;
    }

    @Test
    void theWatermarkFollowsItsWritesAndStaysBelowAWindowWhoseKeyWasRejected() throws Exception {
        String ok = keys.window("ok", Resolution.M1, 60_000);
        write(RedisWrite.count(ok, keys.versionOf("ok", ok), 1, 1, true, 60_000, 0));
        writer.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(200_000));
        writer.flush(false);
        assertThat(redis.get(keys.watermark())).isEqualTo("200000");
        assertThat(writer.heldWatermark()).isEqualTo(Long.MAX_VALUE);

        // a window key of another type: rejected, and the watermark no longer passes its window's start
        String bad = keys.window("bad", Resolution.M5, 300_000);
        redis.hset(bad, "f", "v");
        String good = keys.window("good", Resolution.M5, 300_000);
        write(
                RedisWrite.count(bad, keys.versionOf("bad", bad), 4, 1, true, 300_000, 0),
                RedisWrite.count(good, keys.versionOf("good", good), 4, 1, true, 300_000, 0));
        writer.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(900_000));
        writer.flush(false);
        assertThat(redis.get(good)).isEqualTo("4");
        assertThat(writer.heldWatermark()).isEqualTo(300_000);
        assertThat(redis.get(keys.watermark())).isEqualTo("300000");
        // not even the end of input claims that window final
        writer.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(Long.MAX_VALUE));
        writer.flush(true);
        assertThat(redis.get(keys.watermark())).isEqualTo("300000");
        // a rejected total holds nothing: it belongs to no window
        redis.hset(keys.total("t"), "f", "v");
        write(count("t", 1, 1, true));
        assertThat(writer.metrics.keysRejected.getCount()).isEqualTo(2);
        assertThat(writer.heldWatermark()).isEqualTo(300_000);
    }

    @Test
    void theAllowedLatenessIsWrittenWithTheFirstWatermarkAndAgainAfterALoss() throws Exception {
        String ok = keys.window("ok", Resolution.M1, 60_000);
        write(RedisWrite.count(ok, keys.versionOf("ok", ok), 1, 1, true, 60_000, 0));
        writer.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(120_000));
        writer.flush(false);
        assertThat(redis.get(keys.allowedLateness()))
                .as("a sink not given the lateness")
                .isNull();

        writer.close();
        writer = TestWriterContext.writer(
                sink().setAllowedLateness(Duration.ofSeconds(90)).build(), new TestWriterContext());
        write(RedisWrite.count(ok, keys.versionOf("ok", ok), 2, 2, true, 60_000, 0));
        writer.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(200_000));
        writer.flush(false);
        assertThat(redis.get(keys.allowedLateness())).isEqualTo("90000");

        // Redis loses the prefix's keys: the next batch sees the epoch gone and writes the lateness again
        RedisTestSupport.deleteAll(redis, prefix);
        write(RedisWrite.count(ok, keys.versionOf("ok", ok), 3, 3, true, 60_000, 0));
        writer.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(260_000));
        writer.flush(false);
        assertThat(writer.metrics.dataLost.getCount()).isEqualTo(1);
        assertThat(redis.get(keys.allowedLateness())).isEqualTo("90000");
        assertThat(redis.get(keys.watermark())).isEqualTo("260000");
    }

    @Test
    void aRestoredWriterKeepsTheHoldAndReportsNoKeyAgain() throws Exception {
        String bad = keys.window("bad", Resolution.M1, 120_000);
        redis.hset(bad, "f", "v");
        write(RedisWrite.count(bad, keys.versionOf("bad", bad), 4, 1, true, 120_000, 0));
        assertThat(writer.metrics.keysRejected.getCount()).isEqualTo(1);
        assertThat(writer.snapshotState(1)).hasSize(1);
        RedisWriterState.Serializer serializer = new RedisWriterState.Serializer();
        byte[] state = serializer.serialize(writer.snapshotState(1).get(0));
        writer.close();

        // the restart: the window's write came before the checkpoint and is not replayed
        RedisSink restoring = sink().build();
        writer = (RedisSinkWriter) restoring.restoreWriter(
                new TestWriterContext(), List.of(serializer.deserialize(serializer.getVersion(), state)));
        assertThat(writer.heldWatermark()).isEqualTo(120_000);
        write(RedisWrite.count(bad, keys.versionOf("bad", bad), 5, 2, true, 120_000, 0), count("good", 1, 1, true));
        writer.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(Long.MAX_VALUE));
        writer.flush(true);
        assertThat(redis.get(keys.watermark())).isEqualTo("120000");
        assertThat(writer.metrics.keysRejected.getCount())
                .as("reported before the restart")
                .isZero();
        assertThat(redis.get(keys.total("good"))).isEqualTo("1");
        // a writer with nothing rejected checkpoints nothing
        RedisSinkWriter clean = TestWriterContext.writer(sink().build(), new TestWriterContext());
        assertThat(clean.snapshotState(1)).isEmpty();
        clean.close();
    }

    @Test
    void windowStartsAreReadFromKeyNames() {
        assertThat(RedisKeys.windowStartMillis(keys.window("a:b", Resolution.H1, 3_600_000)))
                .isEqualTo(3_600_000);
        assertThat(RedisKeys.windowStartMillis(keys.uniques("a", Resolution.D1, 86_400_000)))
                .isEqualTo(86_400_000);
        String w = keys.window("a", Resolution.S5, 5_000);
        assertThat(RedisKeys.windowStartMillis(keys.versionOf("a", w))).isEqualTo(5_000);
        assertThat(RedisKeys.windowStartMillis(keys.top("ns", Resolution.M1, 60_000)))
                .isEqualTo(60_000);
        assertThat(RedisKeys.windowStartMillis(keys.total("x:1m:60"))).isEqualTo(Long.MIN_VALUE);
        assertThat(RedisKeys.windowStartMillis(keys.uniquesAll("a"))).isEqualTo(Long.MIN_VALUE);
        assertThat(RedisKeys.windowStartMillis(keys.watermark())).isEqualTo(Long.MIN_VALUE);
        assertThat(RedisKeys.windowStartMillis(keys.trending("ns"))).isEqualTo(Long.MIN_VALUE);
    }

    @Test
    void flushesOnTimerAndOnBufferSize() throws Exception {
        writer.close();
        writer = TestWriterContext.writer(
                sink().setFlushInterval(Duration.ofMillis(200))
                        .setMaxBufferedKeys(3)
                        .build(),
                ctx);
        String total = keys.total("timer");
        writer.write(count("timer", 1, 1, true), null);
        ctx.advance(199);
        assertThat(redis.get(total)).isNull();
        ctx.advance(1); // sent: applied by the writer's I/O thread while the task goes on
        assertThat(eventually(() -> redis.get(total))).isEqualTo("1");
        assertThat(ctx.pendingTimers()).isEqualTo(1); // rescheduled

        writer.write(count("s1", 1, 1, true), null);
        writer.write(count("s2", 1, 1, true), null);
        assertThat(redis.get(keys.total("s1"))).isNull();
        writer.write(count("s3", 1, 1, true), null); // third key: the buffer is full
        assertThat(writer.bufferedKeys()).isZero();
        assertThat(eventually(() -> redis.get(keys.total("s1")))).isEqualTo("1");
        writer.write(count("s4", 1, 1, true), null);
        writer.flush(false); // a flush returns once everything is in Redis
        assertThat(redis.get(keys.total("s4"))).isEqualTo("1");
    }

    /** The value once it is there (the I/O thread applies a batch while the task goes on), or null after 10 s. */
    private static String eventually(java.util.function.Supplier<String> read) throws InterruptedException {
        for (int i = 0; i < 1_000; i++) {
            String v = read.get();
            if (v != null) return v;
            Thread.sleep(10);
        }
        return null;
    }

    @Test
    void badWritesAreRejectedAtWriteNamingTheKey() {
        String top = keys.top("x", Resolution.values()[1], 0);
        assertThatThrownBy(() -> writer.write(
                        RedisWrite.zset(top, null, 1, new String[] {"a"}, new double[] {Double.NaN}, 0, 0), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(top);
        assertThatThrownBy(() -> writer.write(RedisWrite.users(top, new String[0], 0, 0), null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(top);
    }

    @Test
    void onlyContractKeysAreWritten() throws Exception {
        String w = keys.window("k", Resolution.S5, NOW_WINDOW);
        write(
                count("k", 1, 1, false),
                window("k", Resolution.S5, NOW_WINDOW, 1, 1, true),
                users(keys.uniquesAll("k"), RedisWrite.NO_WINDOW, 0, "a"),
                RedisWrite.max(keys.watermark(), 5));
        for (String k : RedisTestSupport.keysOf(redis, prefix)) {
            assertThat(k)
                    .matches(java.util.regex.Pattern.quote(prefix) + ":(\\{k\\}:(total|_v:.*|" + Resolution.S5.label
                            + ":" + NOW_WINDOW / 1000 + "|u:all)|meta:watermark|_mark|_epoch)");
        }
        assertThat(redis.exists(w)).isTrue();
    }

    @Test
    void packsSeveralCountersIntoOneScriptCallWhenAskedAndAppliesThemAll() throws Exception {
        writer.close();
        redis.set(keys.mark(), Long.toString(NOW_WINDOW + 86_400_000L));
        writer = TestWriterContext.writer(sink().setCountersPerCall(8).build(), ctx);
        // counted from the writer's start: its early connection (GET P:_mark, SCRIPT LOAD, the epoch) runs on its
        // I/O thread, before or after any line here, and always before the first batch
        List<RedisWrite> ws = new ArrayList<>();
        for (int c = 0; c < 20; c++) {
            String counter = "p:" + c;
            ws.add(count(counter, 3, 1, true));
            ws.add(users(keys.uniquesAll(counter), RedisWrite.NO_WINDOW, 0, "x", "y"));
        }
        ws.add(RedisWrite.max(keys.watermark(), 7));
        write(ws.toArray(new RedisWrite[0]));
        // GET P:_mark + SCRIPT LOAD + the epoch's SET NX and GET, the epoch's GET with the batch, 20 PFADD, 20 guarded
        // counters in calls of 8, 8 and 4, the watermark alone
        assertThat(writer.metrics.commandsSent.getCount()).isEqualTo(2 + 2 + 1 + 20 + 3 + 1);
        for (int c = 0; c < 20; c++) {
            assertThat(redis.get(keys.total("p:" + c))).isEqualTo("3");
            assertThat(redis.pfcount(keys.uniquesAll("p:" + c))).isEqualTo(2L);
        }
        assertThat(redis.get(keys.watermark())).isEqualTo("7");
    }
}
