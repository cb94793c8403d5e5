package io.rollcount.sketches;

import java.util.Arrays;
import java.util.SplittableRandom;

/** Zipf-distributed ranks 0..n-1 (rank r has probability proportional to 1 / (r + 1)^s), from a seed. */
public final class Zipf {
    private final double[] cdf;

    public Zipf(int n, double exponent) {
        cdf = new double[n];
        double sum = 0;
        for (int r = 0; r < n; r++) {
            sum += Math.pow(r + 1, -exponent);
            cdf[r] = sum;
        }
        for (int r = 0; r < n; r++) {
            cdf[r] /= sum;
        }
    }

    /** {@code events} ranks drawn with the given seed. */
    public int[] sample(int events, long seed) {
        SplittableRandom random = new SplittableRandom(seed);
        int[] out = new int[events];
        for (int i = 0; i < events; i++) {
            int at = Arrays.binarySearch(cdf, random.nextDouble());
            out[i] = Math.min(cdf.length - 1, at >= 0 ? at : -at - 1);
        }
        return out;
    }

    /** Item names for ranks, scrambled so that rank order is not name or hash order. */
    public static String[] names(int n) {
        String[] names = new String[n];
        for (int r = 0; r < n; r++) {
            names[r] = "post:" + Long.toHexString(Hashing.mix64(r + 1)) + ":likes";
        }
        return names;
    }
}
