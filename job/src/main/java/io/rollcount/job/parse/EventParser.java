package io.rollcount.job.parse;

import io.rollcount.job.model.Event;
import java.io.Serializable;

/**
 * Parses one input record (contract section 1) into an {@link Event}: a valid increment, or a dead letter
 * whose {@code reason} names the rule it broke. Never throws on bad input.
 */
public final class EventParser implements Serializable {
    private static final long serialVersionUID = 1L;

    /** @param maxFutureMillis events further than this ahead of {@code wallClockMillis} are dead-lettered ({@code <= 0}: no check) */
    public EventParser(long maxFutureMillis) {
        this.maxFutureMillis = maxFutureMillis;
    }

    private final long maxFutureMillis;

    /**
     * @param payload the raw record value
     * @param key the Kafka record key, or null
     * @param source {@code topic/partition/offset} or {@code file:line}
     * @param defaultTs event time when the record has no {@code ts} (Kafka record timestamp, or read time for files)
     * @param wallClockMillis the wall clock, for the future-timestamp rule
     */
    public Event parse(byte[] payload, byte[] key, String source, long defaultTs, long wallClockMillis) {
        throw new UnsupportedOperationException("being written");
    }
}
