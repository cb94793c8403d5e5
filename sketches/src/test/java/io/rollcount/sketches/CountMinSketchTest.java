package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.Arrays;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class CountMinSketchTest {
    private static final long HOUR = 3_600_000L;
    private static final long T0 = 1_796_000_000_000L; // an event time in late 2026

    @Test
    void dimensionsFollowEpsilonAndDelta() {
        assertThat(CountMinSketch.widthFor(0.001)).isEqualTo(2719);
        assertThat(CountMinSketch.depthFor(0.01)).isEqualTo(5);
        CountMinSketch s = new CountMinSketch(0.01, 0.05, 1, 0);
        assertThat(s.width()).isEqualTo(272);
        assertThat(s.depth()).isEqualTo(3);
        assertThat(s.isConservative()).isTrue();
        assertThatThrownBy(() -> CountMinSketch.widthFor(0)).hasMessageContaining("epsilon");
        assertThatThrownBy(() -> CountMinSketch.depthFor(1)).hasMessageContaining("delta");
    }

    /** Small exact cases: no collisions, so the estimate is the closed-form decayed sum. */
    @Test
    void decayMatchesTheClosedFormWithinOnePartInABillion() {
        long[] halfLives = {HOUR, 60_000L, 7 * 24 * HOUR, 1234L};
        for (long h : halfLives) {
            for (boolean conservative : new boolean[] {true, false}) {
                CountMinSketch s = new CountMinSketch(1 << 16, 5, 11, h, conservative);
                String[] items = {"a", "b", "post:1:likes"};
                double[][] events = new double[60][]; // item index, weight, time offset
                SplittableRandom random = new SplittableRandom(h);
                long t = T0;
                for (int i = 0; i < events.length; i++) {
                    t += random.nextLong(h / 2 + 1); // moves the landmark many times
                    long eventTime = random.nextInt(5) == 0 ? t - random.nextLong(3 * h) : t; // some late events
                    double weight = 1 + random.nextInt(1000) / 7.0;
                    int item = random.nextInt(items.length);
                    events[i] = new double[] {item, weight, eventTime};
                    s.update(items[item], weight, eventTime);
                }
                assertThat(s.landmarkMillis()).isGreaterThan(T0);
                for (long now : new long[] {t, t + h / 3, t + 5 * h}) {
                    double totalExpected = 0;
                    for (int item = 0; item < items.length; item++) {
                        double expected = 0;
                        for (double[] e : events) {
                            double decayed = e[1] * Math.pow(2, -(now - (long) e[2]) / (double) h);
                            totalExpected += e[0] == item ? decayed : 0;
                            expected += e[0] == item ? decayed : 0;
                        }
                        double actual = s.estimate(items[item], now);
                        assertThat(actual)
                                .as("half-life %d item %s", h, items[item])
                                .isCloseTo(expected, within(1e-9 * expected));
                    }
                    assertThat(s.totalWeight(now)).isCloseTo(totalExpected, within(1e-9 * totalExpected));
                }
            }
        }
    }

    @Test
    void oneHalfLifeHalvesAnEstimate() {
        CountMinSketch s = new CountMinSketch(1000, 4, 1, HOUR, true);
        long t = T0 / HOUR * HOUR;
        s.update("x", 8, t);
        assertThat(s.estimate("x", t)).isEqualTo(8.0);
        assertThat(s.estimate("x", t + HOUR)).isEqualTo(4.0);
        assertThat(s.estimate("x", t + 3 * HOUR)).isEqualTo(1.0);
        s.update("x", 1, t + 3 * HOUR); // moves the landmark: counters halve exactly
        assertThat(s.landmarkMillis()).isEqualTo(t + 3 * HOUR);
        assertThat(s.estimate("x", t + 3 * HOUR)).isEqualTo(2.0);
        assertThat(s.estimate("x", t + 4 * HOUR)).isEqualTo(1.0);
    }

    /** On Zipf data the share of keys over-estimated by more than epsilon * N stays under delta. */
    @org.junit.jupiter.params.ParameterizedTest(name = "epsilon {0}, delta {1}")
    @org.junit.jupiter.params.provider.CsvSource({"0.0005,0.01", "0.005,0.05"})
    void errorBoundHoldsOnZipfDataAndConservativeUpdateIsNeverWorse(double epsilon, double delta) {
        int keys = 100_000;
        int events = 1_000_000;
        String[] names = Zipf.names(keys);
        int[] stream = new Zipf(keys, 1.1).sample(events, 17);
        long[] truth = new long[keys];
        CountMinSketch cu = new CountMinSketch(epsilon, delta, 99, 0);
        CountMinSketch plain = new CountMinSketch(cu.width(), cu.depth(), 99, 0, false);
        for (int r : stream) {
            truth[r]++;
            long hash = CountMinSketch.hash(names[r]);
            cu.updateHash(hash, 1, T0);
            plain.updateHash(hash, 1, T0);
        }
        double bound = epsilon * events;
        int seen = 0;
        int cuOver = 0;
        int plainOver = 0;
        double cuError = 0;
        double plainError = 0;
        for (int r = 0; r < keys; r++) {
            if (truth[r] == 0) {
                continue;
            }
            seen++;
            double c = cu.estimate(names[r], T0) - truth[r];
            double p = plain.estimate(names[r], T0) - truth[r];
            assertThat(c).isGreaterThanOrEqualTo(0).isLessThanOrEqualTo(p);
            cuOver += c > bound ? 1 : 0;
            plainOver += p > bound ? 1 : 0;
            cuError += c;
            plainError += p;
        }
        System.out.printf(
                "CMS zipf(1.1) %d events %d keys (%d seen), %dx%d, eps*N=%.0f: keys over eps*N:"
                        + " conservative %d plain %d (delta allows %.0f); mean error conservative %.3f plain %.3f (ratio %.3f)%n",
                events,
                keys,
                seen,
                cu.width(),
                cu.depth(),
                bound,
                cuOver,
                plainOver,
                delta * seen,
                cuError / seen,
                plainError / seen,
                cuError / plainError);
        assertThat((double) plainOver / seen).isLessThan(delta);
        assertThat((double) cuOver / seen).isLessThan(delta);
        assertThat(cuError).isLessThan(plainError);
    }

    /**
     * The cells, read from the dense serialized body, equal a textbook model of the documented layout
     * and update rule, at every depth (5 has its own unrolled path) and with negative cells (turnstile).
     */
    @Test
    void cellsFollowTheDocumentedLayoutAndConservativeRuleAtEveryDepth() {
        for (int depth = 1; depth <= 7; depth++) {
            int width = 37;
            CountMinSketch s = new CountMinSketch(width, depth, 5, 0, true);
            double[] model = new double[width * depth];
            SplittableRandom random = new SplittableRandom(depth);
            for (int i = 0; i < 3_000; i++) {
                long hash = CountMinSketch.hash("k" + random.nextInt(300));
                double weight = random.nextInt(10) == 0 ? -random.nextInt(4) : random.nextInt(1, 9) / 4.0;
                s.updateHash(hash, weight, T0);
                int[] cells = cells(hash, 5, width, depth);
                double min = Double.POSITIVE_INFINITY;
                for (int cell : cells) {
                    min = Math.min(min, model[cell]);
                }
                for (int cell : cells) {
                    model[cell] = weight < 0 ? model[cell] + weight : Math.max(model[cell], min + weight);
                }
            }
            byte[] bytes = s.toBytes();
            assertThat(bytes[2] & 2).as("dense body").isZero();
            for (int cell = 0; cell < model.length; cell++) {
                assertThat(Double.longBitsToDouble(Bytes.getLong(bytes, 40 + 8 * cell, "cell")))
                        .as("depth %d cell %d", depth, cell)
                        .isEqualTo(model[cell]);
            }
        }
    }

    /** The class comment's placement: double hashing of the mixed item hash, fastrange per row. */
    private static int[] cells(long itemHash, long seed, int width, int depth) {
        long h1 = Hashing.mix64(itemHash ^ seed);
        long h2 = Long.rotateLeft(h1, 32) | 1;
        int[] cells = new int[depth];
        for (int row = 0; row < depth; row++) {
            cells[row] = row * width + (int) ((((h1 + row * h2) >>> 32) * width) >>> 32);
        }
        return cells;
    }

    @Test
    void mergeOfPlainSketchesEqualsTheSketchOfBothStreams() {
        CountMinSketch a = new CountMinSketch(500, 4, 5, HOUR, false);
        CountMinSketch b = new CountMinSketch(500, 4, 5, HOUR, false);
        CountMinSketch both = new CountMinSketch(500, 4, 5, HOUR, false);
        SplittableRandom random = new SplittableRandom(8);
        for (int i = 0; i < 20_000; i++) {
            String item = "c" + random.nextInt(3000);
            long t = T0 + i * 1000L; // 5.5 hours: landmarks move in both
            (i % 3 == 0 ? a : b).update(item, 1 + random.nextInt(4), t);
            both.update(item, 0, t); // keep the same landmark
        }
        CountMinSketch merged = a.copy();
        merged.merge(b);
        CountMinSketch replay = new CountMinSketch(500, 4, 5, HOUR, false);
        random = new SplittableRandom(8);
        for (int i = 0; i < 20_000; i++) {
            replay.update("c" + random.nextInt(3000), 1 + random.nextInt(4), T0 + i * 1000L);
        }
        long now = T0 + 20_000_000L;
        for (int i = 0; i < 3000; i += 7) {
            String item = "c" + i;
            assertThat(merged.estimate(item, now))
                    .isCloseTo(replay.estimate(item, now), within(1e-9 * (1 + replay.estimate(item, now))));
        }
        assertThat(merged.totalWeight(now)).isCloseTo(replay.totalWeight(now), within(1e-6));
    }

    @Test
    void mergeRefusesDifferentShapesWithAClearMessage() {
        CountMinSketch a = new CountMinSketch(100, 3, 1, 0, true);
        assertThatThrownBy(() -> a.merge(new CountMinSketch(101, 3, 1, 0, true)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("100 x 3")
                .hasMessageContaining("101 x 3");
        assertThatThrownBy(() -> a.merge(new CountMinSketch(100, 3, 2, 0, true)))
                .hasMessageContaining("seed 2");
        assertThatThrownBy(() -> a.merge(new CountMinSketch(100, 3, 1, HOUR, true)))
                .hasMessageContaining("half-life 3600000");
    }

    @Test
    void countersSaturateInsteadOfOverflowing() {
        CountMinSketch s = new CountMinSketch(10, 2, 1, 0, true);
        s.update("x", Double.MAX_VALUE, T0);
        s.update("x", Double.MAX_VALUE, T0);
        assertThat(s.estimate("x", T0)).isEqualTo(Double.MAX_VALUE);
        assertThat(s.totalWeight(T0)).isEqualTo(Double.MAX_VALUE);
        assertThatThrownBy(() -> s.update("x", Double.NaN, T0)).hasMessageContaining("finite");
        assertThatThrownBy(() -> s.update("x", Double.POSITIVE_INFINITY, T0)).hasMessageContaining("finite");
    }

    @Test
    void integerWeightsWithoutDecayAreExactUpToTwoToThe53() {
        CountMinSketch s = new CountMinSketch(1 << 12, 3, 1, 0, true);
        s.update("x", 1e12, T0);
        for (int i = 0; i < 1000; i++) {
            s.update("x", 1, T0);
        }
        s.update("x", -7, T0); // negative: plain update of every row
        assertThat(s.estimate("x", T0)).isEqualTo(1e12 + 993);
    }

    @Test
    void serializationRoundTripsSparseAndDense() {
        CountMinSketch s = new CountMinSketch(0.001, 0.01, 42, HOUR);
        assertThat(s.toBytes()).hasSize(44); // header plus an empty sparse body
        s.update("a", 3, T0);
        s.update("b", 2.5, T0 + 1);
        byte[] sparse = s.toBytes();
        assertThat(sparse).hasSize(40 + 4 + 12 * 10);
        assertThat(CountMinSketch.fromBytes(sparse).toBytes()).isEqualTo(sparse);
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < 20_000; i++) {
            s.update("k" + random.nextInt(100_000), 1, T0 + i);
        }
        byte[] dense = s.toBytes();
        assertThat(dense).hasSize(40 + 8 * s.width() * s.depth());
        CountMinSketch back = CountMinSketch.fromBytes(dense);
        assertThat(back).isEqualTo(s);
        assertThat(back.estimate("a", T0 + 99)).isEqualTo(s.estimate("a", T0 + 99));
        assertThat(back.landmarkMillis()).isEqualTo(s.landmarkMillis());
    }

    @Test
    void corruptBytesAreRejected() {
        CountMinSketch s = new CountMinSketch(50, 2, 1, 0, true);
        s.update("a", 1, T0);
        byte[] good = s.toBytes();
        byte[] family = good.clone();
        family[1] = 0x54;
        byte[] version = good.clone();
        version[0] = 9;
        byte[] nan = good.clone();
        Arrays.fill(nan, 32, 40, (byte) 0xff);
        assertThatThrownBy(() -> CountMinSketch.fromBytes(family))
                .isInstanceOf(SketchFormatException.class)
                .hasMessageContaining("family");
        assertThatThrownBy(() -> CountMinSketch.fromBytes(version)).hasMessageContaining("serial version 9");
        assertThatThrownBy(() -> CountMinSketch.fromBytes(Arrays.copyOf(good, 20)))
                .hasMessageContaining("truncated");
        assertThatThrownBy(() -> CountMinSketch.fromBytes(Arrays.copyOf(good, good.length - 1)))
                .hasMessageContaining("sparse body");
        assertThatThrownBy(() -> CountMinSketch.fromBytes(nan)).hasMessageContaining("NaN");
        byte[] versionOne = good.clone();
        versionOne[0] = 1;
        assertThatThrownBy(() -> CountMinSketch.fromBytes(versionOne)).hasMessageContaining("earlier item hash");
    }
}
