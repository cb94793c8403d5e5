package io.rollcount.sketches.bench;

import io.rollcount.sketches.CountMinSketch;
import io.rollcount.sketches.SpaceSavingTopK;
import io.rollcount.sketches.TrendingSketch;
import io.rollcount.sketches.Zipf;
import java.util.HashMap;
import java.util.concurrent.TimeUnit;
import org.apache.datasketches.frequencies.ItemsSketch;
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
 * Frequency structures on the BENCHMARKS.md "zipf" shape (Zipf 1.1 over 1,000,000 counter ids),
 * weight 1, event time advancing 1 ms every 16 events, half-life 1 h: our Count-Min (2719 x 5,
 * conservative, decayed), our top-K (Space-Saving alone, and the trending pair CMS + Space-Saving,
 * capacity 400), DataSketches 6.2.0 ItemsSketch (its frequent-items sketch; maxMapSize 1024 and
 * 2048, the sizes whose a-priori error 3.5/maxMapSize brackets ours, 1/401) and exact counting in a
 * HashMap. Every structure is warmed with 2M events first.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(
        value = 1,
        jvmArgsAppend = {"-Xmx2g", "-XX:+UseParallelGC"})
public class FrequencyBench {
    static final int BATCH = 1024;
    static final long T0 = 1_796_000_000_000L;
    static final long HOUR = 3_600_000L;
    private static final int MASK = (1 << 22) - 1;

    private String[] events;
    private long[] hashes;
    private int next;
    private long clock;
    private CountMinSketch cms;
    private SpaceSavingTopK spaceSaving;
    private TrendingSketch trending;
    private ItemsSketch<String> ds1024;
    private ItemsSketch<String> ds2048;
    private HashMap<String, long[]> exact;

    @Setup
    public void setUp() {
        String[] names = Zipf.names(1_000_000);
        int[] ranks = new Zipf(names.length, 1.1).sample(MASK + 1, 11);
        events = new String[MASK + 1];
        hashes = new long[MASK + 1];
        for (int i = 0; i <= MASK; i++) {
            events[i] = names[ranks[i]];
            hashes[i] = CountMinSketch.hash(events[i]);
        }
        cms = new CountMinSketch(0.001, 0.01, 7, HOUR);
        spaceSaving = new SpaceSavingTopK(400, HOUR);
        trending = new TrendingSketch(400, 0.001, 0.01, 7, HOUR);
        ds1024 = new ItemsSketch<>(1024);
        ds2048 = new ItemsSketch<>(2048);
        exact = new HashMap<>();
        for (int i = 0; i < 2_000; i++) {
            oursCms();
            oursCmsHash();
            oursTopK();
            oursTrending();
            refItems1024();
            refItems2048();
            refHashMap();
        }
    }

    private int batch() {
        int from = next;
        next = (next + BATCH) & MASK;
        clock += BATCH / 16;
        return from;
    }

    private long time(int i) {
        return T0 + clock + (i >> 4);
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void oursCms() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            cms.update(events[from + i], 1, time(i));
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void oursCmsHash() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            cms.updateHash(hashes[from + i], 1, time(i));
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void oursTopK() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            spaceSaving.update(events[from + i], 1, time(i));
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void oursTrending() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            trending.update(events[from + i], 1, time(i));
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void refItems1024() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            ds1024.update(events[from + i]);
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void refItems2048() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            ds2048.update(events[from + i]);
        }
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public void refHashMap() {
        int from = batch();
        for (int i = 0; i < BATCH; i++) {
            exact.computeIfAbsent(events[from + i], k -> new long[1])[0]++;
        }
    }
}
