package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.TopList;
import io.rollcount.job.model.TrendCandidates;
import io.rollcount.job.model.TrendWeight;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * The trending operators where the shards' summaries overflow (far more counters per shard than the
 * Space-Saving capacity), which the end-to-end test does not reach: every reported score brackets the
 * closed-form decayed count ({@code estimate <= true <= score}), and the heavy counters of each namespace
 * are all found, in the right order.
 */
class TrendPerShardTest {
    private static final long START = 1_764_000_000_000L;
    private static final long HALF_LIFE = 600_000;

    @Test
    void overflowingShardsStillBracketTheTrueScoresAndRankTheHeavyCounters() throws Exception {
        Random rnd = new Random(5);
        List<PartialSum> partials = new ArrayList<>();
        Map<String, Double> weights = new HashMap<>(); // (counter, ts) events as (counter -> list) below
        List<String[]> events = new ArrayList<>();
        long span = 7_200_000;
        // Heavy counters: "a:h<r>" with about 3000 / (r + 1) events, "b:h<r>" with 800 / (r + 1), spread over
        // the two hours, the a-counters with even r mostly early and odd r mostly late (so decay reorders them).
        for (int r = 0; r < 60; r++) {
            for (int i = 0; i < 3000 / (r + 1); i++)
                events.add(new String[] {"a:h" + r, Long.toString(ts(rnd, span, r % 2 == 0))});
            for (int i = 0; i < 800 / (r + 1); i++)
                events.add(new String[] {"b:h" + r, Long.toString(ts(rnd, span, rnd.nextBoolean()))});
        }
        // A long tail: 150,000 counters with one event each, about 1,170 per shard (capacity 400).
        for (int i = 0; i < 150_000; i++)
            events.add(new String[] {(i % 3 == 0 ? "b:t" : "a:t") + i, Long.toString(START + rnd.nextLong(span))});
        java.util.Collections.shuffle(events, rnd);
        events.sort(Comparator.comparingLong(e -> Long.parseLong(e[1]) / 5_000)); // bucket order, shuffled within
        for (String[] e : events) {
            long ts = Long.parseLong(e[1]);
            PartialSum p = new PartialSum(e[0], Math.floorDiv(ts, 5_000L) * 5_000L);
            p.add(1, ts, HALF_LIFE);
            partials.add(p);
        }
        long now = START + span;
        for (String[] e : events)
            weights.merge(e[0], Math.pow(2, -(double) (now - Long.parseLong(e[1])) / HALF_LIFE), Double::sum);

        TrendPerShard shardOp = new TrendPerShard(HALF_LIFE, 100, 3_600_000);
        List<TrendCandidates> candidates;
        try (var h = new KeyedOneInputStreamOperatorTestHarness<Integer, TrendWeight, TrendCandidates>(
                shardOp, p -> TrendPerShard.shardOf(p.counter), Types.INT)) {
            h.open();
            for (PartialSum p : partials) h.processElement(TrendWeight.of(p), p.bucket);
            h.processWatermark(new Watermark(now));
            h.processWatermark(new Watermark(Long.MAX_VALUE));
            h.endInput();
            candidates = h.extractOutputValues();
        }
        assertThat(candidates).hasSize(TrendPerShard.SHARDS);
        assertThat(candidates).allSatisfy(c -> assertThat(c.at).isEqualTo(now));

        List<TopList> lists;
        try (var h = new OneInputStreamOperatorTestHarness<TrendCandidates, TopList>(
                new TrendingMerge(100, HALF_LIFE, 3_600_000))) {
            h.open();
            for (TrendCandidates c : candidates) h.processElement(c, 0);
            h.endInput();
            lists = h.extractOutputValues();
        }
        double worst = 0;
        double widest = 0;
        int tailReported = 0;
        for (TopList t : lists) {
            assertThat(t.counters).hasSize(100);
            for (int i = 0; i < t.counters.length; i++) {
                double truth = weights.get(t.counters[i]);
                assertThat(truth)
                        .as("true score of " + t.counters[i] + " within its bounds")
                        .isBetween(t.estimates[i] * (1 - 1e-9), t.scores[i] * (1 + 1e-9));
                if (i > 0) assertThat(t.scores[i]).isLessThanOrEqualTo(t.scores[i - 1]);
                if (t.counters[i].contains(":h")) worst = Math.max(worst, (t.scores[i] - truth) / truth);
                else tailReported++;
                widest = Math.max(widest, (t.scores[i] - t.estimates[i]) / truth);
            }
            // The 30 heaviest counters of the namespace (true scores far above any tail counter's), in true order.
            List<String> heavy = weights.entrySet().stream()
                    .filter(e -> e.getKey().contains(":h")
                            && (t.ns.equals("_all") || e.getKey().startsWith(t.ns + ":")))
                    .filter(e -> e.getValue() > 3)
                    .sorted(Map.Entry.<String, Double>comparingByValue().reversed())
                    .limit(30)
                    .map(Map.Entry::getKey)
                    .toList();
            assertThat(heavy).hasSize(30);
            List<String> reported =
                    java.util.Arrays.stream(t.counters).filter(heavy::contains).toList();
            assertThat(reported)
                    .as("heavy counters of " + t.ns + " in true order")
                    .isEqualTo(heavy);
        }
        assertThat(lists).extracting(t -> t.ns).containsExactlyInAnyOrder("a", "b", "_all");
        System.out.printf(
                "TrendPerShardTest: %d partials over %d shards; heavy counters' max relative score overestimate %.2e; "
                        + "%d tail counters listed, widest bound (score - estimate) / true score %.3f%n",
                partials.size(), TrendPerShard.SHARDS, worst, tailReported, widest);
    }

    private static long ts(Random rnd, long span, boolean early) {
        double u = rnd.nextDouble();
        double x = early ? u * u : 1 - u * u;
        return START + (long) (x * (span - 1));
    }
}
