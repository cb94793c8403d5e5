package io.rollcount.job.ops;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import io.rollcount.job.model.PartialSum;
import java.nio.charset.StandardCharsets;

/**
 * A partial sum that would take a counter's total or one of its windows past the 64-bit range: which value it
 * would overflow, and the {@value CountPerCounter#OVERFLOW_REASON} dead letter it becomes instead of being
 * counted (see {@link CountPerCounter#OVERFLOW}).
 */
final class CounterOverflow {
    private CounterOverflow() {}

    /** Whether {@code a + b} leaves the 64-bit range. */
    static boolean overflows(long a, long b) {
        long r = a + b;
        return ((a ^ r) & (b ^ r)) < 0;
    }

    /**
     * The value of {@code s} that adding {@code delta} would take past the 64-bit range ("total" or a window of
     * the slots {@code idx}, -1 for none), or null.
     */
    static String overflowing(CounterState s, long delta, int[] idx) {
        if (overflows(s.total, delta)) return "total " + s.total;
        for (int i : idx) {
            if (i >= 0 && overflows(s.sum[i], delta)) {
                return s.resolution(i).label + " window " + s.resolution(i).windowName(s.start[i]) + " (sum " + s.sum[i]
                        + ")";
            }
        }
        return null;
    }

    /** The dead letter of {@code p}, not counted because it would take the counter's {@code value} past the range. */
    static Event deadLetter(PartialSum p, String value) {
        Event e = new Event();
        e.counter = p.counter;
        e.delta = p.sum;
        e.ts = p.bucket;
        e.payload = Json.write(g -> {
            g.writeStartObject();
            g.writeStringField("counter", p.counter);
            g.writeNumberField("delta", p.sum);
            g.writeNumberField("events", p.events);
            g.writeNumberField("ts", p.bucket);
            g.writeEndObject();
        });
        e.key = p.counter.getBytes(StandardCharsets.UTF_8);
        e.source = CountPerCounter.OVERFLOW_SOURCE;
        e.deadLetter(
                CountPerCounter.OVERFLOW_REASON,
                "counter " + p.counter + ": adding " + p.sum + " (" + (p.events == 1 ? "1 event" : p.events + " events")
                        + " of the 5 s bucket at " + p.bucket + ") to its " + value
                        + " would go past the 64-bit range; not counted");
        return e;
    }
}
