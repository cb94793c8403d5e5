package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import io.rollcount.job.gen.EventGenerator.Workload;
import java.util.BitSet;
import org.junit.jupiter.api.Test;

/** The growth bench's arithmetic (the line through two sizes) and its touch pass. */
class GrowthBenchTest {

    private static GrowthBench.Figures figures(long distinct, long checkpointBytes, double redisPerCounter, double us) {
        return new GrowthBench.Figures(
                distinct,
                distinct,
                distinct * 2,
                10_000,
                us,
                100,
                200,
                checkpointBytes,
                0,
                redisPerCounter,
                1 << 30,
                true);
    }

    @Test
    void extrapolatesAlongTheLineThroughTheTwoSizes() {
        // state: 1,000 fixed bytes + 300 per counter; Redis: 1,500 per counter at 1M, 1,400 at 4M
        GrowthBench.Figures small = figures(1_000_000, 1_000 + 300L * 1_000_000, 1_500, 40);
        GrowthBench.Figures large = figures(4_000_000, 1_000 + 300L * 4_000_000, 1_400, 50);
        GrowthBench.Extrapolation x = GrowthBench.extrapolate(small, large, 100_000_000);
        assertThat(x.stateSlope()).isCloseTo(300, within(1e-9));
        assertThat(x.stateBytes()).isCloseTo(1_000 + 300.0 * 100_000_000, within(1e-3));
        // Redis: 1.5e9 bytes at 1M, 5.6e9 at 4M: (5.6e9 - 1.5e9) / 3M = 1366.67 per additional counter
        assertThat(x.redisSlope()).isCloseTo(4.1e9 / 3e6, within(1e-6));
        assertThat(x.redisBytes()).isCloseTo(5.6e9 + 4.1e9 / 3e6 * 96e6, within(1.0));
        // 136.7e9 bytes = 127.3 GiB over 48 GiB usable per node: 3 nodes
        assertThat(x.redisNodes()).isEqualTo(3);
        // 50 us per event at 100,000 events/s: 5 cores
        assertThat(x.jobCoresPer100kEps()).isCloseTo(5.0, within(1e-9));
    }

    @Test
    void redisNotMeasuredIsNotExtrapolated() {
        GrowthBench.Figures small = figures(1_000_000, 300_000_000, -1, 40);
        GrowthBench.Figures large = figures(16_000_000, 4_800_000_000L, -1, 60);
        GrowthBench.Extrapolation x = GrowthBench.extrapolate(small, large, 100_000_000);
        assertThat(x.stateSlope()).isCloseTo(300, within(1e-9));
        assertThat(x.redisBytes()).isEqualTo(-1);
        assertThat(x.redisNodes()).isZero();
    }

    @Test
    void theTouchPassTouchesEveryCounterAndKeepsTheRest() {
        int counters = 10_001;
        BenchEvents zipf = new BenchEvents(7, Workload.zipf, counters, 100, 20_006, 2, 0, 50_000, 2_000);
        BenchEvents touched = zipf.withTouchPass();
        BitSet zipfRanks = new BitSet(), touchedRanks = new BitSet();
        for (long i = 0; i < zipf.count; i++) {
            zipfRanks.set(zipf.rank(i));
            touchedRanks.set(touched.rank(i));
        }
        assertThat(touchedRanks.cardinality()).isEqualTo(counters);
        assertThat(zipfRanks.cardinality()).isLessThan(counters / 2);
        // after the pass (and beyond the reach of a redelivery into it), the workload's own events, line for line
        long after = touched.touchPerPart();
        for (long i : new long[] {after + 2_500, zipf.partSize() + after + 2_600, zipf.count - 1})
            assertThat(new String(touched.line(i))).isEqualTo(new String(zipf.line(i)));
        // the pass itself: part 1's events go to ranks 1, 3, 5, ...
        for (long k = 0; k < 100; k++)
            assertThat(touched.rank(zipf.partSize() + k)).isEqualTo((int) (2 * k + 1));
    }

    @Test
    void tooFewEventsForATouchPassAreRefused() {
        BenchEvents few = new BenchEvents(7, Workload.zipf, 10_000, 100, 9_000, 2, 0, 50_000, 2_000);
        org.assertj.core.api.Assertions.assertThatThrownBy(few::withTouchPass)
                .isInstanceOf(IllegalArgumentException.class);
    }
}
