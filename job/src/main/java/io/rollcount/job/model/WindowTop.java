package io.rollcount.job.model;

/**
 * A (partial) top-K of one namespace (or {@code _all}) in one closed window: counters and their exact
 * window sums, best first (sum descending, then counter id ascending).
 */
public class WindowTop {
    public String ns;
    public String res;
    /** Window start, epoch ms. */
    public long start;

    public String[] counters = new String[0];
    public long[] sums = new long[0];

    public WindowTop() {}

    /** The key of the merge step: one per (ns, res, start). */
    public String groupKey() {
        return res + ":" + start + ":" + ns;
    }

    @Override
    public String toString() {
        return "WindowTop{" + ns + " " + res + "@" + start + " " + counters.length + " items}";
    }
}
