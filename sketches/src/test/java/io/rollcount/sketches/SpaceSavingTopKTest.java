package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.assertj.core.api.Assertions.within;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class SpaceSavingTopKTest {
    private static final long HOUR = 3_600_000L;
    private static final long T0 = 1_796_000_000_000L / HOUR * HOUR;
    private static final int ITEMS = 1_000_000;
    private static String[] names;
    private static int[] stream;

    @BeforeAll
    static void zipfStream() {
        names = Zipf.names(ITEMS);
        stream = new Zipf(ITEMS, 1.1).sample(10_000_000, 2026);
    }

    private static Set<String> trueTop(double[] counts, int k) {
        return IntStream.range(0, counts.length)
                .boxed()
                .sorted(Comparator.comparingDouble((Integer r) -> -counts[r]).thenComparing(r -> r))
                .limit(k)
                .map(r -> names[r])
                .collect(Collectors.toSet());
    }

    private static double recall(List<RankedItem> reported, Set<String> truth) {
        return reported.stream().filter(r -> truth.contains(r.item())).count() / (double) truth.size();
    }

    @Test
    void recallOfTheTrueTop100OfZipfTenMillionEventsWithCapacity400() {
        TrendingSketch trending = new TrendingSketch(400, 0.001, 0.01, 3, 0);
        SpaceSavingTopK plain = new SpaceSavingTopK(400, 0);
        double[] truth = new double[ITEMS];
        for (int r : stream) {
            truth[r]++;
            trending.update(names[r], 1, T0);
            plain.update(names[r], 1, T0);
        }
        Set<String> top100 = trueTop(truth, 100);
        double withCms = recall(trending.topK(100, T0), top100);
        double spaceSaving = recall(plain.topK(100, T0), top100);
        System.out.printf(
                "top-K zipf(1.1) 10M events 1M items capacity 400: recall@100 trending (CMS+SS) %.3f,"
                        + " Space-Saving alone %.3f%n",
                withCms, spaceSaving);
        assertThat(withCms).isGreaterThanOrEqualTo(0.99);
        // Classic Space-Saving alone cannot tell rank 100 (about 7,800 events here) from the churn of
        // a tail holding a third of N: its minimum counter sits near N / 401 = 24,900. It still keeps
        // its guarantee, checked below; the Count-Min bound on newcomers is what lifts the recall.
        assertGuarantees(trending.topK(400, T0), truth, stream.length, 400);
        assertGuarantees(plain.topK(400, T0), truth, stream.length, 400);
    }

    @Test
    void decayedRecallAndGuaranteesOverThreeHalfLives() {
        int events = 2_000_000;
        long span = 3 * HOUR;
        TrendingSketch trending = new TrendingSketch(400, 0.001, 0.01, 3, HOUR);
        double[] decayed = new double[ITEMS];
        long now = T0 + span;
        SplittableRandom random = new SplittableRandom(5);
        int[] shifted = new int[events];
        for (int i = 0; i < events; i++) {
            // popularity drifts: the ranks rotate by 1000 every half hour, so the decayed top differs from the raw top
            long t = T0 + span * i / events;
            int r = (stream[i] + (int) ((t - T0) / (HOUR / 2)) * 1000) % ITEMS;
            shifted[i] = r;
            long eventTime = t - random.nextInt(60_000); // a little out of order
            trending.update(names[r], 1, eventTime);
            decayed[r] += Math.pow(2, -(now - eventTime) / (double) HOUR);
        }
        double n = Arrays.stream(decayed).sum();
        assertThat(trending.totalWeight(now)).isCloseTo(n, within(1e-9 * n));
        double recall = recall(trending.topK(100, now), trueTop(decayed, 100));
        System.out.printf("top-K decayed (half-life 1 h over 3 h, drifting zipf) recall@100 %.3f%n", recall);
        assertThat(recall).isGreaterThanOrEqualTo(0.99);
        assertGuarantees(trending.topK(400, now), decayed, n, 400);
        int checked = 0;
        for (int r = 0; r < ITEMS; r += 7) {
            if (decayed[r] > 0) {
                assertThat(trending.estimate(names[r], now))
                        .as("estimate of rank %d", r)
                        .isGreaterThanOrEqualTo(decayed[r] * (1 - 1e-9));
                checked++;
            }
        }
        assertThat(checked).isGreaterThan(10_000);
    }

    /** Every reported bound holds; every item over N / (capacity + 1) is reported. */
    private static void assertGuarantees(List<RankedItem> reported, double[] truth, double n, int capacity) {
        java.util.Map<String, Integer> rank = new java.util.HashMap<>();
        for (int r = 0; r < truth.length; r++) {
            if (truth[r] > 0) {
                rank.put(names[r], r);
            }
        }
        Set<String> items = new HashSet<>();
        for (RankedItem item : reported) {
            double t = truth[rank.get(item.item())];
            double slack = 1e-9 * n;
            assertThat(item.lower()).as("lower bound of %s", item.item()).isLessThanOrEqualTo(t + slack);
            assertThat(item.upper()).as("upper bound of %s", item.item()).isGreaterThanOrEqualTo(t - slack);
            assertThat(item.upper() - item.lower()).isLessThanOrEqualTo(n / (capacity + 1) + slack);
            items.add(item.item());
        }
        for (int r = 0; r < truth.length; r++) {
            if (truth[r] > n / (capacity + 1)) {
                assertThat(items)
                        .as("count %.1f > N/(capacity+1) = %.1f", truth[r], n / (capacity + 1))
                        .contains(names[r]);
            }
        }
    }

    @Test
    void guaranteesSurviveMergesOfSummariesOfDisjointSubstreams() {
        int events = 1_000_000;
        int capacity = 50;
        int parts = 4;
        TrendingSketch[] trending = new TrendingSketch[parts];
        SpaceSavingTopK[] plain = new SpaceSavingTopK[parts];
        for (int p = 0; p < parts; p++) {
            trending[p] = new TrendingSketch(capacity, 0.01, 0.05, 9, HOUR);
            plain[p] = new SpaceSavingTopK(capacity, HOUR);
        }
        double[] decayed = new double[ITEMS];
        long now = T0 + 2 * HOUR;
        SplittableRandom random = new SplittableRandom(77);
        for (int i = 0; i < events; i++) {
            int r = stream[i] % 20_000; // a flatter head: many items near the threshold
            int p = random.nextInt(parts); // items spread over every part, as over Flink key groups in time
            long t = T0 + (long) (2.0 * HOUR * i / events);
            trending[p].update(names[r], 1, t);
            plain[p].update(names[r], 1, t);
            decayed[r] += Math.pow(2, -(now - t) / (double) HOUR);
        }
        trending[0].merge(trending[1]);
        trending[2].merge(trending[3]);
        trending[0].merge(trending[2]);
        plain[0].merge(plain[1]);
        plain[2].merge(plain[3]);
        plain[0].merge(plain[2]);
        double n = Arrays.stream(decayed).sum();
        assertThat(plain[0].totalWeight(now)).isCloseTo(n, within(1e-9 * n));
        assertThat(plain[0].unmonitoredBound(now)).isLessThanOrEqualTo(n / (capacity + 1));
        assertGuarantees(trending[0].topK(capacity, now), decayed, n, capacity);
        assertGuarantees(plain[0].topK(capacity, now), decayed, n, capacity);
        double recall = recall(trending[0].topK(10, now), trueTop(decayed, 10));
        System.out.printf("merged 4 x capacity 50: recall@10 %.2f%n", recall);
        assertThat(recall).isGreaterThanOrEqualTo(0.9);
    }

    @Test
    void withoutAnEstimateItIsClassicSpaceSaving() {
        SpaceSavingTopK s = new SpaceSavingTopK(9, 0);
        SplittableRandom random = new SplittableRandom(1);
        long total = 0;
        for (int i = 0; i < 10_000; i++) {
            int w = 1 + random.nextInt(3);
            s.update("i" + random.nextInt(100), w, T0);
            total += w;
        }
        assertThat(s.size()).isEqualTo(10);
        double sumOfCounts = 0;
        List<RankedItem> all = new ArrayList<>(s.topK(9, T0));
        for (RankedItem item : all) {
            sumOfCounts += item.upper();
        }
        double min = s.unmonitoredBound(T0);
        assertThat(sumOfCounts + min).isEqualTo((double) total); // the 10 counters sum to N
    }

    /** The item table is keyed by String hash codes: equal strings meet, colliding ones stay apart. */
    @Test
    void itemsAreFoundByEqualityNotIdentityAndHashCodeCollisionsStayApart() {
        assertThat("Aa".hashCode()).isEqualTo("BB".hashCode());
        SpaceSavingTopK s = new SpaceSavingTopK(4, 0);
        for (int i = 0; i < 10; i++) {
            s.update(new String("Aa"), 1, T0); // a new String object each time, equal to the last
            s.update(i < 3 ? "BB" : "AaAa", 1, T0);
        }
        s.update("BBBB", 1, T0); // collides with "AaAa" too
        assertThat(s.topK(4, T0))
                .extracting(RankedItem::item, RankedItem::upper)
                .containsExactly(tuple("Aa", 10.0), tuple("AaAa", 7.0), tuple("BB", 3.0), tuple("BBBB", 1.0));
    }

    @Test
    void anItemMonitoredFromTheStartHasExactDecayedBounds() {
        TrendingSketch s = new TrendingSketch(10, 0.01, 0.01, 1, HOUR);
        double expected = 0;
        long now = T0 + 5 * HOUR + 123_456;
        for (int i = 0; i < 500; i++) {
            long t = T0 + i * 37_000L;
            s.update("hot", 1 + (i % 3), t);
            expected += (1 + (i % 3)) * Math.pow(2, -(now - t) / (double) HOUR);
            s.update("cold" + i, 0.01, t);
        }
        RankedItem top = s.topK(1, now).get(0);
        assertThat(top.item()).isEqualTo("hot");
        assertThat(top.lower()).isCloseTo(expected, within(1e-9 * expected));
        assertThat(top.upper()).isCloseTo(expected, within(1e-9 * expected));
        assertThat(top.score()).isEqualTo(top.upper());
    }

    @Test
    void aBurstFadesBelowASteadyItem() {
        TrendingSketch s = new TrendingSketch(HOUR);
        s.update("burst", 1000, T0);
        s.update("steady", 1, T0);
        assertThat(s.topK(2, T0 + HOUR).get(0).item()).isEqualTo("burst");
        for (int i = 1; i < 100; i++) {
            s.update("steady", 1, T0 + 6 * HOUR + i * 1000L);
        }
        List<RankedItem> later = s.topK(2, T0 + 7 * HOUR);
        assertThat(later.get(0).item()).isEqualTo("steady");
        assertThat(later.get(1).score()).isCloseTo(1000 / 128.0, within(1e-9));
    }

    @Test
    void trendingIgnoresNonPositiveWeightsAndRejectsNaN() {
        TrendingSketch s = new TrendingSketch(HOUR);
        s.update("a", 5, T0);
        s.update("a", -3, T0);
        s.update("a", 0, T0);
        assertThat(s.topK(1, T0).get(0).score()).isEqualTo(5.0);
        assertThatThrownBy(() -> s.update("a", Double.NaN, T0)).hasMessageContaining("finite");
        assertThatThrownBy(() -> new SpaceSavingTopK(5, 0).update("a", -1, T0)).hasMessageContaining(">= 0");
    }

    @Test
    void serializationRoundTripsAndRejectsCorruptBytes() {
        TrendingSketch s = new TrendingSketch(50, 0.01, 0.01, 4, HOUR);
        for (int i = 0; i < 100_000; i++) {
            s.update(names[stream[i]] + (i % 7 == 0 ? "ü" : ""), 1 + i % 5, T0 + i * 100L);
        }
        byte[] bytes = s.toBytes();
        TrendingSketch back = TrendingSketch.fromBytes(bytes);
        assertThat(back.toBytes()).isEqualTo(bytes);
        assertThat(back.topK(50)).isEqualTo(s.topK(50));
        assertThat(back.topK(20, T0 + 3 * HOUR)).isEqualTo(s.topK(20, T0 + 3 * HOUR));
        for (int i = 100_000; i < 200_000; i++) { // evictions, flushes, a landmark move: both evolve alike
            String item = names[stream[i]];
            back.update(item, 1, T0 + i * 100L);
            s.update(item, 1, T0 + i * 100L);
        }
        assertThat(back.toBytes()).isEqualTo(s.toBytes());

        byte[] truncated = Arrays.copyOf(bytes, bytes.length - 3);
        assertThatThrownBy(() -> TrendingSketch.fromBytes(truncated)).isInstanceOf(SketchFormatException.class);
        byte[] family = bytes.clone();
        family[1] = 1;
        assertThatThrownBy(() -> TrendingSketch.fromBytes(family)).hasMessageContaining("not a trending sketch");
        SpaceSavingTopK t = new SpaceSavingTopK(3, 0);
        t.update("x", 1, T0);
        byte[] topBytes = t.toBytes();
        topBytes[4] = 0; // capacity 0
        assertThatThrownBy(() -> SpaceSavingTopK.fromBytes(topBytes)).hasMessageContaining("capacity 0");
    }

    @Test
    void readsVersionOneBytes() {
        SpaceSavingTopK s = new SpaceSavingTopK(20, HOUR);
        for (int i = 0; i < 50_000; i++) {
            s.update(names[stream[i]], 1, T0 + i * 1000L);
        }
        byte[] v2 = s.toBytes();
        java.io.ByteArrayOutputStream v1 = new java.io.ByteArrayOutputStream();
        v1.write(v2, 0, 44);
        int at = 44;
        for (int j = 0; j < s.size(); j++) { // version 1: no pending weight after each item
            int length = java.nio.ByteBuffer.wrap(v2, at, 4)
                    .order(java.nio.ByteOrder.LITTLE_ENDIAN)
                    .getInt();
            v1.write(v2, at, 4 + length + 16);
            at += 4 + length + 24;
        }
        byte[] old = v1.toByteArray();
        old[0] = 1;
        SpaceSavingTopK back = SpaceSavingTopK.fromBytes(old);
        assertThat(back.topK(20, T0)).isEqualTo(s.topK(20, T0));
        assertThat(back.toBytes()).isEqualTo(v2);
    }

    @Test
    void mergeRefusesDifferentCapacitiesOrClocks() {
        assertThatThrownBy(() -> new SpaceSavingTopK(10, 0).merge(new SpaceSavingTopK(11, 0)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("capacity 10")
                .hasMessageContaining("capacity 11");
        TrendingSketch a = new TrendingSketch(10, 0.01, 0.01, 1, HOUR);
        a.update("x", 1, T0);
        byte[] before = a.toBytes();
        assertThatThrownBy(() -> a.merge(new TrendingSketch(10, 0.01, 0.01, 2, HOUR)))
                .hasMessageContaining("seed");
        assertThat(a.toBytes()).isEqualTo(before);
    }
}
