package io.rollcount.job.support;

/**
 * Event times for tests whose Redis keys are checked: a window's keys expire at a fixed time, its end plus
 * the resolution's retention (5-second windows: 2 hours), so a test's events must lie in the recent past for
 * its keys to exist when it reads them.
 */
public final class RecentTime {
    /** The start of the current UTC hour, epoch ms: a whole hour (and minute) as the tests' windows expect. */
    public static final long HOUR_START = System.currentTimeMillis() / 3_600_000 * 3_600_000;

    private RecentTime() {}
}
