package io.rollcount.bench;

import java.util.Locale;

/**
 * What the tail scenario measured at one size, and its {@code RESULT bench.tail} line. {@code jobMicros}: the
 * job's CPU per event; {@code readsPerEvent}: keyed-state reads of count-per-counter per event;
 * {@code visitsPerCounterHour}: its due visits per counter per hour of event time; {@code checkpointMillis} and
 * {@code checkpointBytes}: the longest checkpoint after the first hour's boundary of event time and the bytes it
 * uploaded ({@link TailBench.EventTimeTrack#longestAfterBoundary});
 * {@code redisMicros}: Redis's CPU per event; {@code redisBytesPerCounter}: Redis's {@code used_memory} growth
 * per counter. The Redis figures are -1 where the writes were discarded ({@code redisWritten} false).
 */
record TailFigures(
        long counters,
        long events,
        double jobMicros,
        double readsPerEvent,
        double visitsPerCounterHour,
        long checkpointMillis,
        long checkpointBytes,
        double redisMicros,
        double redisBytesPerCounter,
        boolean redisWritten) {

    /** {@code RESULT bench.tail counters=.. events=.. job_us=.. ... redis=written|discarded}. */
    String resultLine() {
        return String.format(
                Locale.ROOT,
                "RESULT bench.tail counters=%d events=%d job_us=%.2f rocksdb_reads_per_event=%.3f"
                        + " visits_per_counter_hour=%.3f checkpoint_ms=%d checkpoint_bytes=%d redis_us=%s"
                        + " redis_bytes_per_counter=%s redis=%s",
                counters,
                events,
                jobMicros,
                readsPerEvent,
                visitsPerCounterHour,
                checkpointMillis,
                checkpointBytes,
                redisWritten ? String.format(Locale.ROOT, "%.2f", redisMicros) : "-1",
                redisWritten ? String.format(Locale.ROOT, "%.0f", redisBytesPerCounter) : "-1",
                redisWritten ? "written" : "discarded");
    }
}
