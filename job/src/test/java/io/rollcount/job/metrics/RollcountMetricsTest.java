package io.rollcount.job.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.junit.jupiter.api.Test;

/**
 * The parts of {@link RollcountMetrics} with logic of their own: a counter that is an accumulator, the
 * event-time lag's edge cases, the latency histogram's quantiles. (That every metric reaches Prometheus
 * under its name is RunCommandMetricsIT's and DashboardIT's.)
 */
class RollcountMetricsTest {

    @Test
    void anAccumulatorCounterCountsOnceForTheAccumulatorAndTheMetric() {
        LongCounter acc = new LongCounter();
        RollcountMetrics.AccumulatorCounter c = new RollcountMetrics.AccumulatorCounter(acc);
        acc.add(3);
        c.inc();
        c.inc(5);
        c.dec();
        assertThat(c.getCount()).isEqualTo(8);
        assertThat(acc.getLocalValue()).isEqualTo(8);
    }

    @Test
    void eventTimeLagIsNaNBeforeTheFirstWatermarkAndNeverNegative() {
        assertThat(RollcountMetrics.lag(10_000, Long.MIN_VALUE)).isNaN();
        assertThat(RollcountMetrics.lag(10_000, 7_500)).isEqualTo(2_500.0);
        assertThat(RollcountMetrics.lag(10_000, Long.MAX_VALUE))
                .as("end of a bounded input")
                .isZero();
    }

    @Test
    void theLatencyHistogramGivesQuantilesOfRecentBatches() {
        Histogram h = RollcountMetrics.redisWriteLatency(new UnregisteredMetricsGroup());
        for (int i = 1; i <= 100; i++) h.update(i);
        assertThat(h.getCount()).isEqualTo(100);
        assertThat(h.getStatistics().getQuantile(0.5)).isBetween(49.0, 52.0);
        assertThat(h.getStatistics().getMax()).isEqualTo(100);
        for (int i = 0; i < RollcountMetrics.HISTOGRAM_WINDOW; i++) h.update(7);
        assertThat(h.getStatistics().getMax())
                .as("only the last %d batches", RollcountMetrics.HISTOGRAM_WINDOW)
                .isEqualTo(7);
        Counter c = RollcountMetrics.counter(new UnregisteredMetricsGroup(), RollcountMetrics.PARTIAL_SUMS);
        c.inc(2);
        assertThat(c.getCount()).isEqualTo(2);
    }
}
