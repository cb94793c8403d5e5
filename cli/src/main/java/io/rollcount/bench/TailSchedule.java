package io.rollcount.bench;

import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.model.Resolution;

/**
 * The events of the tail scenario ({@code bench growth --scenario tail}) for one size: {@code counters} counters,
 * zipf 1.1 over them, {@code perCounterHour} events per counter per hour of event time on average (over all the
 * counters, touched or not), for {@code hours} hours of event time. So {@code counters * perCounterHour * hours}
 * events, event time advancing steadily at {@code counters * perCounterHour / 3600} events per second of it, and
 * ending {@link #END_MARGIN_MILLIS} before the wall clock at the start (no event is in the future; the keys of the
 * 5 s windows, kept 2 h, are written before they expire).
 */
record TailSchedule(long counters, double perCounterHour, double hours, int parallelism) {
    /** Users drawn from, as in the bench's workloads. */
    static final int USERS = 100_000;
    /** Disorder of the event times, as in the bench's workloads. */
    static final long JITTER_MILLIS = 2_000;
    /** The last event time, this far before the wall clock at the start. */
    static final long END_MARGIN_MILLIS = 60_000;
    /** How far behind the last event time the last watermark before the end of input surely is: disorder and more. */
    static final long WATERMARK_LAG_MILLIS = 60_000;

    TailSchedule {
        if (counters < 1_000 || counters > Integer.MAX_VALUE)
            throw new IllegalArgumentException("counters must be between 1000 and " + Integer.MAX_VALUE);
        if (!(perCounterHour > 0)) throw new IllegalArgumentException("--events-per-counter-hour must be positive");
        if (!(hours >= 2)) throw new IllegalArgumentException("--hours must be at least 2 (every 1h window closes)");
    }

    /**
     * Events in all: {@code counters * perCounterHour * hours}, rounded up to a multiple of the parallelism, and two
     * more per source subtask, so that the first and the last event are at least {@code hours} apart.
     */
    long events() {
        long perPart = (long) Math.ceil(counters * perCounterHour * hours / parallelism);
        return (perPart + 2) * parallelism;
    }

    /** Events per second of event time, all source subtasks together. */
    double eventsPerSecond() {
        return counters * perCounterHour / 3600.0;
    }

    /** The events, the last of them {@link #END_MARGIN_MILLIS} before {@code nowMillis}. */
    BenchEvents events(long seed, long nowMillis) {
        long span = (long) Math.ceil(events() * 1000.0 / eventsPerSecond());
        long start = (nowMillis - END_MARGIN_MILLIS - span) / 1000 * 1000;
        return new BenchEvents(
                seed,
                Workload.zipf,
                (int) counters,
                USERS,
                events(),
                parallelism,
                start,
                eventsPerSecond(),
                JITTER_MILLIS);
    }

    /** The event time (before jitter) of the first and of the last event of any part. */
    static long firstTs(BenchEvents ev) {
        return ev.baseTs(0);
    }

    static long lastTs(BenchEvents ev) {
        return ev.baseTs(ev.partSize() - 1);
    }

    /** Hours of event time the events cover. */
    static double hoursCovered(BenchEvents ev) {
        return (lastTs(ev) - firstTs(ev)) / 3_600_000.0;
    }

    /**
     * Whether windows of {@code r} close while the events are read, not only at the end of input: a window end
     * after the first event that the watermark passes before the last event ({@link #WATERMARK_LAG_MILLIS}).
     */
    static boolean closesDuringRun(Resolution r, BenchEvents ev) {
        long firstEnd = r.windowStart(firstTs(ev)) + r.sizeMillis;
        return firstEnd <= lastTs(ev) - WATERMARK_LAG_MILLIS;
    }

    /** The start of the first whole hour of event time after the first event: the first 1h window close. */
    static long firstHourBoundary(BenchEvents ev) {
        return Resolution.H1.windowStart(firstTs(ev)) + Resolution.H1.sizeMillis;
    }
}
