package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.WindowSum;
import io.rollcount.job.model.WindowTop;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * {@link LocalWindowTopK} in Flink's operator test harness: the local top K per (namespace, resolution, window) and
 * for {@code _all}, sent on before the watermark that closes the window, and at a barrier or the end of input.
 */
class LocalWindowTopKTest {
    private static final long START = 1_764_000_000_000L; // a 1 m and 1 h window start
    private static final long MINUTE_END = START + Resolution.M1.sizeMillis - 1;

    private static OneInputStreamOperatorTestHarness<WindowSum, WindowTop> harness(int topk) throws Exception {
        var h = new OneInputStreamOperatorTestHarness<WindowSum, WindowTop>(new LocalWindowTopK(topk));
        h.open();
        return h;
    }

    private static void send(
            OneInputStreamOperatorTestHarness<WindowSum, WindowTop> h, String counter, Resolution res, long sum)
            throws Exception {
        h.processElement(new WindowSum(counter, res.label, START, sum), START);
    }

    /** The lists by {@link WindowTop#groupKey}, each as "counter=sum" best first. */
    private static Map<String, List<String>> lists(List<WindowTop> tops) {
        Map<String, List<String>> m = new TreeMap<>();
        for (WindowTop t : tops) {
            List<String> l = new ArrayList<>();
            for (int i = 0; i < t.counters.length; i++) l.add(t.counters[i] + "=" + t.sums[i]);
            assertThat(m.put(t.groupKey(), l)).as("one list per group").isNull();
        }
        return m;
    }

    @Test
    void sendsTheTopKOfEachNamespaceAndOfAllBeforeTheWatermarkThatClosesTheWindow() throws Exception {
        try (var h = harness(2)) {
            send(h, "a:x", Resolution.M1, 5);
            send(h, "a:y", Resolution.M1, 7);
            send(h, "a:z", Resolution.M1, 7);
            send(h, "b:w", Resolution.M1, 10);
            send(h, "a:x", Resolution.H1, 50);

            h.processWatermark(new Watermark(MINUTE_END - 1));
            assertThat(h.extractOutputValues()).as("the minute is still open").isEmpty();

            int before = h.getOutput().size();
            h.processWatermark(new Watermark(MINUTE_END));
            List<Object> out =
                    new ArrayList<>(h.getOutput()).subList(before, h.getOutput().size());
            assertThat(out).hasSize(4);
            assertThat(out.get(3)).as("the lists before the watermark").isEqualTo(new Watermark(MINUTE_END));
            assertThat(out.subList(0, 3)).allMatch(o -> o instanceof StreamRecord<?>);
            // ties by the smaller counter id; the hour stays until its own end
            assertThat(lists(h.extractOutputValues()))
                    .isEqualTo(Map.of(
                            "1m:" + START + ":a", List.of("a:y=7", "a:z=7"),
                            "1m:" + START + ":b", List.of("b:w=10"),
                            "1m:" + START + ":_all", List.of("b:w=10", "a:y=7")));

            h.endInput();
            assertThat(lists(h.extractOutputValues()))
                    .containsEntry("1h:" + START + ":a", List.of("a:x=50"))
                    .containsEntry("1h:" + START + ":_all", List.of("a:x=50"))
                    .hasSize(5);
        }
    }

    @Test
    void aCheckpointBarrierSendsTheOpenListsOn() throws Exception {
        try (var h = harness(3)) {
            send(h, "a:x", Resolution.M1, 1);
            h.prepareSnapshotPreBarrier(1);
            assertThat(h.extractOutputValues())
                    .extracting(WindowTop::groupKey)
                    .containsExactlyInAnyOrder("1m:" + START + ":a", "1m:" + START + ":_all");
            assertThat(h.extractOutputValues())
                    .allSatisfy(t -> assertThat(Arrays.asList(t.counters)).containsExactly("a:x"));
        }
    }

    /**
     * The closed sums of 1,200 counters in three namespaces, of two resolutions and two starts each, with many ties,
     * in random order: each list is the best {@code k} of its group by sum, then counter id.
     */
    @Test
    void everyListIsTheBestKOfItsGroupWhateverTheOrder() throws Exception {
        Random rnd = new Random(7);
        List<WindowSum> sums = new ArrayList<>();
        for (int c = 0; c < 1_200; c++)
            for (Resolution res : List.of(Resolution.M1, Resolution.H1))
                for (int w = 0; w < 2; w++)
                    sums.add(new WindowSum(
                            "ns" + c % 3 + ":c" + c, res.label, START + w * res.sizeMillis, rnd.nextInt(40)));
        Collections.shuffle(sums, rnd);
        int k = 5;
        try (var h = harness(k)) {
            for (WindowSum w : sums) h.processElement(w, w.start);
            h.endInput();
            Map<String, List<LocalWindowTopK.Entry>> byGroup = new TreeMap<>();
            for (WindowSum w : sums)
                for (String ns : List.of(w.counter.substring(0, 3), "_all"))
                    byGroup.computeIfAbsent(w.res + ":" + w.start + ":" + ns, x -> new ArrayList<>())
                            .add(new LocalWindowTopK.Entry(w.counter, w.sum));
            Map<String, List<String>> expected = new TreeMap<>();
            byGroup.forEach((group, entries) -> expected.put(
                    group,
                    entries.stream()
                            .sorted(LocalWindowTopK.BEST_FIRST)
                            .limit(k)
                            .map(e -> e.counter() + "=" + e.sum())
                            .toList()));
            assertThat(expected).hasSize(16);
            assertThat(lists(h.extractOutputValues())).isEqualTo(expected);
        }
    }

    /** The ranking holds at the ends of a long: the smallest sum ranks last, not first. */
    @Test
    void theSmallestSumRanksLast() {
        List<LocalWindowTopK.Entry> l = new ArrayList<>(List.of(
                new LocalWindowTopK.Entry("a", Long.MIN_VALUE),
                new LocalWindowTopK.Entry("b", Long.MAX_VALUE),
                new LocalWindowTopK.Entry("c", 0),
                new LocalWindowTopK.Entry("d", 0)));
        l.sort(LocalWindowTopK.BEST_FIRST);
        assertThat(l).extracting(LocalWindowTopK.Entry::counter).containsExactly("b", "c", "d", "a");
    }
}
