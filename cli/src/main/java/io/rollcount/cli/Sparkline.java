package io.rollcount.cli;

/** Unicode block sparklines for the terminal. */
public final class Sparkline {
    private static final char[] BARS = {'▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'};

    private Sparkline() {}

    public static String of(long[] values) {
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        for (long v : values) {
            min = Math.min(min, v);
            max = Math.max(max, v);
        }
        StringBuilder sb = new StringBuilder(values.length);
        for (long v : values) {
            int i = max == min ? (max == 0 ? 0 : BARS.length - 1) : (int) ((v - min) * (BARS.length - 1) / (max - min));
            sb.append(BARS[i]);
        }
        return sb.toString();
    }
}
