package io.rollcount.job.model;

import java.util.Arrays;
import java.util.Objects;

/**
 * A ranked list for the {@code counter-trending} topic and the {@code rc:trending:<ns>} /
 * {@code rc:top:<ns>:<res>:<start>} sorted sets: kind {@code trending} (decayed scores, no window) or
 * {@code window} (exact window sums of one closed window). Items best first.
 */
public class TopList {
    public static final String TRENDING = "trending";
    public static final String WINDOW = "window";

    /** Namespace, or {@code _all}. */
    public String ns;

    public String kind;
    /** Resolution of a window list; null for trending. */
    public String res;
    /** Window start, epoch ms; null for trending. */
    public Long start;
    /** The event time (watermark, epoch ms) the list reflects. */
    public long at;

    public String[] counters = new String[0];
    /** The ranking value: the decayed score (trending) or the window sum (window). */
    public double[] scores = new double[0];
    /** Trending: the guaranteed lower bound of the decayed score; window: the exact sum. */
    public double[] estimates = new double[0];

    public TopList() {}

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof TopList t)) return false;
        return at == t.at
                && Objects.equals(ns, t.ns)
                && Objects.equals(kind, t.kind)
                && Objects.equals(res, t.res)
                && Objects.equals(start, t.start)
                && Arrays.equals(counters, t.counters)
                && Arrays.equals(scores, t.scores)
                && Arrays.equals(estimates, t.estimates);
    }

    @Override
    public int hashCode() {
        return Objects.hash(ns, kind, res, start, at);
    }

    @Override
    public String toString() {
        return "TopList{" + kind + " " + ns + (res == null ? "" : " " + res + "@" + start) + " at=" + at + " "
                + counters.length + " items}";
    }
}
