package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.SplittableRandom;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.Test;

/**
 * The index of a sparse body's opcodes names them rightly after every edit, and the bytes do not depend on it:
 * a sketch whose index was built at another point (read back from its bytes) builds the same bytes. That the
 * bytes are {@code PFADD}'s is {@link RedisHyperLogLogRedisIT}'s to show, on bodies with and without an index.
 */
class SparseOpcodeIndexTest {

    /** A hash landing in register {@code register} with value {@code value} (1..51). */
    private static long hashOf(int register, int value) {
        return register | (1L << (14 + value - 1));
    }

    @Test
    void randomItemsUntilDense() {
        SplittableRandom random = new SplittableRandom(1);
        addAndCheck(random::nextLong, 5);
    }

    @Test
    void clusteredRegistersWithLowValuesSplitAndMergeRunsNextToCheckpoints() {
        SplittableRandom random = new SplittableRandom(2);
        addAndCheck(() -> hashOf(random.nextInt(3000), 1 + random.nextInt(3)), 5);
    }

    @Test
    void neighbouringRegistersInOrderAndBackwards() {
        int[] next = {0};
        addAndCheck(() -> hashOf(next[0]++ * 3 % 16384, 1 + next[0] % 2), 3);
        int[] down = {16383};
        addAndCheck(() -> hashOf(down[0]--, 1 + (down[0] / 4) % 2), 3);
    }

    @Test
    void mergingIntoASketchWithAnIndexKeepsItRight() {
        SplittableRandom random = new SplittableRandom(3);
        for (int round = 0; round < 20; round++) {
            RedisHyperLogLog a = new RedisHyperLogLog();
            RedisHyperLogLog b = new RedisHyperLogLog();
            for (int i = 0; i < 150 + round * 20; i++) a.addHash(hashOf(random.nextInt(16384), 1 + random.nextInt(4)));
            for (int i = 0; i < 100; i++) b.addHash(hashOf(random.nextInt(16384), 1 + random.nextInt(4)));
            byte[] expected = RedisHyperLogLog.fromRedisBytes(a.toRedisBytes()).toRedisBytes();
            RedisHyperLogLog fresh = RedisHyperLogLog.fromRedisBytes(expected);
            a.merge(b);
            fresh.merge(b);
            assertThat(a.checkOpcodeIndex()).isNull();
            assertThat(a.toRedisBytes()).isEqualTo(fresh.toRedisBytes());
        }
    }

    /**
     * Adds {@code hashes} until the sketch is dense (or 20,000 times), {@code sketches} times over, checking the index after every
     * add, the registers against a model and the bytes against a sketch read back from them now and then.
     */
    private static void addAndCheck(LongSupplier hashes, int sketches) {
        for (int s = 0; s < sketches; s++) {
            RedisHyperLogLog hll = new RedisHyperLogLog();
            RedisHyperLogLog reread = null;
            byte[] model = new byte[RedisHyperLogLog.REGISTERS];
            int adds = 0;
            while (!hll.isDense() && adds < 20_000) {
                long h = hashes.getAsLong();
                int register = (int) (h & (RedisHyperLogLog.REGISTERS - 1));
                int value = Long.numberOfTrailingZeros((h >>> 14) | (1L << 50)) + 1;
                boolean changed = hll.addHash(h);
                assertThat(changed).as("add %d", adds).isEqualTo(value > model[register]);
                model[register] = (byte) Math.max(model[register], value);
                if (reread != null) reread.addHash(h);
                adds++;
                assertThat(hll.checkOpcodeIndex()).as("after %d adds", adds).isNull();
                if (adds % 97 == 0 && !hll.isDense()) {
                    if (reread != null) assertThat(hll.toRedisBytes()).isEqualTo(reread.toRedisBytes());
                    assertRegisters(hll, model);
                    reread = RedisHyperLogLog.fromRedisBytes(hll.toRedisBytes());
                }
            }
            assertRegisters(hll, model);
        }
    }

    private static void assertRegisters(RedisHyperLogLog hll, byte[] model) {
        RedisHyperLogLog dense = new RedisHyperLogLog(0);
        dense.merge(hll);
        for (int r = 0; r < RedisHyperLogLog.REGISTERS; r++) {
            assertThat(dense.register(r)).as("register %d", r).isEqualTo(model[r]);
        }
    }
}
