package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Forward decay as its class comment states it: a weight halves with each half-life, a stored sum decayed to
 * {@code now} equals the sum of each item's weight decayed on its own, landmarks are multiples of the half-life,
 * the table weights agree with {@link Math#pow}, and a half-life of 0 decays nothing.
 */
class ForwardDecayTest {
    private static final long H = 3_600_000L; // an hour
    private static final long T0 = 1_796_000_000_000L / H * H;

    @Test
    void aWeightHalvesAtEachHalfLife() {
        ForwardDecay d = ForwardDecay.of(H);
        long landmark = d.landmarkFor(T0);
        // an event at t, seen at t + h, t + 2h: half, a quarter of what it counts at t
        long t = T0 + 1_234;
        double atT = d.weight(t, landmark) * d.toNow(t, landmark);
        assertThat(atT).isCloseTo(1.0, within(1e-12));
        assertThat(d.weight(t, landmark) * d.toNow(t + H, landmark)).isCloseTo(0.5, within(1e-12));
        assertThat(d.weight(t, landmark) * d.toNow(t + 2 * H, landmark)).isCloseTo(0.25, within(1e-12));
        // stored weights: exactly a factor 2 a half-life apart, 1 at the landmark
        assertThat(d.weight(landmark, landmark)).isEqualTo(1.0);
        assertThat(d.weight(landmark + H / 2, landmark)).isCloseTo(Math.sqrt(2), within(1e-12));
    }

    @Test
    void aStoredSumDecaysAsTheSumOfItsItemsEachDecayedOnItsOwn() {
        ForwardDecay d = ForwardDecay.of(H);
        long landmark = d.landmarkFor(T0);
        SplittableRandom random = new SplittableRandom(7);
        double stored = 0;
        double direct = 0;
        long now = T0 + H - 1;
        for (int i = 0; i < 1_000; i++) {
            long t = T0 + random.nextLong(H);
            double w = 1 + random.nextInt(10);
            stored += w * d.weight(t, landmark);
            direct += w * Math.pow(2, -(double) (now - t) / H);
        }
        assertThat(stored * d.toNow(now, landmark)).isCloseTo(direct, within(direct * 1e-12));
    }

    @Test
    void tableWeightsAgreeWithPowAndLateEventsFallBackToIt() {
        for (long h : new long[] {1, 1_000, 60_000, H, 7 * 24 * H, 123_456_789_013L}) {
            ForwardDecay d = ForwardDecay.of(h);
            SplittableRandom random = new SplittableRandom(h);
            for (int i = 0; i < 2_000; i++) {
                long offset = random.nextLong(h); // 0 <= d < h: the tables
                double expected = Math.pow(2, (double) offset / h);
                assertThat(d.weight(T0 + offset, T0))
                        .as("h=" + h + " d=" + offset)
                        .isCloseTo(expected, within(Math.ulp(expected) * 8));
            }
            // before the landmark (a late event): below 1, as pow says
            assertThat(d.weight(T0 - h, T0)).isCloseTo(0.5, within(1e-15));
        }
    }

    @Test
    void landmarksAreMultiplesOfTheHalfLifeAndMoveOnAfterAWholeOne() {
        ForwardDecay d = ForwardDecay.of(H);
        assertThat(d.landmarkFor(T0 + H - 1)).isEqualTo(T0);
        assertThat(d.landmarkFor(T0 + H)).isEqualTo(T0 + H);
        assertThat(d.landmarkFor(-1)).as("floor before the epoch").isEqualTo(-H);
        assertThat(d.moves(T0, T0 + H - 1)).isFalse();
        assertThat(d.moves(T0, T0 + H)).isTrue();
        // moving a landmark k half-lives on multiplies stored values by exactly 2^-k
        assertThat(d.halvings(T0, T0 + 3 * H)).isEqualTo(3);
        assertThat(Math.scalb(d.weight(T0 + 3 * H + 10, T0), -d.halvings(T0, T0 + 3 * H)))
                .isCloseTo(d.weight(T0 + 3 * H + 10, T0 + 3 * H), within(1e-12));
        // however far: bounded, every double is zero beyond it
        assertThat(d.halvings(0, Long.MAX_VALUE)).isEqualTo(2200);
        assertThat(Math.scalb(Double.MAX_VALUE, -2200)).isZero();
    }

    @Test
    void aHalfLifeOfZeroDecaysNothingAndANegativeOneIsRefused() {
        ForwardDecay none = ForwardDecay.of(0);
        assertThat(none.decays()).isFalse();
        assertThat(none.weight(T0 + 12_345, 0)).isEqualTo(1.0);
        assertThat(none.toNow(T0 + 99 * H, 0)).isEqualTo(1.0);
        assertThat(none.landmarkFor(T0)).isZero();
        assertThat(none.moves(0, Long.MAX_VALUE)).isFalse();
        assertThatThrownBy(() -> ForwardDecay.of(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("half-life must be >= 0");
    }

    @Test
    void sketchesOfOneHalfLifeShareTheirDecay() {
        assertThat(ForwardDecay.of(H)).isSameAs(ForwardDecay.of(H));
        assertThat(ForwardDecay.of(H).halfLifeMillis).isEqualTo(H);
        assertThat(ForwardDecay.of(2 * H).halfLifeMillis).isEqualTo(2 * H);
    }
}
