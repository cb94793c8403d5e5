package io.rollcount.job.model;

import java.util.Objects;

/** The sum of one counter in one closed window (1m, 1h, 1d), for the window top-K per namespace. */
public class WindowSum {
    public String counter;
    public String res;
    public long start;
    public long sum;

    public WindowSum() {}

    public WindowSum(String counter, String res, long start, long sum) {
        this.counter = counter;
        this.res = res;
        this.start = start;
        this.sum = sum;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof WindowSum w
                && start == w.start
                && sum == w.sum
                && Objects.equals(counter, w.counter)
                && Objects.equals(res, w.res);
    }

    @Override
    public int hashCode() {
        return Objects.hash(counter, res, start);
    }

    @Override
    public String toString() {
        return "WindowSum{" + counter + " " + res + "@" + start + "=" + sum + "}";
    }
}
