package io.rollcount.sketches.bench;

import io.rollcount.sketches.RedisHyperLogLog;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A sparse add to sketches of about 20, 200 and 1,000 distinct items (bodies of about 60, 500 and 1,900 bytes),
 * as the job's 1h and 1d unique-users sketches take their users: a pool of 256 sketches of that size, each
 * read back from its first bytes after 32 adds, so that it stays near its size (the read is part of the time,
 * 1/32 of it).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xmx1g", "-XX:+UseParallelGC"})
public class HllSparseBench {
    static final int BATCH = 1024;
    private static final int SKETCHES = 256;
    private static final int ADDS_BEFORE_REREAD = 32;

    /** Sketches of {@code items} items and the hashes to add. */
    public abstract static class Pool {
        private final int items;
        private final byte[][] first = new byte[SKETCHES][];
        private final RedisHyperLogLog[] sketches = new RedisHyperLogLog[SKETCHES];
        private final int[] adds = new int[SKETCHES];
        private final long[] hashes = new long[1 << 16];
        private int next;

        Pool(int items) {
            this.items = items;
        }

        @Setup
        public void setUp() {
            SplittableRandom random = new SplittableRandom(2026 + items);
            for (int s = 0; s < SKETCHES; s++) {
                RedisHyperLogLog h = new RedisHyperLogLog();
                for (int i = 0; i < items; i++) h.addHash(random.nextLong());
                first[s] = h.toRedisBytes();
                sketches[s] = RedisHyperLogLog.fromRedisBytes(first[s]);
            }
            for (int i = 0; i < hashes.length; i++) hashes[i] = random.nextLong();
        }

        int addBatch() {
            int changed = 0;
            for (int i = 0; i < BATCH; i++) {
                int s = next & (SKETCHES - 1);
                if (++adds[s] > ADDS_BEFORE_REREAD) {
                    sketches[s] = RedisHyperLogLog.fromRedisBytes(first[s]);
                    adds[s] = 1;
                }
                changed += sketches[s].addHash(hashes[next & (hashes.length - 1)]) ? 1 : 0;
                next++;
            }
            return changed;
        }
    }

    @State(Scope.Thread)
    public static class Items20 extends Pool {
        public Items20() {
            super(20);
        }
    }

    @State(Scope.Thread)
    public static class Items200 extends Pool {
        public Items200() {
            super(200);
        }
    }

    @State(Scope.Thread)
    public static class Items1000 extends Pool {
        public Items1000() {
            super(1000);
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int ours20(Items20 pool) {
        return pool.addBatch();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int ours200(Items200 pool) {
        return pool.addBatch();
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int ours1000(Items1000 pool) {
        return pool.addBatch();
    }
}
