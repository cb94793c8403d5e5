package io.rollcount.job.model;

import java.util.Arrays;
import java.util.Objects;

/**
 * One input record after parsing: either a valid increment or a dead letter.
 *
 * <p>A single flat POJO keeps the source's output to one type, so that the watermark strategy can sit
 * in {@code env.fromSource} (per-partition watermarks) and see every record. A record with a non-null
 * {@link #reason} is a dead letter: it carries the raw input ({@link #payload}, {@link #key}) and where it
 * came from ({@link #source}), and its other fields are whatever could be parsed. A valid event keeps its
 * raw input until the lateness check, because a late event is dead-lettered with its original payload.
 *
 * <p>Contract section 1 defines the fields; {@code io.rollcount.job.parse.EventParser} enforces it.
 */
public class Event {
    /** Counter id, 1..256 bytes of UTF-8 without whitespace, control characters, '{' or '}'. */
    public String counter;
    /** Increment, |delta| <= 10^12. */
    public long delta = 1;
    /** Event time, epoch milliseconds. */
    public long ts;
    /** Idempotency key (<= 128 bytes) or null. */
    public String eventId;
    /** Who caused the increment (<= 256 bytes) or null. */
    public String user;

    /** Dead-letter reason (for example {@code invalid_json}, {@code late}); null for a valid event. */
    public String reason;
    /** Human-readable detail of the reason; null for a valid event. */
    public String detail;

    /** The raw input record value (a Kafka record value, or a file line without its newline). */
    public byte[] payload;
    /** The Kafka record key, or null. */
    public byte[] key;
    /** Where the record came from: {@code topic/partition/offset} or {@code file:line}. */
    public String source;

    public Event() {}

    public boolean isDeadLetter() {
        return reason != null;
    }

    /** Turns this record into a dead letter with the given reason; the raw input is kept. */
    public Event deadLetter(String reason, String detail) {
        this.reason = reason;
        this.detail = detail;
        return this;
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof Event e)) return false;
        return delta == e.delta && ts == e.ts && Objects.equals(counter, e.counter)
                && Objects.equals(eventId, e.eventId) && Objects.equals(user, e.user)
                && Objects.equals(reason, e.reason) && Objects.equals(detail, e.detail)
                && Arrays.equals(payload, e.payload) && Arrays.equals(key, e.key)
                && Objects.equals(source, e.source);
    }

    @Override
    public int hashCode() {
        return Objects.hash(counter, delta, ts, eventId, user, reason, source);
    }

    @Override
    public String toString() {
        return reason == null
                ? "Event{" + counter + " " + delta + " @" + ts + (eventId == null ? "" : " id=" + eventId)
                        + (user == null ? "" : " user=" + user) + "}"
                : "DeadLetter{" + reason + ": " + detail + " from " + source + "}";
    }
}
