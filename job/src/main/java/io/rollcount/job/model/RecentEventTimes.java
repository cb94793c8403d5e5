package io.rollcount.job.model;

/**
 * How far one stream (a Kafka partition, an input file) has really got in event time: the
 * {@value #OUTLIERS_IGNORED}+1-th latest of the last {@value #SIZE} valid event times it carried.
 *
 * <p>The maximum event time is what a bounded-out-of-orderness watermark follows, and one record with a
 * wrong clock (9 minutes ahead, or year 9999) moves it for good and makes every later event late. A high
 * quantile of a window of recent times ignores up to {@value #OUTLIERS_IGNORED} such records among
 * {@value #SIZE}, yet stays within a few events of the maximum of an in-order stream. With fewer than
 * 2 x ({@value #OUTLIERS_IGNORED}+1) times seen the median stands in for it, so that a stream of a handful
 * of events still has a progress and a lone outlier is still outvoted.
 *
 * <p>Not thread-safe; one instance per split, on the source's thread. The quantile is computed on demand
 * (a pass over {@value #SIZE} values): the watermark asks for it per periodic emit, a file reader per batch.
 */
public final class RecentEventTimes {
    public static final int SIZE = 1024;
    public static final int OUTLIERS_IGNORED = 8;

    private final long[] ring = new long[SIZE];
    private final long[] top = new long[OUTLIERS_IGNORED + 1];
    private int count;
    private int next;

    public void add(long ts) {
        ring[next] = ts;
        next = (next + 1) & (SIZE - 1);
        if (count < SIZE) count++;
    }

    public boolean isEmpty() {
        return count == 0;
    }

    /**
     * The (k)-th latest recent time, k = {@value #OUTLIERS_IGNORED}+1, or the median while fewer than 2k
     * times were seen; {@link Long#MIN_VALUE} before any.
     */
    public long progress() {
        if (count == 0) return Long.MIN_VALUE;
        int k = Math.min(OUTLIERS_IGNORED + 1, (count + 1) / 2);
        int n = 0;
        for (int i = 0; i < count; i++) {
            long v = ring[i];
            if (n == k && v <= top[k - 1]) continue;
            // Insert into the descending top list, dropping its smallest when full.
            int j = n < k ? n++ : k - 1;
            while (j > 0 && top[j - 1] < v) {
                top[j] = top[j - 1];
                j--;
            }
            top[j] = v;
        }
        return top[k - 1];
    }
}
