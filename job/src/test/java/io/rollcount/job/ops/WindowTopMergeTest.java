package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.TopList;
import io.rollcount.job.model.WindowTop;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * {@link WindowTopMerge} in Flink's operator test harness: the local lists of a window merged into its top K,
 * emitted once the watermark passes the window's end, then its state cleared.
 */
class WindowTopMergeTest {
    private static final long START = 1_764_000_000_000L;
    private static final long END = START + Resolution.M1.sizeMillis - 1;

    private static WindowTop local(String ns, Object... counterSum) {
        WindowTop t = new WindowTop();
        t.ns = ns;
        t.res = Resolution.M1.label;
        t.start = START;
        t.counters = new String[counterSum.length / 2];
        t.sums = new long[counterSum.length / 2];
        for (int i = 0; i < t.counters.length; i++) {
            t.counters[i] = (String) counterSum[2 * i];
            t.sums[i] = ((Number) counterSum[2 * i + 1]).longValue();
        }
        return t;
    }

    @Test
    void mergesTheLocalListsAndEmitsTheTopKWhenTheWatermarkPassesTheWindowsEnd() throws Exception {
        try (var h = new KeyedOneInputStreamOperatorTestHarness<String, WindowTop, TopList>(
                new KeyedProcessOperator<>(new WindowTopMerge(2)), WindowTop::groupKey, Types.STRING)) {
            h.open();
            h.processElement(local("a", "a:1", 9, "a:2", 4), START);
            h.processElement(local("a", "a:3", 6, "a:4", 5), START);
            // a counter sent again (a list flushed early, then at the window's close) keeps its latest sum
            h.processElement(local("a", "a:1", 10), START);
            h.processElement(local("b", "b:1", 1), START);

            h.processWatermark(new Watermark(END - 1));
            assertThat(h.extractOutputValues()).isEmpty();

            h.processWatermark(new Watermark(END));
            assertThat(h.extractOutputValues())
                    .hasSize(2)
                    .anySatisfy(t -> {
                        assertThat(t.ns).isEqualTo("a");
                        assertThat(t.kind).isEqualTo(TopList.WINDOW);
                        assertThat(t.res).isEqualTo("1m");
                        assertThat(t.start).isEqualTo(START);
                        assertThat(t.at).isEqualTo(END);
                        assertThat(t.counters).containsExactly("a:1", "a:3");
                        assertThat(t.scores).containsExactly(10, 6);
                        assertThat(t.estimates).containsExactly(10, 6);
                    })
                    .anySatisfy(t -> assertThat(t.counters).containsExactly("b:1"));
            assertThat(h.numKeyedStateEntries())
                    .as("state cleared once emitted")
                    .isZero();

            h.processWatermark(new Watermark(END + Resolution.M1.sizeMillis));
            assertThat(h.extractOutputValues()).as("emitted once").hasSize(2);
        }
    }
}
