package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.TopList;
import io.rollcount.job.model.TrendCandidates;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * {@link TrendingMerge} in Flink's operator test harness: the shards' latest candidates, brought to one time and
 * ranked per namespace and for {@code _all}; lists published on the processing-time tick only when something
 * changed, and then only the touched namespaces; at most {@code maxNamespaces} namespaces; restored candidates.
 */
class TrendingMergeTest {
    private static final long HALF_LIFE = 3_600_000;
    private static final long PUBLISH = 1_000;
    private static final long AT = 1_764_000_000_000L;

    private static TrendCandidates shard(int shard, long at, Object... counterScore) {
        TrendCandidates c = new TrendCandidates();
        c.shard = shard;
        c.at = at;
        int n = counterScore.length / 2;
        c.counters = new String[n];
        c.scores = new double[n];
        c.lowers = new double[n];
        for (int i = 0; i < n; i++) {
            c.counters[i] = (String) counterScore[2 * i];
            c.scores[i] = ((Number) counterScore[2 * i + 1]).doubleValue();
            c.lowers[i] = c.scores[i];
        }
        return c;
    }

    private static OneInputStreamOperatorTestHarness<TrendCandidates, TopList> harness(int maxNamespaces)
            throws Exception {
        return new OneInputStreamOperatorTestHarness<>(new TrendingMerge(2, HALF_LIFE, PUBLISH, maxNamespaces));
    }

    /** The published lists by namespace, each as "counter=score" best first. */
    private static Map<String, List<String>> lists(List<TopList> out) {
        Map<String, List<String>> m = new TreeMap<>();
        for (TopList t : out) {
            assertThat(t.kind).isEqualTo(TopList.TRENDING);
            List<String> l = new ArrayList<>();
            for (int i = 0; i < t.counters.length; i++)
                l.add(t.counters[i] + "=" + Math.round(t.scores[i] * 1000) / 1000.0);
            m.put(t.ns, l);
        }
        return m;
    }

    @Test
    void ranksTheShardsCandidatesAtTheLatestTimeAndPublishesOnlyWhatChanged() throws Exception {
        try (var h = harness(1000)) {
            h.open();
            h.processElement(shard(0, AT, "a:x", 8, "b:y", 4), 0);
            h.processElement(shard(1, AT + HALF_LIFE, "a:z", 3), 0);
            assertThat(h.getOutput()).as("nothing before the tick").isEmpty();

            h.setProcessingTime(PUBLISH);
            List<TopList> first = h.extractOutputValues();
            // shard 0's scores halve on the way to shard 1's time
            assertThat(lists(first))
                    .isEqualTo(Map.of(
                            "a", List.of("a:x=4.0", "a:z=3.0"),
                            "b", List.of("b:y=2.0"),
                            "_all", List.of("a:x=4.0", "a:z=3.0")));
            assertThat(first).allSatisfy(t -> assertThat(t.at).isEqualTo(AT + HALF_LIFE));

            h.setProcessingTime(2 * PUBLISH);
            assertThat(h.extractOutputValues())
                    .as("nothing new, nothing published")
                    .hasSize(3);

            // shard 0 again, decayed only: no namespace touched, only _all is published
            h.processElement(shard(0, AT + HALF_LIFE, "a:x", 4, "b:y", 2), 0);
            h.setProcessingTime(3 * PUBLISH);
            List<TopList> all = h.extractOutputValues();
            assertThat(all).hasSize(4);
            assertThat(all.get(3).ns).isEqualTo(CounterId.ALL_NAMESPACES);

            // a changed score in namespace b: b and _all
            h.processElement(shard(0, AT + HALF_LIFE, "a:x", 4, "b:y", 9), 0);
            h.setProcessingTime(4 * PUBLISH);
            List<TopList> out = h.extractOutputValues();
            assertThat(out.subList(4, out.size())).extracting(t -> t.ns).containsExactly("b", CounterId.ALL_NAMESPACES);
            assertThat(lists(out.subList(4, out.size()))).containsEntry("_all", List.of("b:y=9.0", "a:x=4.0"));

            // an older report of a shard does not replace a newer one
            h.processElement(shard(0, AT, "a:q", 100), 0);
            h.endInput();
            assertThat(lists(h.extractOutputValues()
                                    .subList(6, h.extractOutputValues().size()))
                            .get("_all"))
                    .containsExactly("b:y=9.0", "a:x=4.0");
        }
    }

    @Test
    void atMostMaxNamespacesGetListsOfTheirOwnTheOthersAreInAllOnly() throws Exception {
        try (var h = harness(1)) {
            h.open();
            h.processElement(shard(0, AT, "a:x", 1, "b:y", 5), 0);
            h.endInput();
            assertThat(lists(h.extractOutputValues()))
                    .isEqualTo(Map.of(
                            "a", List.of("a:x=1.0"),
                            "_all", List.of("b:y=5.0", "a:x=1.0")));
        }
    }

    @Test
    void restoredCandidatesMakeTheFirstListsComplete() throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = harness(1000)) {
            h.open();
            h.processElement(shard(0, AT, "a:x", 8), 0);
            h.processElement(shard(1, AT, "a:y", 6), 0);
            snapshot = h.snapshot(1, 0);
        }
        try (var h = harness(1000)) {
            h.initializeState(snapshot);
            h.open();
            h.processElement(shard(1, AT, "a:y", 7), 0);
            h.endInput();
            assertThat(lists(h.extractOutputValues())).containsEntry("a", List.of("a:x=8.0", "a:y=7.0"));
        }
    }
}
