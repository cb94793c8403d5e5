package io.rollcount.job.model;

import java.time.Duration;

/**
 * The five window resolutions of contract section 2: tumbling, aligned to the UTC epoch, each a whole
 * multiple of the one before, so that one 5-second bucket lies in exactly one window of every resolution.
 * A window is named by its start in epoch seconds; its Redis keys expire at the window's end plus
 * {@link #ttlMillis}, its retention ({@link #expireAtMillis}, contract section 3).
 */
public enum Resolution {
    S5("5s", Duration.ofSeconds(5), Duration.ofHours(2)),
    M1("1m", Duration.ofMinutes(1), Duration.ofDays(2)),
    M5("5m", Duration.ofMinutes(5), Duration.ofDays(14)),
    H1("1h", Duration.ofHours(1), Duration.ofDays(90)),
    D1("1d", Duration.ofDays(1), Duration.ofDays(400));

    private static final Resolution[] ALL = values();

    public final String label;
    public final long sizeMillis;
    /** The retention of a window's Redis keys after the window's end. */
    public final long ttlMillis;

    Resolution(String label, Duration size, Duration ttl) {
        this.label = label;
        this.sizeMillis = size.toMillis();
        this.ttlMillis = ttl.toMillis();
    }

    /** Start (epoch ms) of the window of this resolution that holds {@code ts}; floor also for negative times. */
    public long windowStart(long ts) {
        return Math.floorDiv(ts, sizeMillis) * sizeMillis;
    }

    /** When the Redis keys of the window that starts at {@code start} expire: its end plus the retention (epoch ms). */
    public long expireAtMillis(long start) {
        return start + sizeMillis + ttlMillis;
    }

    /** The name of the window of this resolution that starts at {@code startMillis}: {@code <res>:<start in epoch seconds>}. */
    public String windowName(long startMillis) {
        return windowName("", startMillis);
    }

    /** {@code head + windowName(startMillis)}, built as one string (a Redis key per window update). */
    public String windowName(String head, long startMillis) {
        return head + label + ":" + Math.floorDiv(startMillis, 1000L);
    }

    public static Resolution[] all() {
        return ALL;
    }

    public static Resolution ofLabel(String label) {
        for (Resolution r : ALL) {
            if (r.label.equals(label)) return r;
        }
        throw new IllegalArgumentException("unknown resolution '" + label + "': expected one of 5s, 1m, 5m, 1h, 1d");
    }
}
