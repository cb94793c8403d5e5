package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** Behaviour that needs no Redis: accuracy, encodings agreeing, allocation, sizes. */
class RedisHyperLogLogTest {

    private static void putLong(byte[] b, long v) {
        for (int i = 0; i < 8; i++) {
            b[i] = (byte) (v >>> (8 * i));
        }
    }

    @Test
    void relativeStandardErrorAtOneMillionOverTwoHundredTrialsIsWithinPointNinePercent() {
        int trials = 200;
        int n = 1_000_000;
        byte[] item = new byte[8];
        double sumSquares = 0;
        double sumError = 0;
        for (int t = 0; t < trials; t++) {
            RedisHyperLogLog hll = new RedisHyperLogLog();
            long base = Hashing.mix64(0x5eedL + t);
            for (int i = 0; i < n; i++) {
                putLong(item, base + i);
                hll.add(item);
            }
            double error = (hll.count() - (double) n) / n;
            sumSquares += error * error;
            sumError += error;
        }
        double rse = Math.sqrt(sumSquares / trials);
        double bias = sumError / trials;
        System.out.printf(
                "HLL n=%d trials=%d RSE=%.4f%% bias=%.4f%% (theory 1.04/sqrt(16384)=0.8125%%)%n",
                n, trials, 100 * rse, 100 * bias);
        assertThat(rse).isLessThan(0.009);
        assertThat(Math.abs(bias)).isLessThan(3 * 0.0082 / Math.sqrt(trials));
    }

    @Test
    void sparseAndDenseEncodingsOfTheSameRegistersEstimateTheSame() {
        SplittableRandom random = new SplittableRandom(5);
        RedisHyperLogLog sparse = new RedisHyperLogLog(1 << 20);
        RedisHyperLogLog dense = new RedisHyperLogLog(0);
        for (int n = 1; n <= 20_000; n++) {
            long h = random.nextLong();
            assertThat(sparse.addHash(h)).isEqualTo(dense.addHash(h));
            if (n % 997 == 0 || n < 40) {
                assertThat(sparse.isDense()).isFalse();
                assertThat(dense.isDense()).isTrue();
                assertThat(sparse.count()).as("n=%d", n).isEqualTo(dense.count());
            }
        }
        RedisHyperLogLog promoted = RedisHyperLogLog.fromRedisBytes(sparse.toRedisBytes());
        promoted.merge(dense);
        assertThat(promoted.isDense()).isTrue();
        assertThat(promoted.toRedisBytes()).isEqualTo(withValidCacheOf(dense, promoted));
    }

    private static byte[] withValidCacheOf(RedisHyperLogLog dense, RedisHyperLogLog other) {
        byte[] a = dense.toRedisBytes();
        byte[] b = other.toRedisBytes();
        System.arraycopy(b, 8, a, 8, 8); // cached cardinality bytes may differ in validity only
        return a;
    }

    @Test
    void smallCardinalitiesAreExactAndSparseStaysSmall() {
        RedisHyperLogLog hll = new RedisHyperLogLog();
        assertThat(hll.count()).isZero();
        assertThat(hll.serializedSizeBytes()).isEqualTo(18);
        for (int i = 0; i < 10; i++) {
            assertThat(hll.add("user-" + i)).isTrue();
            assertThat(hll.add("user-" + i)).isFalse();
        }
        assertThat(hll.count()).isEqualTo(10);
        assertThat(hll.serializedSizeBytes()).isLessThan(100).isEqualTo(hll.toRedisBytes().length);
        assertThat(hll.isDense()).isFalse();
    }

    @Test
    void mergeIsCommutativeInRegistersAndIdempotent() {
        RedisHyperLogLog a = new RedisHyperLogLog();
        RedisHyperLogLog b = new RedisHyperLogLog();
        SplittableRandom random = new SplittableRandom(9);
        for (int i = 0; i < 3000; i++) {
            a.addHash(random.nextLong());
            b.addHash(random.nextLong());
        }
        RedisHyperLogLog ab = a.copy();
        ab.merge(b);
        RedisHyperLogLog ba = b.copy();
        ba.merge(a);
        for (int r = 0; r < RedisHyperLogLog.REGISTERS; r += 97) {
            assertThat(ab.register(r)).isEqualTo(ba.register(r)).isEqualTo(Math.max(a.register(r), b.register(r)));
        }
        assertThat(ab.count()).isEqualTo(ba.count());
        long before = ab.count();
        ab.merge(ab.copy());
        assertThat(ab.count()).isEqualTo(before);
    }

    @Test
    void denseAddsAllocateNothing() {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        RedisHyperLogLog hll = new RedisHyperLogLog();
        String[] strings = new String[1024];
        byte[][] bytes = new byte[1024][];
        for (int i = 0; i < strings.length; i++) {
            strings[i] = "counter:" + i + ":üser";
            bytes[i] = strings[i].getBytes(java.nio.charset.StandardCharsets.UTF_8);
        }
        SplittableRandom random = new SplittableRandom(3);
        for (int i = 0; i < 200_000; i++) {
            hll.addHash(random.nextLong());
        }
        assertThat(hll.isDense()).isTrue();
        addAll(hll, strings, bytes); // warm up: let the JIT compile the loop first
        long before = threads.getCurrentThreadAllocatedBytes();
        long changed = addAll(hll, strings, bytes);
        long allocated = threads.getCurrentThreadAllocatedBytes() - before;
        assertThat(allocated)
                .as("bytes allocated by 3M adds (changed %d)", changed)
                .isLessThan(1024);
    }

    private static long addAll(RedisHyperLogLog hll, String[] strings, byte[][] bytes) {
        long changed = 0;
        for (int i = 0; i < 1_000_000; i++) {
            changed += hll.add(strings[i & 1023]) ? 1 : 0;
            changed += hll.add(bytes[i & 1023]) ? 1 : 0;
            changed += hll.addHash(i * 0x9e3779b97f4a7c15L) ? 1 : 0;
        }
        return changed;
    }

    @Test
    void sparseBufferGrowsWithCardinalityThenPromotes() {
        RedisHyperLogLog hll = new RedisHyperLogLog();
        SplittableRandom random = new SplittableRandom(4);
        int lastSize = hll.serializedSizeBytes();
        int n = 0;
        while (!hll.isDense()) {
            assertThat(hll.serializedSizeBytes()).isLessThanOrEqualTo(RedisHyperLogLog.DEFAULT_SPARSE_MAX_BYTES);
            hll.addHash(random.nextLong());
            n++;
            lastSize = hll.serializedSizeBytes();
        }
        assertThat(n).isBetween(1000, 3000);
        assertThat(lastSize).isEqualTo(RedisHyperLogLog.DENSE_SIZE);
        assertThat(Arrays.copyOf(hll.toRedisBytes(), 5)).isEqualTo(new byte[] {'H', 'Y', 'L', 'L', 0});
    }
}
