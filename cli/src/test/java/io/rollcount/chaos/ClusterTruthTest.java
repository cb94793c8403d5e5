package io.rollcount.chaos;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.gen.EventGenerator.Generated;
import org.junit.jupiter.api.Test;

class ClusterTruthTest {
    private static final long T = 1_700_006_400_000L; // a 1d window's start, so every resolution's start too

    private static Generated event(String counter, long delta, long ts, String id) {
        return new Generated("{}", counter, delta, ts, id, null, false);
    }

    @Test
    void aWithdrawnEventLeavesTheTruthAsIfItHadNeverBeenCounted() {
        ClusterTruth withLate = new ClusterTruth();
        ClusterTruth without = new ClusterTruth();
        for (ClusterTruth t : new ClusterTruth[] {withLate, without}) {
            t.add(event("c", 2, T + 61_000, "a"));
            t.add(event("c", 5, T + 1_000, "b")); // 1m and 5s windows of their own
        }
        Generated late = event("c", 1, T + 1_500, "late-1"); // shares the 5s window with "b"
        Generated lateAlone = event("c", 1, T + 130_000, "late-2"); // the only event of its 5s and 1m windows
        withLate.add(late);
        withLate.add(lateAlone);

        withLate.withdraw(late);
        withLate.withdraw(lateAlone);

        assertThat(withLate.redisKeys("rc")).isEqualTo(without.redisKeys("rc"));
        assertThat(withLate.windows.keySet()).isEqualTo(without.windows.keySet());
        withLate.windows.forEach((w, v) -> assertThat(v).as(w.toString()).containsExactly(without.windows.get(w)));
        assertThat(withLate.counted).isEqualTo(without.counted);
    }
}
