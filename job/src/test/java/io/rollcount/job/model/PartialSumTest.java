package io.rollcount.job.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class PartialSumTest {

    @Test
    void theLookedUpTrendWeightIsMathPowsBitForBit() {
        for (double halfLife : new double[] {3_600_000, 1_000, 7}) {
            double[] weights = PartialSum.trendWeights(halfLife);
            for (long bucket : new long[] {1_764_000_000_000L, -5_000L}) { // and a bucket before 1970
                PartialSum pow = new PartialSum("c", bucket);
                PartialSum looked = new PartialSum("c", bucket);
                for (int offset = 0; offset < Resolution.S5.sizeMillis; offset++) {
                    long delta = offset % 7 == 0 ? -3 : offset % 5 + 1; // negative deltas add no weight
                    pow.add(delta, bucket + offset, halfLife);
                    looked.add(delta, bucket + offset, weights);
                    assertThat(Double.doubleToLongBits(looked.trend))
                            .as("offset " + offset)
                            .isEqualTo(Double.doubleToLongBits(pow.trend));
                }
                assertThat(looked).isEqualTo(pow);
            }
        }
    }
}
