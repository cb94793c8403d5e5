package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.model.Resolution;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.resps.Tuple;

/** The writer against the shared real Redis (127.0.0.1:6379), each test under its own random key prefix. */
class RedisSinkWriterTest {
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
        writer = RedisTestSupport.writer(sink().build(), ctx);
    }

    private RedisSink.Builder sink() {
        return RedisSink.builder().setUrl(RedisTestSupport.SHARED_URL).setKeyPrefix(prefix)
                .setRetryTimeout(Duration.ofSeconds(5));
    }

    @AfterEach
    void tearDown() throws Exception {
        if (writer != null) writer.close();
        RedisTestSupport.deleteAll(redis, prefix);
        redis.close();
    }

    private RedisWrite count(String counter, long value, long version, boolean monotone, long ttl) {
        String k = keys.total(counter);
        return RedisWrite.count(k, keys.versionOf(counter, k), value, version, monotone, ttl);
    }

    private void write(RedisWrite... ws) throws Exception {
        for (RedisWrite w : ws) writer.write(w, null);
        writer.flush(false);
    }

    @Test
    void versionedCountNeverGoesBackwards() throws Exception {
        String total = keys.total("a");
        write(count("a", 50, 5, false, 0));
        assertThat(redis.get(total)).isEqualTo("50");
        assertThat(redis.get(keys.versionOf("a", total))).isEqualTo("5");

        write(count("a", 30, 3, false, 0));
        assertThat(redis.get(total)).isEqualTo("50");
        assertThat(writer.writesStale.getCount()).isEqualTo(1);

        write(count("a", 50, 5, false, 0)); // same version again: skipped, no change
        assertThat(redis.get(total)).isEqualTo("50");

        write(count("a", 70, 7, false, 0));
        assertThat(redis.get(total)).isEqualTo("70");

        // a replay after a restart from a checkpoint: lower versions, one flush each
        for (int v = 1; v <= 7; v++) write(count("a", v * 10, v, false, 0));
        assertThat(redis.get(total)).isEqualTo("70");
        assertThat(redis.get(keys.versionOf("a", total))).isEqualTo("7");

        write(count("a", 65, 8, false, 0)); // a negative delta: newer version wins although smaller
        assertThat(redis.get(total)).isEqualTo("65");
    }

    @Test
    void monotoneSkipsSmallerValuesEvenWithNewerVersion() throws Exception {
        String total = keys.total("m");
        write(count("m", 100, 10, true, 0));
        redis.del(keys.versionOf("m", total)); // version bookkeeping lost
        write(count("m", 40, 4, true, 0));
        assertThat(redis.get(total)).isEqualTo("100");
        write(count("m", 40, 4, false, 0)); // not monotone: the version decides
        assertThat(redis.get(total)).isEqualTo("40");
    }

    @Test
    void monotoneWritesCreateNoVersionButRespectAndKeepOneThatExists() throws Exception {
        String total = keys.total("r");
        String v = keys.versionOf("r", total);
        write(count("r", 2, 1, true, 0)); // positive-only so far: no bookkeeping
        assertThat(redis.get(total)).isEqualTo("2");
        assertThat(redis.exists(v)).isFalse();
        write(count("r", 1, 2, false, 0)); // a negative delta: versioned from now on
        assertThat(redis.get(total)).isEqualTo("1");
        assertThat(redis.get(v)).isEqualTo("2");
        // a replay of the state before the negative delta: larger, but older than the stored version
        write(count("r", 2, 1, true, 0));
        assertThat(redis.get(total)).isEqualTo("1");
        write(count("r", 5, 3, true, 0)); // newer and larger: applied, and the version it found kept current
        assertThat(redis.get(total)).isEqualTo("5");
        assertThat(redis.get(v)).isEqualTo("3");
    }

    @Test
    void valuesBeyondDoublePrecisionCompareExactly() throws Exception {
        String total = keys.total("big");
        long big = 9_007_199_254_740_993L; // 2^53 + 1: a double cannot tell it from 2^53
        write(count("big", big, big, false, 0));
        write(count("big", big - 1, big - 1, false, 0));
        assertThat(redis.get(total)).isEqualTo(Long.toString(big));
        write(count("big", -big, big + 1, false, 0));
        assertThat(redis.get(total)).isEqualTo(Long.toString(-big));
        write(count("big", -big - 1, big + 2, true, 0)); // monotone: -big-1 < -big, skipped
        assertThat(redis.get(total)).isEqualTo(Long.toString(-big));
    }

    @Test
    void ttlOnValueAndVersionKeys() throws Exception {
        String w = keys.window("t", Resolution.values()[0], 1_700_000_000_000L);
        String wv = keys.versionOf("t", w);
        write(RedisWrite.count(w, wv, 5, 1, false, 7_200_000L)); // versioned (monotone writes create no version)
        assertThat(redis.pttl(w)).isBetween(7_100_000L, 7_200_000L);
        assertThat(redis.pttl(wv)).isBetween(7_100_000L, 7_200_000L);

        redis.pexpire(w, 1_000_000L);
        redis.pexpire(wv, 1_000_000L);
        write(RedisWrite.count(w, wv, 6, 2, true, 7_200_000L)); // expires that long after its last write; the version found is kept
        assertThat(redis.pttl(w)).isGreaterThan(7_100_000L);
        assertThat(redis.pttl(wv)).isGreaterThan(7_100_000L);

        String total = keys.total("t");
        write(count("t", 1, 1, false, 0));
        assertThat(redis.pttl(total)).isEqualTo(-1L);
        assertThat(redis.pttl(keys.versionOf("t", total))).isEqualTo(-1L);
    }

    @Test
    void coalescesPerKeyAndSendsOneCallPerCounter() throws Exception {
        long before = writer.commandsSent.getCount();
        List<RedisWrite> ws = new ArrayList<>();
        for (int c = 0; c < 20; c++) {
            String counter = "post:" + c + ":likes";
            for (int v = 1; v <= 10; v++) ws.add(count(counter, v * 3L, v, true, 0));
            for (Resolution r : Resolution.values()) {
                String k = keys.window(counter, r, 1_700_000_000_000L);
                ws.add(RedisWrite.count(k, keys.versionOf(counter, k), 7, 1, true, 60_000));
                ws.add(RedisWrite.count(k, keys.versionOf(counter, k), 9, 2, true, 60_000));
            }
        }
        ws.add(RedisWrite.max(keys.watermark(), 1_700_000_000_000L));
        write(ws.toArray(new RedisWrite[0]));
        // 20 counters + the watermark, + 1 SCRIPT LOAD on the first connection
        assertThat(writer.commandsSent.getCount() - before).isEqualTo(20 + 1 + 1);
        assertThat(writer.writesCoalesced.getCount()).isEqualTo(20 * 9 + 20 * Resolution.values().length);
        for (int c = 0; c < 20; c++) {
            String counter = "post:" + c + ":likes";
            assertThat(redis.get(keys.total(counter))).isEqualTo("30");
            assertThat(redis.get(keys.window(counter, Resolution.values()[1], 1_700_000_000_000L))).isEqualTo("9");
        }
        assertThat(writer.keysWritten.getCount()).isEqualTo(20 * (1 + Resolution.values().length) + 1);
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

    private byte[] sketchOf(String scratch, int from, int to) {
        String[] users = new String[to - from];
        for (int i = from; i < to; i++) users[i - from] = "user-" + i;
        redis.pfadd(scratch, users);
        byte[] bytes = redis.get(scratch.getBytes());
        redis.del(scratch);
        return bytes;
    }

    @Test
    void hllMergeEqualsPfmergeAndNeverShrinks() throws Exception {
        String scratch = prefix + ":_scratch";
        byte[] a = sketchOf(scratch, 0, 1000);
        byte[] b = sketchOf(scratch, 500, 2000);
        byte[] small = sketchOf(scratch, 0, 3);
        byte[] sparse = sketchOf(scratch, 5000, 5010);

        // reference: PFADD-built keys merged by PFMERGE
        String refA = prefix + ":_refA";
        String refB = prefix + ":_refB";
        String ref = prefix + ":_ref";
        redis.set(refA.getBytes(), a);
        redis.set(refB.getBytes(), b);
        redis.pfmerge(ref, refA, refB);

        String u = keys.uniques("h", Resolution.values()[3], 1_700_000_000_000L);
        RedisWrite w1 = RedisWrite.hll(u, a, 3_600_000L);
        RedisWrite w2 = RedisWrite.hll(u, b, 3_600_000L);
        write(w1, w2); // two sketches of one key in one flush
        assertThat(redis.pfcount(u)).isEqualTo(redis.pfcount(ref));
        assertSameRegisters(redis.get(u.getBytes()), redis.get(ref.getBytes()));
        assertThat(redis.pttl(u)).isBetween(3_500_000L, 3_600_000L);
        assertThat(redis.exists(prefix + ":{h}:_tmp")).isFalse();

        byte[] full = redis.get(u.getBytes());
        write(RedisWrite.hll(u, small, 3_600_000L)); // replay of a smaller sketch: nothing shrinks
        write(RedisWrite.hll(u, a, 3_600_000L));
        assertSameRegisters(redis.get(u.getBytes()), full);
        assertThat(redis.pfcount(u)).isEqualTo(redis.pfcount(ref));

        // merging into a key built by PFADD, with a sparse sketch
        String all = keys.uniquesAll("h");
        redis.pfadd(all, "user-5000", "someone-else");
        write(RedisWrite.hll(all, sparse, 0));
        String refAll = prefix + ":_refAll";
        redis.pfadd(refAll, "someone-else");
        for (int i = 5000; i < 5010; i++) redis.pfadd(refAll, "user-" + i);
        assertThat(redis.pfcount(all)).isEqualTo(redis.pfcount(refAll));
        assertThat(redis.pttl(all)).isEqualTo(-1L);
    }

    /** Same encoding and registers; bytes 8..15 are PFCOUNT's cardinality cache, which may differ. */
    private static void assertSameRegisters(byte[] actual, byte[] expected) {
        assertThat(actual[4]).as("encoding").isEqualTo(expected[4]);
        assertThat(java.util.Arrays.equals(java.util.Arrays.copyOfRange(actual, 16, actual.length),
                java.util.Arrays.copyOfRange(expected, 16, expected.length))).as("registers equal").isTrue();
    }

    private static byte[] markOf(byte[] value) {
        return java.util.Arrays.copyOfRange(value, RedisApplyScript.LINEAGE_OFFSET, RedisApplyScript.LINEAGE_OFFSET + RedisApplyScript.LINEAGE_BYTES);
    }

    @Test
    void growingHllIsReplacedByItsOwnWriterAndMergedByAnyOtherNeverShrinking() throws Exception {
        String scratch = prefix + ":_scratch";
        byte[] a = sketchOf(scratch, 0, 10);
        byte[] b = sketchOf(scratch, 0, 40); // a grown sketch of the same operator
        byte[] c = sketchOf(scratch, 100, 103); // after a restore: a different, smaller sketch
        byte[] d = sketchOf(scratch, 100, 110);
        String u = keys.uniques("h", Resolution.H1, 1_700_000_000_000L);
        long ttl = 3_600_000L;

        write(RedisWrite.growingHll(u, a.clone(), ttl)); // new key: taken as it is, with this writer's mark
        byte[] stored = redis.get(u.getBytes());
        byte[] mark = markOf(stored);
        assertThat(mark).isNotEqualTo(new byte[3]);
        assertSameRegisters(stored, a);
        assertThat(redis.pfcount(u)).isEqualTo(10);
        write(RedisWrite.growingHll(u, a.clone(), ttl), RedisWrite.growingHll(u, b.clone(), ttl)); // the newest replaces
        stored = redis.get(u.getBytes());
        assertSameRegisters(stored, b);
        assertThat(markOf(stored)).isEqualTo(mark);
        assertThat(stored[4]).as("sparse encoding").isEqualTo((byte) 1);
        assertThat(redis.pttl(u)).isBetween(3_500_000L, ttl);
        assertThat(RedisTestSupport.keysOf(redis, prefix)).as("no bookkeeping key per sketch").noneMatch(k -> k.contains(":_v:"));

        // a restarted operator has a new writer, hence another lineage: merged, never shrinks, mark cleared
        writer.close();
        writer = RedisTestSupport.writer(sink().build(), new TestWriterContext());
        String ref = prefix + ":_ref"; // what PFADD of every user written so far builds
        for (int i = 0; i < 40; i++) redis.pfadd(ref, "user-" + i);
        for (int i = 100; i < 103; i++) redis.pfadd(ref, "user-" + i);
        write(RedisWrite.growingHll(u, c.clone(), ttl));
        assertThat(redis.pfcount(u)).isEqualTo(redis.pfcount(ref));
        assertThat(markOf(redis.get(u.getBytes()))).as("merged: nobody's").isEqualTo(new byte[3]);
        for (int i = 103; i < 110; i++) redis.pfadd(ref, "user-" + i);
        write(RedisWrite.growingHll(u, d.clone(), ttl)); // still merged: the key holds more than this lineage has
        assertSameRegisters(redis.get(u.getBytes()), redis.get(ref.getBytes()));
        assertThat(markOf(redis.get(u.getBytes()))).isEqualTo(new byte[3]);
        assertThat(redis.pttl(u)).isBetween(3_500_000L, ttl);

        // the restored operator's sketch catches up (holds every register of the key): the key is its writer's again
        byte[] caughtUp = sketchOf(scratch, 0, 40);
        String both = prefix + ":_both";
        redis.set(both.getBytes(), caughtUp);
        for (int i = 100; i < 110; i++) redis.pfadd(both, "user-" + i);
        byte[] all110 = redis.get(both.getBytes());
        write(RedisWrite.growingHll(u, all110.clone(), ttl));
        byte[] taken = redis.get(u.getBytes());
        assertSameRegisters(taken, redis.get(ref.getBytes()));
        byte[] newMark = markOf(taken);
        assertThat(newMark).isNotEqualTo(new byte[3]).isNotEqualTo(mark);
        redis.pfadd(both, "user-200"); // and grows: replaced, not merged
        redis.pfadd(ref, "user-200");
        write(RedisWrite.growingHll(u, redis.get(both.getBytes()), ttl));
        assertSameRegisters(redis.get(u.getBytes()), redis.get(ref.getBytes()));
        assertThat(markOf(redis.get(u.getBytes()))).isEqualTo(newMark);
        assertThat(redis.pttl(u)).isBetween(3_500_000L, ttl);

        // a key built by PFADD is merged into, not replaced
        String all = keys.uniquesAll("h");
        redis.pfadd(all, "someone-else");
        write(RedisWrite.growingHll(all, a.clone(), 0));
        String refAll = prefix + ":_refAll";
        redis.pfadd(refAll, "someone-else");
        for (int i = 0; i < 10; i++) redis.pfadd(refAll, "user-" + i);
        assertThat(redis.pfcount(all)).isEqualTo(redis.pfcount(refAll));
        assertThat(redis.pttl(all)).isEqualTo(-1L);
        assertThat(redis.exists(prefix + ":{h}:_tmp")).isFalse();
    }

    @Test
    void markedSketchesAreRedisHyperLogLogsForRedisItself() throws Exception {
        String scratch = prefix + ":_scratch";
        String k = keys.uniquesAll("m");
        write(RedisWrite.growingHll(k, sketchOf(scratch, 0, 20), 0));
        assertThat(markOf(redis.get(k.getBytes()))).isNotEqualTo(new byte[3]);
        String other = prefix + ":_other";
        redis.pfadd(other, "user-19", "user-20", "user-21");
        redis.pfmerge(other, other, k); // PFMERGE reads it
        assertThat(redis.pfcount(other)).isEqualTo(22);
        redis.pfadd(k, "user-99"); // PFADD writes into it (and keeps the mark: Redis never reads those bytes)
        assertThat(redis.pfcount(k)).isEqualTo(21);
        String ref = prefix + ":_ref";
        for (int i = 0; i < 20; i++) redis.pfadd(ref, "user-" + i);
        redis.pfadd(ref, "user-99");
        assertSameRegisters(redis.get(k.getBytes()), redis.get(ref.getBytes()));
    }

    @Test
    void everyWriterHasALineageOfItsOwnNeverZero() throws Exception {
        assertThat(RedisApplyScript.lineageMark(1)).containsExactly(0, 0, 1);
        assertThat(RedisApplyScript.lineageMark(0xFFFFFF)).containsExactly(0xFF, 0xFF, 0xFF);
        assertThat(RedisApplyScript.lineageMark(0x1000000)).as("wraps past zero").containsExactly(0, 0, 1);
        String scratch = prefix + ":_scratch";
        List<byte[]> marks = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            RedisSinkWriter w = RedisTestSupport.writer(sink().build(), new TestWriterContext());
            String k = keys.uniquesAll("w" + i);
            w.write(RedisWrite.growingHll(k, sketchOf(scratch, 0, 3), 0), null);
            w.flush(false);
            w.close();
            marks.add(markOf(redis.get(k.getBytes())));
        }
        assertThat(marks).doesNotHaveDuplicates().noneMatch(m -> java.util.Arrays.equals(m, new byte[3]));
    }

    @Test
    void hllOfNonCounterKeyUsesBookkeepingScratchKey() throws Exception {
        String scratch = prefix + ":_scratch";
        byte[] a = sketchOf(scratch, 0, 10);
        String k = prefix + ":meta:uniq";
        write(RedisWrite.hll(k, a, 0));
        assertThat(redis.pfcount(k)).isEqualTo(10);
        assertThat(RedisTestSupport.keysOf(redis, prefix)).containsExactly(k);
    }

    @Test
    void zsetIsReplacedAtomicallyWithVersionCheck() throws Exception {
        String top = keys.top("post", Resolution.values()[1], 1_700_000_000_000L);
        String tv = keys.versionOfGlobal(top);
        write(RedisWrite.zset(top, tv, 2, new String[] {"a", "b", "c"}, new double[] {3, 2, 1}, 60_000));
        assertThat(redis.zrevrangeWithScores(top, 0, -1)).extracting(Tuple::getElement).containsExactly("a", "b", "c");
        assertThat(redis.pttl(top)).isBetween(59_000L, 60_000L);
        assertThat(redis.pttl(tv)).isBetween(59_000L, 60_000L);

        write(RedisWrite.zset(top, tv, 1, new String[] {"x"}, new double[] {9}, 60_000)); // older: skipped
        assertThat(redis.zcard(top)).isEqualTo(3);

        write(RedisWrite.zset(top, tv, 3, new String[] {"d", "e"}, new double[] {5.5, Double.POSITIVE_INFINITY}, 60_000));
        assertThat(redis.zrevrangeWithScores(top, 0, -1))
                .containsExactly(new Tuple("e", Double.POSITIVE_INFINITY), new Tuple("d", 5.5));
        assertThat(redis.get(tv)).isEqualTo("3");

        write(RedisWrite.zset(top, tv, 4, new String[0], new double[0], 60_000));
        assertThat(redis.exists(top)).isFalse();

        // an untagged key without version (trending)
        String trending = keys.trending("post");
        write(RedisWrite.zset(trending, null, 0, new String[] {"p1"}, new double[] {0.25}, 0));
        assertThat(redis.zscore(trending, "p1")).isEqualTo(0.25);
        assertThat(redis.pttl(trending)).isEqualTo(-1L);
    }

    @Test
    void aSkippedZsetDoesNotDisturbTheOtherWritesOfItsCall() throws Exception {
        // a sorted set under a counter's hash tag shares the counter's script call
        String z = prefix + ":{z}:list";
        String zv = keys.versionOf("z", z);
        write(RedisWrite.zset(z, zv, 5, new String[] {"a", "b"}, new double[] {2, 1}, 0));
        long calls = writer.commandsSent.getCount();
        write(RedisWrite.zset(z, zv, 4, new String[] {"x", "y", "w"}, new double[] {1, 2, 3}, 0), count("z", 9, 1, true, 0));
        assertThat(writer.commandsSent.getCount() - calls).isEqualTo(1);
        assertThat(redis.zrange(z, 0, -1)).containsExactly("b", "a");
        assertThat(redis.get(keys.total("z"))).isEqualTo("9");
    }

    @Test
    void keysOfAnotherTypeAreRejectedOnceEachWhileEveryOtherKeyOfTheCallIsWritten() throws Exception {
        writer.close();
        writer = RedisTestSupport.writer(sink().setCountersPerCall(8).build(), ctx);
        String scratch = prefix + ":_scratch";
        byte[] users = sketchOf(scratch, 0, 10);
        String badTotal = keys.total("bad");
        String badUniques = keys.uniquesAll("worse");
        redis.hset(badTotal, "f", "v");
        redis.set(badUniques, "not a HyperLogLog");
        long rejectedBefore = RedisSink.KEYS_REJECTED.sum();
        List<RedisWrite> ws = new ArrayList<>();
        for (String c : List.of("a", "bad", "b", "worse", "c")) { // one script call: the bad keys amid good ones
            ws.add(count(c, 5, 1, true, 0));
            String win = keys.window(c, Resolution.M1, 60_000);
            ws.add(RedisWrite.count(win, keys.versionOf(c, win), 5, 1, true, Resolution.M1.ttlMillis));
            ws.add(RedisWrite.hll(keys.uniquesAll(c), users, 0));
        }
        write(ws.toArray(new RedisWrite[0]));
        for (String c : List.of("a", "bad", "b", "worse", "c")) {
            if (!c.equals("bad")) assertThat(redis.get(keys.total(c))).isEqualTo("5");
            assertThat(redis.get(keys.window(c, Resolution.M1, 60_000))).isEqualTo("5");
            if (!c.equals("worse")) assertThat(redis.pfcount(keys.uniquesAll(c))).isEqualTo(10L);
        }
        // the foreign keys are left as they were, and reported once each
        assertThat(redis.hgetAll(badTotal)).isEqualTo(java.util.Map.of("f", "v"));
        assertThat(redis.get(badUniques)).isEqualTo("not a HyperLogLog");
        assertThat(writer.keysRejected.getCount()).isEqualTo(2);
        assertThat(RedisSink.KEYS_REJECTED.sum() - rejectedBefore).isEqualTo(2);
        assertThat(RedisSink.FIRST_REJECTED.get()).isNotNull();
        assertThat(redis.exists(prefix + ":{worse}:_tmp")).isFalse();
        // the next flushes write the good keys again and report nobody twice
        write(count("a", 6, 2, true, 0), count("bad", 6, 2, true, 0), RedisWrite.hll(badUniques, users, 0));
        assertThat(redis.get(keys.total("a"))).isEqualTo("6");
        assertThat(writer.keysRejected.getCount()).isEqualTo(2);
    }

    @Test
    void aNonIntegerVersionRejectsTheVersionKeyOnly() throws Exception {
        String total = keys.total("bad");
        String v = keys.versionOf("bad", total);
        redis.set(v, "banana");
        write(count("bad", 1, 1, false, 0), count("good", 1, 1, false, 0));
        assertThat(redis.get(total)).isNull();
        assertThat(redis.get(v)).isEqualTo("banana");
        assertThat(redis.get(keys.total("good"))).isEqualTo("1");
        assertThat(writer.keysRejected.getCount()).isEqualTo(1);
    }

    @Test
    void invalidHllBytesAreRejectedLeavingNoScratchKey() throws Exception {
        String u = keys.uniquesAll("bad");
        write(RedisWrite.hll(u, "not a sketch".getBytes(), 0), count("bad", 3, 1, true, 0));
        assertThat(writer.keysRejected.getCount()).isEqualTo(1);
        assertThat(redis.exists(u)).isFalse();
        assertThat(redis.get(keys.total("bad"))).isEqualTo("3");
        assertThat(redis.exists(prefix + ":{bad}:_tmp")).isFalse();
    }

    @Test
    void theWatermarkFollowsItsWritesAndStaysBelowAWindowWhoseKeyWasRejected() throws Exception {
        String ok = keys.window("ok", Resolution.M1, 60_000);
        write(RedisWrite.count(ok, keys.versionOf("ok", ok), 1, 1, true, 0));
        writer.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(200_000));
        writer.flush(false);
        assertThat(redis.get(keys.watermark())).isEqualTo("200000");
        assertThat(writer.heldWatermark()).isEqualTo(Long.MAX_VALUE);

        // a window key of another type: rejected, and the watermark no longer passes its window's start
        String bad = keys.window("bad", Resolution.M5, 300_000);
        redis.hset(bad, "f", "v");
        String good = keys.window("good", Resolution.M5, 300_000);
        write(RedisWrite.count(bad, keys.versionOf("bad", bad), 4, 1, true, 0),
                RedisWrite.count(good, keys.versionOf("good", good), 4, 1, true, 0));
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
        write(count("t", 1, 1, true, 0));
        assertThat(writer.keysRejected.getCount()).isEqualTo(2);
        assertThat(writer.heldWatermark()).isEqualTo(300_000);
    }

    @Test
    void aRestoredWriterKeepsTheHoldAndReportsNoKeyAgain() throws Exception {
        String bad = keys.window("bad", Resolution.M1, 120_000);
        redis.hset(bad, "f", "v");
        write(RedisWrite.count(bad, keys.versionOf("bad", bad), 4, 1, true, 0));
        assertThat(writer.keysRejected.getCount()).isEqualTo(1);
        assertThat(writer.snapshotState(1)).hasSize(1);
        RedisWriterState.Serializer serializer = new RedisWriterState.Serializer();
        byte[] state = serializer.serialize(writer.snapshotState(1).get(0));
        writer.close();

        // the restart: the window's write came before the checkpoint and is not replayed
        RedisSink restoring = sink().build();
        writer = (RedisSinkWriter) restoring.restoreWriter(new TestWriterContext(),
                List.of(serializer.deserialize(serializer.getVersion(), state)));
        assertThat(writer.heldWatermark()).isEqualTo(120_000);
        write(RedisWrite.count(bad, keys.versionOf("bad", bad), 5, 2, true, 0), count("good", 1, 1, true, 0));
        writer.writeWatermark(new org.apache.flink.api.common.eventtime.Watermark(Long.MAX_VALUE));
        writer.flush(true);
        assertThat(redis.get(keys.watermark())).isEqualTo("120000");
        assertThat(writer.keysRejected.getCount()).as("reported before the restart").isZero();
        assertThat(redis.get(keys.total("good"))).isEqualTo("1");
        // a writer with nothing rejected checkpoints nothing
        RedisSinkWriter clean = RedisTestSupport.writer(sink().build(), new TestWriterContext());
        assertThat(clean.snapshotState(1)).isEmpty();
        clean.close();
    }

    @Test
    void windowStartsAreReadFromKeyNames() {
        assertThat(RedisKeys.windowStartMillis(keys.window("a:b", Resolution.H1, 3_600_000))).isEqualTo(3_600_000);
        assertThat(RedisKeys.windowStartMillis(keys.uniques("a", Resolution.D1, 86_400_000))).isEqualTo(86_400_000);
        String w = keys.window("a", Resolution.S5, 5_000);
        assertThat(RedisKeys.windowStartMillis(keys.versionOf("a", w))).isEqualTo(5_000);
        assertThat(RedisKeys.windowStartMillis(keys.top("ns", Resolution.M1, 60_000))).isEqualTo(60_000);
        assertThat(RedisKeys.windowStartMillis(keys.total("x:1m:60"))).isEqualTo(Long.MIN_VALUE);
        assertThat(RedisKeys.windowStartMillis(keys.uniquesAll("a"))).isEqualTo(Long.MIN_VALUE);
        assertThat(RedisKeys.windowStartMillis(keys.watermark())).isEqualTo(Long.MIN_VALUE);
        assertThat(RedisKeys.windowStartMillis(keys.trending("ns"))).isEqualTo(Long.MIN_VALUE);
    }

    @Test
    void badWritesAreRejectedAtWriteNamingTheKey() {
        String top = keys.top("x", Resolution.values()[1], 0);
        assertThatThrownBy(() -> writer.write(RedisWrite.zset(top, null, 1, new String[] {"a"}, new double[] {Double.NaN}, 0), null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(top);
        assertThatThrownBy(() -> writer.write(RedisWrite.hll(top, null, 0), null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining(top);
    }

    @Test
    void flushesOnTimerAndOnBufferSize() throws Exception {
        writer.close();
        writer = RedisTestSupport.writer(sink().setFlushInterval(Duration.ofMillis(200)).setMaxBufferedKeys(3).build(), ctx);
        String total = keys.total("timer");
        writer.write(count("timer", 1, 1, true, 0), null);
        ctx.advance(199);
        assertThat(redis.get(total)).isNull();
        ctx.advance(1); // sent: applied by the writer's I/O thread while the task goes on
        assertThat(eventually(() -> redis.get(total))).isEqualTo("1");
        assertThat(ctx.pendingTimers()).isEqualTo(1); // rescheduled

        writer.write(count("s1", 1, 1, true, 0), null);
        writer.write(count("s2", 1, 1, true, 0), null);
        assertThat(redis.get(keys.total("s1"))).isNull();
        writer.write(count("s3", 1, 1, true, 0), null); // third key: the buffer is full
        assertThat(writer.bufferedKeys()).isZero();
        assertThat(eventually(() -> redis.get(keys.total("s1")))).isEqualTo("1");
        writer.write(count("s4", 1, 1, true, 0), null);
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
    void onlyContractKeysAreWritten() throws Exception {
        String scratch = prefix + ":_scratch";
        byte[] a = sketchOf(scratch, 0, 10);
        String total = keys.total("k");
        String w = keys.window("k", Resolution.values()[0], 0);
        write(count("k", 1, 1, true, 0), RedisWrite.count(w, keys.versionOf("k", w), 1, 1, true, 1000),
                RedisWrite.hll(keys.uniquesAll("k"), a, 0), RedisWrite.max(keys.watermark(), 5));
        for (String k : RedisTestSupport.keysOf(redis, prefix)) {
            assertThat(k).matches(java.util.regex.Pattern.quote(prefix) + ":(\\{k\\}:(total|_v:.*|" + Resolution.values()[0].label
                    + ":0|u:all)|meta:watermark)");
        }
    }
    @Test
    void packsSeveralCountersIntoOneCallWhenAskedAndAppliesThemAll() throws Exception {
        writer.close();
        writer = RedisTestSupport.writer(sink().setCountersPerCall(8).build(), ctx);
        String scratch = prefix + ":_scratch";
        byte[] users = sketchOf(scratch, 0, 10);
        long before = writer.commandsSent.getCount();
        List<RedisWrite> ws = new ArrayList<>();
        for (int c = 0; c < 20; c++) {
            String counter = "p:" + c;
            ws.add(count(counter, 3, 1, true, 0));
            ws.add(RedisWrite.hll(keys.uniquesAll(counter), users, 0));
        }
        ws.add(RedisWrite.max(keys.watermark(), 7));
        write(ws.toArray(new RedisWrite[0]));
        // 20 counters in calls of 8, 8 and 4, the watermark alone, + 1 SCRIPT LOAD
        assertThat(writer.commandsSent.getCount() - before).isEqualTo(3 + 1 + 1);
        for (int c = 0; c < 20; c++) {
            assertThat(redis.get(keys.total("p:" + c))).isEqualTo("3");
            assertThat(redis.pfcount(keys.uniquesAll("p:" + c))).isEqualTo(10L);
        }
        assertThat(redis.get(keys.watermark())).isEqualTo("7");
        // a second sketch merges into the key the first one created
        byte[] more = sketchOf(scratch, 10, 20);
        write(RedisWrite.hll(keys.uniquesAll("p:0"), more, 0));
        assertThat(redis.pfcount(keys.uniquesAll("p:0"))).isEqualTo(20L);
        assertThat(redis.exists(prefix + ":{p:0}:_tmp")).isFalse();
    }
}
