package io.rollcount.sketches.bench;

import io.rollcount.sketches.RedisHyperLogLog;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.apache.datasketches.hll.HllSketch;
import org.apache.datasketches.hll.TgtHllType;
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
 * HyperLogLog update, ours against DataSketches HllSketch at the same register count (lgK 14 =
 * 16384 registers), HLL_8 (its fastest) and HLL_6 (its Redis-sized). Sketches are warmed past their
 * sparse/list modes, so this is the steady dense update; items are 8..24 random bytes or the
 * strings of those bytes as hex, cycled from a table of 2^20.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xmx1g", "-XX:+UseParallelGC"})
public class HllBench {
    static final int BATCH = 1024;
    private static final int MASK = (1 << 20) - 1;

    private byte[][] bytes;
    private String[] strings;
    private int next;
    private RedisHyperLogLog ours;
    private HllSketch hll8;
    private HllSketch hll6;

    @Setup
    public void setUp() {
        SplittableRandom random = new SplittableRandom(2026);
        bytes = new byte[MASK + 1][];
        strings = new String[MASK + 1];
        for (int i = 0; i <= MASK; i++) {
            bytes[i] = new byte[8 + random.nextInt(17)];
            random.nextBytes(bytes[i]);
            strings[i] = "user:" + Long.toHexString(random.nextLong());
        }
        ours = new RedisHyperLogLog();
        hll8 = new HllSketch(14, TgtHllType.HLL_8);
        hll6 = new HllSketch(14, TgtHllType.HLL_6);
        for (int i = 0; i < 200_000; i++) {
            byte[] warm = ("warm" + i).getBytes(StandardCharsets.UTF_8);
            ours.add(warm);
            hll8.update(warm);
            hll6.update(warm);
        }
    }

    private int batch() {
        int from = next;
        next = (next + BATCH) & MASK;
        return from;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int oursBytes() {
        int from = batch();
        int changed = 0;
        for (int i = 0; i < BATCH; i++) {
            changed += ours.add(bytes[from + i]) ? 1 : 0;
        }
        return changed;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void refHll8Bytes() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            hll8.update(bytes[from + i]);
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void refHll6Bytes() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            hll6.update(bytes[from + i]);
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int oursString() {
        int from = batch();
        int changed = 0;
        for (int i = 0; i < BATCH; i++) {
            changed += ours.add(strings[from + i]) ? 1 : 0;
        }
        return changed;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void refHll8String() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            hll8.update(strings[from + i]);
        }
    }
}
