package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import java.util.SplittableRandom;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * Keyed state per counter of {@link CountPerCounter}, with and without users, measured as the size of a
 * full snapshot of its keyed state (state values, their keys and the timers) divided by the counters:
 * 2,000 counters, each with a partial sum every 20 s of event time for 10 minutes (so every resolution
 * has open and closed-but-not-final windows, as a steadily active counter does), the watermark 5 s behind.
 * Prints a RESULT line; the assertions are the budget the design promises (small state per counter).
 */
class StateSizeTest {
    private static final int COUNTERS = 2_000;
    private static final long START = 1_764_000_000_000L;

    private static long bytesPerCounter(int usersPerPartial) throws Exception {
        SplittableRandom random = new SplittableRandom(7);
        try (var h = new KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate>(
                new CountPerCounter(CountPerCounterSettings.of(60_000, 1_000).withSliceMillis(Long.MAX_VALUE)),
                p -> p.counter,
                Types.STRING)) {
            h.open();
            long end = START + 600_000;
            for (long t = START; t < end; t += 20_000) {
                for (int c = 0; c < COUNTERS; c++) {
                    PartialSum p = new PartialSum("post:" + c + ":likes", Resolution.S5.windowStart(t));
                    p.add(1 + random.nextInt(3), t, 3_600_000);
                    String[] users = new String[usersPerPartial];
                    for (int u = 0; u < usersPerPartial; u++) users[u] = "u" + random.nextInt(100_000);
                    p.users = java.util.Arrays.stream(users).distinct().toArray(String[]::new);
                    h.processElement(p, p.bucket);
                }
                h.processWatermark(new Watermark(t - 5_000));
            }
            OperatorSubtaskState snapshot = h.snapshot(1, end);
            return snapshot.getStateSize() / COUNTERS;
        }
    }

    @Test
    void stateStaysSmallPerCounter() throws Exception {
        long without = bytesPerCounter(0);
        long with = bytesPerCounter(3);
        System.out.printf(
                "RESULT state.per_counter without_users_bytes=%d with_users_bytes=%d counters=%d "
                        + "run=StateSizeTest(partial-every-20s-for-10min,3-users-per-partial) measure=full-keyed-snapshot%n",
                without, with, COUNTERS);
        assertThat(without).as("bytes per counter without users").isPositive().isLessThan(1_500);
        assertThat(with)
                .as("bytes per counter with users (three sparse HyperLogLogs)")
                .isGreaterThan(without)
                .isLessThan(4_000);
    }
}
