package io.rollcount.bench;

import java.util.Arrays;

/** Nearest-rank percentiles of a set of measurements (the value at rank ceil(p/100 * n) in ascending order). */
final class Percentiles {
    private final double[] sorted;

    Percentiles(double[] values) {
        this.sorted = values.clone();
        Arrays.sort(sorted);
    }

    int count() {
        return sorted.length;
    }

    /** The {@code p}-th percentile, 0 < p <= 100; NaN when there are no values. */
    double at(double p) {
        if (p <= 0 || p > 100) throw new IllegalArgumentException("percentile must be in (0, 100]: " + p);
        if (sorted.length == 0) return Double.NaN;
        int rank = (int) Math.ceil(p / 100.0 * sorted.length);
        return sorted[Math.max(0, rank - 1)];
    }

    double max() {
        return sorted.length == 0 ? Double.NaN : sorted[sorted.length - 1];
    }
}
