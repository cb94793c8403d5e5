package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The trending sketch as its class comment states it: scores halve with each half-life, non-positive weights
 * count nothing, the top items come out in order of score, merging two sketches reports what one sketch of both
 * streams reports, and over a skewed stream every item above {@code N / (capacity + 1)} is reported with its
 * true decayed count within {@code [lower, upper]} and {@code upper - lower <= N / (capacity + 1)}.
 */
class TrendingSketchTest {
    private static final long H = 3_600_000L; // an hour
    private static final long T0 = 1_796_000_000_000L / H * H;

    @Test
    void aScoreHalvesAtEachHalfLife() {
        TrendingSketch s = new TrendingSketch(H);
        s.update("a", 8, T0);
        assertThat(s.estimate("a", T0)).isCloseTo(8, within(1e-9));
        assertThat(s.estimate("a", T0 + H)).isCloseTo(4, within(1e-9));
        assertThat(s.estimate("a", T0 + 2 * H)).isCloseTo(2, within(1e-9));
        RankedItem a = s.topK(1, T0 + H).get(0);
        assertThat(a.item()).isEqualTo("a");
        assertThat(a.score()).isCloseTo(4, within(1e-9));
        assertThat(s.totalWeight(T0 + 3 * H)).isCloseTo(1, within(1e-9));
        // after a landmark move (an event two half-lives on) the old weight is still decayed exactly
        s.update("b", 1, T0 + 2 * H + 5);
        assertThat(s.estimate("a", T0 + 2 * H)).isCloseTo(2, within(1e-9));
        // topK() without a time decays to the latest event seen
        assertThat(s.topK(2)).extracting(RankedItem::item).containsExactly("a", "b");
        assertThat(s.topK(2).get(0).score()).isCloseTo(8 * Math.pow(2, -(2.0 * H + 5) / H), within(1e-9));
    }

    @Test
    void nonPositiveWeightsCountNothingAndNonFiniteOnesAreRefused() {
        TrendingSketch s = new TrendingSketch(H);
        s.update("a", 3, T0);
        s.update("a", -5, T0 + 1);
        s.update("b", 0, T0 + 2);
        assertThat(s.estimate("a", T0)).isCloseTo(3, within(1e-9));
        assertThat(s.topK(10, T0)).extracting(RankedItem::item).containsExactly("a");
        assertThatThrownBy(() -> s.update("a", Double.NaN, T0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> s.update("a", Double.POSITIVE_INFINITY, T0))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aRecentItemOutranksAnOlderHeavierOneOnceDecayed() {
        TrendingSketch s = new TrendingSketch(H);
        s.update("old", 10, T0);
        s.update("mid", 7, T0 + H / 2);
        s.update("new", 6, T0 + H);
        // at T0 + h: old 5, mid 7 / sqrt(2) ~ 4.95, new 6
        List<RankedItem> top = s.topK(3, T0 + H);
        assertThat(top).extracting(RankedItem::item).containsExactly("new", "old", "mid");
        assertThat(top.get(0).score()).isGreaterThanOrEqualTo(top.get(1).score());
        assertThat(top.get(1).score()).isGreaterThanOrEqualTo(top.get(2).score());
        // decay scales every score alike: later, the same order at a quarter of the scores
        List<RankedItem> later = s.topK(3, T0 + 3 * H);
        assertThat(later).extracting(RankedItem::item).containsExactly("new", "old", "mid");
        assertThat(later.get(0).score()).isCloseTo(top.get(0).score() / 4, within(1e-9));
        assertThat(s.topK(2, T0 + H)).hasSize(2);
    }

    @Test
    void mergedSketchesReportWhatOneSketchOfBothStreamsReports() {
        int[] stream = new Zipf(5_000, 1.1).sample(60_000, 11);
        String[] names = Zipf.names(5_000);
        TrendingSketch whole = new TrendingSketch(50, 0.001, 0.01, 3, H);
        TrendingSketch left = new TrendingSketch(50, 0.001, 0.01, 3, H);
        TrendingSketch right = new TrendingSketch(50, 0.001, 0.01, 3, H);
        for (int i = 0; i < stream.length; i++) {
            long t = T0 + i * 60L; // one hour of events
            whole.update(names[stream[i]], 1, t);
            (i % 2 == 0 ? left : right).update(names[stream[i]], 1, t);
        }
        left.merge(right);
        long now = T0 + H;
        assertThat(left.totalWeight(now)).isCloseTo(whole.totalWeight(now), within(whole.totalWeight(now) * 1e-9));
        Set<String> mergedTop = items(left.topK(5, now));
        assertThat(mergedTop).isEqualTo(items(whole.topK(5, now)));
        for (String item : mergedTop) {
            assertThat(left.estimate(item, now)).as(item).isGreaterThan(0);
        }
        // a sketch of another half-life is refused, and nothing of this one changed
        byte[] before = left.toBytes();
        assertThatThrownBy(() -> left.merge(new TrendingSketch(50, 0.001, 0.01, 3, 2 * H)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(left.toBytes()).isEqualTo(before);
    }

    @Test
    void everyHeavyItemIsReportedWithinItsBounds() {
        int capacity = 40;
        int[] stream = new Zipf(20_000, 1.1).sample(200_000, 5);
        String[] names = Zipf.names(20_000);
        TrendingSketch s = new TrendingSketch(capacity, 0.001, 0.01, 9, H);
        Map<String, Double> truth = new HashMap<>();
        long now = T0 + 2 * H;
        for (int i = 0; i < stream.length; i++) {
            long t = T0 + i * 36L; // two hours of events
            s.update(names[stream[i]], 1, t);
            truth.merge(names[stream[i]], Math.pow(2, -(double) (now - t) / H), Double::sum);
        }
        double n = s.totalWeight(now);
        assertThat(n)
                .isCloseTo(
                        truth.values().stream().mapToDouble(Double::doubleValue).sum(), within(n * 1e-9));
        double threshold = n / (capacity + 1);
        List<RankedItem> top = s.topK(capacity, now);
        Set<String> reported = items(top);
        truth.forEach((item, count) -> {
            if (count > threshold)
                assertThat(reported).as(item + " (" + count + ")").contains(item);
        });
        for (RankedItem r : top) {
            double count = truth.getOrDefault(r.item(), 0.0);
            assertThat(count).as(r.item()).isBetween(r.lower() - 1e-6, r.upper() + 1e-6);
            assertThat(r.upper() - r.lower()).as(r.item()).isLessThanOrEqualTo(threshold + 1e-6);
        }
    }

    @Test
    void itsBytesReadBackToTheSameSketchAndAnythingElseIsRefused() {
        TrendingSketch s = new TrendingSketch(H);
        for (int i = 0; i < 500; i++) s.update("item-" + (i % 37), 1 + i % 3, T0 + i * 10_000L);
        TrendingSketch back = TrendingSketch.fromBytes(s.toBytes());
        assertThat(back.toBytes()).isEqualTo(s.toBytes());
        assertThat(back.topK(10)).isEqualTo(s.topK(10));
        assertThat(back.halfLifeMillis()).isEqualTo(H);
        assertThat(back.capacity()).isEqualTo(TrendingSketch.DEFAULT_CAPACITY);
        byte[] wrong = s.toBytes();
        wrong[1] = 0;
        assertThatThrownBy(() -> TrendingSketch.fromBytes(wrong)).isInstanceOf(SketchFormatException.class);
        assertThatThrownBy(() -> TrendingSketch.fromBytes(new byte[3])).isInstanceOf(SketchFormatException.class);
    }

    private static Set<String> items(List<RankedItem> ranked) {
        return ranked.stream().map(RankedItem::item).collect(Collectors.toSet());
    }
}
