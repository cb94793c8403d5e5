package io.rollcount.sketches.bench;

import java.util.Arrays;

/**
 * Ours and a reference timed in alternating short rounds (ABBA order) in one JVM, so that both see
 * the same machine load: on a shared 2-core machine whose load swings from 2 to 20 within a minute,
 * a per-round ratio is far steadier than two JMH runs a minute apart. Reports the median per-round
 * ratio and its interquartile range.
 */
final class Interleaved {
    private static final int ROUNDS = 16;

    private Interleaved() {}

    /** [median ratio, first quartile, third quartile] of ours / ref over the rounds. */
    static double[] ratio(Runnable ours, Runnable ref, int callsPerRound) {
        for (int i = 0; i < 20 * callsPerRound; i++) { // warm both up
            ours.run();
            ref.run();
        }
        double[] ratios = new double[ROUNDS];
        for (int r = 0; r < ROUNDS; r++) {
            boolean oursFirst = (r & 1) == 0;
            long first = time(oursFirst ? ours : ref, callsPerRound);
            long second = time(oursFirst ? ref : ours, callsPerRound);
            ratios[r] = oursFirst ? (double) first / second : (double) second / first;
        }
        Arrays.sort(ratios);
        return new double[] {ratios[ROUNDS / 2], ratios[ROUNDS / 4], ratios[3 * ROUNDS / 4]};
    }

    private static long time(Runnable task, int calls) {
        long start = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            task.run();
        }
        return System.nanoTime() - start;
    }
}
