package io.rollcount.job.model;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class RecentEventTimesTest {

    @Test
    void eightOutliersAmongRecentTimesDoNotMoveTheProgress() {
        RecentEventTimes t = new RecentEventTimes();
        for (long i = 1; i <= 2_000; i++) {
            t.add(1_000_000 + i);
            if (i % 200 == 0) t.add(253_402_300_000_000L); // 10 in all, 6 among the last 1024 times
        }
        // Above the quantile: the 6 outliers and the two latest in-order times.
        assertThat(t.progress()).isEqualTo(1_000_000 + 2_000 - 2);
    }

    @Test
    void nineOutliersAreAJumpTheStreamMade() {
        RecentEventTimes t = new RecentEventTimes();
        for (long i = 1; i <= 100; i++) t.add(i);
        for (int i = 0; i < 9; i++) t.add(5_000 + i);
        assertThat(t.progress()).isEqualTo(5_000);
    }

    @Test
    void aFewTimesUseTheirMedianAndTheRingForgets() {
        RecentEventTimes t = new RecentEventTimes();
        assertThat(t.progress()).isEqualTo(Long.MIN_VALUE);
        t.add(10);
        assertThat(t.progress()).isEqualTo(10);
        t.add(1_000_000);
        t.add(20);
        assertThat(t.progress()).as("one outlier among three is outvoted").isEqualTo(20);
        for (int i = 0; i < RecentEventTimes.SIZE; i++) t.add(5);
        assertThat(t.progress()).as("only the last 1024 count").isEqualTo(5);
    }
}
