package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** Nearest-rank percentiles. */
class PercentilesTest {

    @Test
    void nearestRank() {
        double[] v = new double[100];
        for (int i = 0; i < 100; i++) v[i] = 100 - i; // 1..100, unsorted
        Percentiles p = new Percentiles(v);
        assertThat(p.at(50)).isEqualTo(50);
        assertThat(p.at(99)).isEqualTo(99);
        assertThat(p.at(100)).isEqualTo(100);
        assertThat(p.at(0.5)).isEqualTo(1);
        assertThat(p.max()).isEqualTo(100);
        assertThat(p.count()).isEqualTo(100);
    }

    @Test
    void fewValues() {
        Percentiles p = new Percentiles(new double[] {3.0, 1.0, 2.0});
        assertThat(p.at(50)).isEqualTo(2.0);
        assertThat(p.at(99)).isEqualTo(3.0);
        Percentiles one = new Percentiles(new double[] {7.5});
        assertThat(one.at(50)).isEqualTo(7.5);
        assertThat(one.at(99)).isEqualTo(7.5);
    }

    @Test
    void noValuesAndBadPercentiles() {
        assertThat(new Percentiles(new double[0]).at(50)).isNaN();
        assertThatThrownBy(() -> new Percentiles(new double[] {1}).at(0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Percentiles(new double[] {1}).at(101))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
