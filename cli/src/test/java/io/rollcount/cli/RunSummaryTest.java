package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.LocalMetrics;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.junit.jupiter.api.Test;

/** The summary of {@code ./rollcount run}: a run that rebuilt Redis after a loss says what it wrote again. */
class RunSummaryTest {
    private static String summary(Map<String, Object> accumulators) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        LocalMetrics metrics = LocalMetrics.addTo(new Configuration());
        RunCommand.printSummary(accumulators, metrics, 2.0, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        return bytes.toString(StandardCharsets.UTF_8);
    }

    @Test
    void aRunWithALossSaysWhatWasRebuilt() {
        String s = summary(Map.of(
                JobAccumulators.EVENTS_READ, 1000L,
                JobAccumulators.REDIS_LOSSES, 1L,
                JobAccumulators.REDIS_REBUILT_COUNTERS, 2001L,
                JobAccumulators.REDIS_REBUILT_ROLLUP_KEYS, 3456L));
        assertThat(s)
                .contains(
                        "  Redis rebuilt      after 1 loss of its data: 2,001 counters from the job's state, 3,456 keys"
                                + " of closed windows and top-K lists from counter-rollups");
    }

    @Test
    void aRunWithoutALossSaysNothingOfRebuilds() {
        assertThat(summary(Map.of(JobAccumulators.EVENTS_READ, 1000L))).doesNotContain("rebuilt");
    }
}
