package io.rollcount.job.model;

import java.util.Objects;

/**
 * A window result for the {@code counter-rollups} topic (contract section 4): written when the watermark
 * passes the window's end (revision 0), and again with revision 1, 2, ... each time a late event within
 * the allowed lateness changes the closed window.
 */
public class Rollup {
    public String counter;
    /** Resolution name: 5s, 1m, 5m, 1h or 1d. */
    public String res;
    /** Window start and end, epoch milliseconds. */
    public long start;

    public long end;
    public long sum;
    public long events;
    /** Distinct users (HyperLogLog estimate) for 1h and 1d windows with users; null otherwise. */
    public Long uniques;

    public int revision;

    public Rollup() {}

    public Rollup(String counter, String res, long start, long end, long sum, long events, Long uniques, int revision) {
        this.counter = counter;
        this.res = res;
        this.start = start;
        this.end = end;
        this.sum = sum;
        this.events = events;
        this.uniques = uniques;
        this.revision = revision;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof Rollup r)) return false;
        return start == r.start
                && end == r.end
                && sum == r.sum
                && events == r.events
                && revision == r.revision
                && Objects.equals(counter, r.counter)
                && Objects.equals(res, r.res)
                && Objects.equals(uniques, r.uniques);
    }

    @Override
    public int hashCode() {
        return Objects.hash(counter, res, start, revision);
    }

    @Override
    public String toString() {
        return "Rollup{" + counter + " " + res + "@" + start + " sum=" + sum + " events=" + events + " uniques="
                + uniques + " rev=" + revision + "}";
    }
}
