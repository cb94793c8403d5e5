package io.rollcount.job.model;

import java.util.Arrays;
import java.util.Objects;
import org.apache.flink.api.common.typeinfo.TypeInfo;

/**
 * One input record after parsing: either a valid increment or a dead letter.
 *
 * <p>A single flat POJO keeps the source's output to one type, so that the watermark strategy can sit
 * in {@code env.fromSource} (per-partition watermarks) and see every record. A record with a non-null
 * {@link #reason} is a dead letter: it carries the raw input ({@link #payload}, {@link #key}) and where it
 * came from ({@link #source}), and its other fields are whatever could be parsed. A valid event keeps its
 * raw input while it may still be late, because a late event is dead-lettered with its original payload
 * ({@code io.rollcount.job.ops.RouteEvents} drops it where it cannot).
 *
 * <p>Contract section 1 defines the fields; {@code io.rollcount.job.parse.EventParser} enforces it.
 * Through shuffles it goes by its own {@link EventSerializer} ({@link EventTypeInfo}).
 */
@TypeInfo(EventTypeInfo.Factory.class)
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
    /**
     * Bytes of the whole input when {@link #payload} holds only its first bytes ({@link #cutPayload}), so
     * that an 800 KB record does not travel through the job whole; -1 while the payload is whole.
     */
    public long payloadSize = -1;
    /** With {@link #payloadSize}: whether the dead letter writes the payload as base64, decided on the whole input. */
    public boolean payloadBase64;
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

    /**
     * Drops the raw input (payload, record key, source) of a valid event that can no longer become a dead letter,
     * so that it does not travel through the shuffles.
     */
    public void dropRawInput() {
        payload = null;
        payloadSize = -1;
        payloadBase64 = false;
        key = null;
        source = null;
    }

    /** Keeps only the first {@link DeadLetterPayload#MAX_PAYLOAD_BYTES} of a larger payload, with its size and encoding. */
    public Event cutPayload() {
        if (payload == null || payloadSize >= 0 || payload.length <= DeadLetterPayload.MAX_PAYLOAD_BYTES) return this;
        return keepPayload(DeadLetterPayload.of(payload, DeadLetterPayload.MAX_PAYLOAD_BYTES));
    }

    /** Keeps the given (possibly cut) payload of the input. */
    public Event keepPayload(DeadLetterPayload p) {
        payload = p.bytes;
        payloadSize = p.truncated() ? p.size : -1;
        payloadBase64 = p.base64;
        return this;
    }

    /** The payload as a dead letter writes it, cut to at most {@code maxBytes}. */
    public DeadLetterPayload deadLetterPayload(int maxBytes) {
        if (payload != null && payloadSize >= 0)
            return DeadLetterPayload.cut(payload, payloadSize, payloadBase64, maxBytes);
        return DeadLetterPayload.of(payload, maxBytes);
    }

    @Override
    public boolean equals(Object o) {
        if (this == o) return true;
        if (!(o instanceof Event e)) return false;
        return delta == e.delta
                && ts == e.ts
                && payloadSize == e.payloadSize
                && payloadBase64 == e.payloadBase64
                && Objects.equals(counter, e.counter)
                && Objects.equals(eventId, e.eventId)
                && Objects.equals(user, e.user)
                && Objects.equals(reason, e.reason)
                && Objects.equals(detail, e.detail)
                && Arrays.equals(payload, e.payload)
                && Arrays.equals(key, e.key)
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
