package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * Byte-for-byte compatibility with a real Redis 7 (127.0.0.1:6379): PFADD the same items there,
 * GET the value and compare; SET our bytes and let Redis PFCOUNT, PFADD and PFMERGE them.
 */
class RedisHyperLogLogRedisIT {
    private static final String PREFIX = "sketchtest:" + UUID.randomUUID() + ":";
    private static final int BATCH = 1000;
    private static Jedis redis;
    private static final List<byte[]> KEYS = new ArrayList<>();

    @BeforeAll
    static void connect() {
        redis = new Jedis(System.getProperty("redis.host", "127.0.0.1"), Integer.getInteger("redis.port", 6379));
        assertThat(redis.info("server")).contains("redis_version:7.");
        assertThat(redis.configGet("hll-sparse-max-bytes")).containsEntry("hll-sparse-max-bytes", "3000");
    }

    @AfterAll
    static void cleanUp() {
        if (redis != null) {
            if (!KEYS.isEmpty()) {
                redis.del(KEYS.toArray(new byte[0][]));
            }
            redis.close();
        }
    }

    private static byte[] key(String name) {
        byte[] key = (PREFIX + name).getBytes(StandardCharsets.UTF_8);
        KEYS.add(key);
        redis.del(key);
        return key;
    }

    /** n items from a seed: random bytes of length 0..24, about 5% of them repeats of earlier ones. */
    static byte[][] items(int n, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        byte[][] items = new byte[n][];
        for (int i = 0; i < n; i++) {
            if (i > 0 && random.nextInt(20) == 0) {
                items[i] = items[random.nextInt(i)];
            } else {
                items[i] = new byte[random.nextInt(25)];
                random.nextBytes(items[i]);
            }
        }
        return items;
    }

    private static void pfadd(byte[] key, byte[][] items, int from, int to) {
        if (from == to) {
            redis.pfadd(key);
            return;
        }
        Pipeline pipeline = redis.pipelined();
        for (int i = from; i < to; i += BATCH) {
            pipeline.pfadd(key, Arrays.copyOfRange(items, i, Math.min(to, i + BATCH)));
        }
        pipeline.sync();
    }

    private static void assertSameValue(byte[] key, RedisHyperLogLog ours, String context) {
        byte[] theirs = redis.get(key);
        byte[] mine = ours.toRedisBytes();
        if (!Arrays.equals(theirs, mine)) {
            int at = Arrays.mismatch(theirs, mine);
            throw new AssertionError(context + ": Redis value (" + theirs.length + " bytes) and ours ("
                    + mine.length + " bytes) differ first at byte " + at + ": redis "
                    + hex(theirs, at) + " ours " + hex(mine, at));
        }
    }

    private static String hex(byte[] b, int at) {
        return HexFormat.of().formatHex(b, Math.max(0, at), Math.min(b.length, Math.max(0, at) + 12));
    }

    @ParameterizedTest(name = "{0} items")
    @ValueSource(ints = {0, 1, 10, 1000, 100_000, 1_000_000})
    void pfaddBuildsTheSameBytesAndPfcountTheSameEstimate(int n) {
        byte[][] items = items(n, 42 + n);
        byte[] key = key("pfadd:" + n);
        RedisHyperLogLog ours = new RedisHyperLogLog();
        int step = 100;
        int done = 0;
        while (done < n) {
            int to = Math.min(n, done + (done < 6000 ? step : 50 * BATCH));
            pfadd(key, items, done, to);
            for (int i = done; i < to; i++) {
                ours.add(items[i]);
            }
            done = to;
            assertSameValue(key, ours, "after " + done + " items");
        }
        if (n == 0) {
            pfadd(key, items, 0, 0);
            assertSameValue(key, ours, "empty");
        }
        assertThat(ours.count()).isEqualTo(redis.pfcount(key));
        // PFCOUNT caches the estimate in the value; so does count().
        assertSameValue(key, ours, "after PFCOUNT");
        assertThat(ours.isDense()).isEqualTo(n >= 100_000);
        if (n <= 10) {
            assertThat(ours.count())
                    .isEqualTo(Arrays.stream(items)
                            .map(Arrays::toString)
                            .distinct()
                            .count());
        }
    }

    @ParameterizedTest(name = "{0} items")
    @ValueSource(ints = {0, 1, 10, 1000, 100_000})
    void redisReadsOurBytesAndKeepsAddingToThem(int n) {
        byte[][] items = items(n, 7 * n + 1);
        RedisHyperLogLog ours = new RedisHyperLogLog();
        for (byte[] item : items) {
            ours.add(item);
        }
        byte[] key = key("set:" + n);
        redis.set(key, ours.toRedisBytes());
        assertThat(redis.pfcount(key)).isEqualTo(ours.count());
        byte[][] more = items(3000, n + 99);
        pfadd(key, more, 0, more.length);
        for (byte[] item : more) {
            ours.add(item);
        }
        assertSameValue(key, ours, "after PFADD onto our bytes");
        assertThat(redis.pfcount(key)).isEqualTo(ours.count());
        RedisHyperLogLog back = RedisHyperLogLog.fromRedisBytes(redis.get(key));
        assertThat(back.toRedisBytes()).isEqualTo(ours.toRedisBytes());
    }

    @ParameterizedTest(name = "{0} + {1}")
    @org.junit.jupiter.params.provider.CsvSource({
        "10,20",
        "500,900",
        "1200,1500",
        "100,50000",
        "40000,300",
        "30000,60000",
        "0,10"
    })
    void mergeEqualsPfmergeForAnyMixOfEncodings(int na, int nb) {
        byte[][] a = items(na, na * 31L + 5);
        byte[][] b = items(nb, nb * 17L + 3);
        byte[] keyA = key("merge:a:" + na + ":" + nb);
        byte[] keyB = key("merge:b:" + na + ":" + nb);
        byte[] keyOurs = key("merge:ours:" + na + ":" + nb);
        pfadd(keyA, a, 0, na);
        pfadd(keyB, b, 0, nb);
        RedisHyperLogLog ours = RedisHyperLogLog.fromRedisBytes(redis.get(keyA));
        RedisHyperLogLog other = new RedisHyperLogLog();
        for (byte[] item : b) {
            other.add(item);
        }
        redis.set(keyOurs, other.toRedisBytes());
        redis.pfmerge(keyA, keyA, keyOurs); // Redis merges our bytes into its key
        ours.merge(other);
        assertSameValue(keyA, ours, "PFMERGE a a ours");
        assertThat(ours.count()).isEqualTo(redis.pfcount(keyA)).isEqualTo(redis.pfcount(keyB, keyA));
    }

    @Test
    void awkwardItemsHashAndLandLikeRedis() {
        List<byte[]> items = new ArrayList<>();
        items.add(new byte[0]);
        for (String s : new String[] {
            "", "a", "ümlaut", "日本語カウンター", "emoji 🎉👍🏽", "\u0000nul\u0000", "tab\tnewline\n", "post:123:likes"
        }) {
            items.add(s.getBytes(StandardCharsets.UTF_8));
        }
        byte[] big = new byte[256];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) i;
        }
        items.add(big);
        items.add("x".repeat(256).getBytes(StandardCharsets.UTF_8));
        for (int len = 0; len <= 17; len++) {
            items.add(Arrays.copyOf(big, len));
        }
        byte[] key = key("awkward");
        RedisHyperLogLog ours = new RedisHyperLogLog();
        redis.pfadd(key);
        for (byte[] item : items) {
            long reply = redis.pfadd(key, item);
            assertThat(ours.add(item)).as("PFADD replied %d", reply).isEqualTo(reply == 1);
            assertSameValue(key, ours, "after item " + HexFormat.of().formatHex(item));
        }
        assertThat(ours.count()).isEqualTo(redis.pfcount(key));
    }

    @Test
    void stringItemsAreTheirUtf8Bytes() {
        byte[] key = key("strings");
        RedisHyperLogLog ours = new RedisHyperLogLog();
        String[] items = {"", "ümlaut", "日本語", "emoji 🎉", "a".repeat(256), "post:123:likes", "ß".repeat(129)};
        for (String s : items) {
            redis.pfadd(key, s.getBytes(StandardCharsets.UTF_8));
            ours.add(s);
        }
        assertSameValue(key, ours, "string items");
    }

    @Test
    void pfaddReplyMatchesAddResult() {
        byte[] key = key("reply");
        RedisHyperLogLog ours = new RedisHyperLogLog();
        redis.pfadd(key);
        byte[][] items = items(3000, 11);
        for (int i = 0; i < items.length; i++) {
            byte[] item = items[i % 2000]; // the last thousand are repeats
            long reply = redis.pfadd(key, item);
            assertThat(ours.add(item)).as("item %d", i).isEqualTo(reply == 1);
        }
        assertSameValue(key, ours, "after single PFADDs");
    }

    @Test
    void registerOverThirtyTwoPromotesToDenseAndRedisAgrees() {
        RedisHyperLogLog ours = new RedisHyperLogLog();
        ours.add("a");
        assertThat(ours.isDense()).isFalse();
        long hash = (1L << (14 + 39)) | 77; // register 77, 39 trailing zeros after the index: count 40
        assertThat(ours.addHash(hash)).isTrue();
        assertThat(ours.isDense()).isTrue();
        assertThat(ours.register(77)).isEqualTo(40);
        byte[] key = key("promote40");
        redis.set(key, ours.toRedisBytes());
        assertThat(redis.pfcount(key)).isEqualTo(ours.count());
        redis.pfadd(key, "b".getBytes(StandardCharsets.UTF_8));
        ours.add("b");
        assertSameValue(key, ours, "PFADD after promotion");
    }

    @Test
    void corruptValuesAreRejectedByUsAndByRedis() {
        RedisHyperLogLog sparse = new RedisHyperLogLog();
        for (byte[] item : items(50, 3)) {
            sparse.add(item);
        }
        RedisHyperLogLog dense = new RedisHyperLogLog();
        for (byte[] item : items(5000, 4)) {
            dense.add(item);
        }
        byte[] good = sparse.toRedisBytes();

        byte[] shortValue = Arrays.copyOf(good, 10);
        byte[] badMagic = good.clone();
        badMagic[1] = 'X';
        byte[] badEncoding = good.clone();
        badEncoding[4] = 2;
        byte[] badDenseLength = Arrays.copyOf(dense.toRedisBytes(), RedisHyperLogLog.DENSE_SIZE - 1);
        byte[] shortSparse = Arrays.copyOf(good, good.length - 1); // drops the end of the last run
        byte[] longSparse = Arrays.copyOf(good, good.length + 1); // one register too many (ZERO:1)

        assertRejected(shortValue, "shorter than the 16-byte header", true);
        assertRejected(badMagic, "magic is 'HXLL'", true);
        assertRejected(badEncoding, "unknown encoding 2", true);
        assertRejected(badDenseLength, "expected exactly 12304", true);
        assertRejected(shortSparse, "sparse", true);
        assertRejected(longSparse, "runs past register 16383", true);

        byte[] highRegister = dense.toRedisBytes();
        highRegister[16] = (byte) 0x3f; // register 0 = 63
        assertRejected(highRegister, "dense register 0 holds 63, over the maximum 51", false);
        byte[] truncatedXZero = Arrays.copyOf(new RedisHyperLogLog().toRedisBytes(), 17);
        assertRejected(truncatedXZero, "ends inside an XZERO opcode at byte 16", true);
    }

    private static void assertRejected(byte[] value, String message, boolean redisRejectsToo) {
        assertThatThrownBy(() -> RedisHyperLogLog.fromRedisBytes(value))
                .isInstanceOf(SketchFormatException.class)
                .hasMessageContaining(message);
        if (redisRejectsToo) {
            byte[] key = key("corrupt:" + KEYS.size());
            redis.set(key, value);
            assertThatThrownBy(() -> redis.pfcount(key)).isInstanceOf(JedisDataException.class);
        }
    }
}
