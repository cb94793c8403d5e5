package io.rollcount.job.parse;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParseException;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.exc.InputCoercionException;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.HashSet;
import java.util.Set;

/**
 * Parses one input record (contract section 1) into an {@link Event}: a valid increment, or a dead letter
 * whose {@code reason} names the rule it broke. It never throws on bad input: every record comes out,
 * counted or dead-lettered.
 *
 * <p>Reasons, one per rule:
 * <table>
 *   <tr><td>{@value #INVALID_UTF8}</td><td>the record is not valid UTF-8</td></tr>
 *   <tr><td>{@value #INVALID_JSON}</td><td>not one JSON object (syntax error, empty record, an array, trailing data, a field of the object twice)</td></tr>
 *   <tr><td>{@value #MISSING_COUNTER}</td><td>no {@code counter} field, or null</td></tr>
 *   <tr><td>{@value #INVALID_COUNTER}</td><td>not a string; empty or over 256 bytes; whitespace, a control character, '{' or '}'</td></tr>
 *   <tr><td>{@value #INVALID_DELTA}</td><td>not an integer, or |delta| over 10^12</td></tr>
 *   <tr><td>{@value #INVALID_TS}</td><td>neither epoch milliseconds (a non-negative integer) nor ISO-8601 with an offset</td></tr>
 *   <tr><td>{@value #INVALID_EVENT_ID}</td><td>not a string, over 128 bytes, or an unpaired surrogate</td></tr>
 *   <tr><td>{@value #INVALID_USER}</td><td>not a string, over 256 bytes, or an unpaired surrogate</td></tr>
 *   <tr><td>{@value #FUTURE_TS}</td><td>read from Kafka with a time more than the allowed skew ahead of the wall clock</td></tr>
 * </table>
 * The pipeline adds {@value #LATE} for events later than the allowed lateness; the file reader
 * ({@code JsonLinesFormat}) adds {@value #FUTURE_TS} for a line far ahead of its file's own progress and
 * {@code unreadable_file} for a file that cannot be read whole. Unknown fields are ignored, with what they hold (an
 * object inside one may repeat a name).
 * An explicit JSON {@code null} in an optional field means the field is absent.
 */
public final class EventParser implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final String INVALID_UTF8 = "invalid_utf8";
    public static final String INVALID_JSON = "invalid_json";
    public static final String MISSING_COUNTER = "missing_counter";
    public static final String INVALID_COUNTER = "invalid_counter";
    public static final String INVALID_DELTA = "invalid_delta";
    public static final String INVALID_TS = "invalid_ts";
    public static final String INVALID_EVENT_ID = "invalid_event_id";
    public static final String INVALID_USER = "invalid_user";
    public static final String FUTURE_TS = "future_ts";
    public static final String LATE = "late";

    public static final int MAX_COUNTER_BYTES = 256;
    public static final int MAX_EVENT_ID_BYTES = 128;
    public static final int MAX_USER_BYTES = 256;
    public static final long MAX_ABS_DELTA = 1_000_000_000_000L;
    /** Year 9999: a larger epoch-millisecond value is surely an error (seconds or nanoseconds in the wrong unit). */
    private static final long MAX_TS = 253_402_300_799_999L;

    /**
     * Without Jackson's duplicate detection, which builds a set of the names of every object with more than two
     * fields: {@link #readObject} tells duplicates of the event's own fields apart by a bit each.
     */
    private static final JsonFactory JSON = new JsonFactory();

    /** The bits of the fields an event object may hold, for {@link #readObject}'s duplicate check. */
    private static final int COUNTER = 1, DELTA = 2, TS = 4, EVENT_ID = 8, USER = 16;

    private final long maxFutureMillis;

    /** @param maxFutureMillis events further than this ahead of the wall clock are dead-lettered; {@code <= 0}: no check */
    public EventParser(long maxFutureMillis) {
        this.maxFutureMillis = maxFutureMillis;
    }

    /**
     * @param payload the raw record value (may be null: a Kafka tombstone)
     * @param key the Kafka record key, or null
     * @param source {@code topic/partition/offset} or {@code file:line}
     * @param defaultTs event time when the record has no {@code ts} (Kafka record timestamp, or read time for files)
     * @param wallClockMillis the wall clock for the future-timestamp rule; {@code <= 0} skips it (files)
     */
    public Event parse(byte[] payload, byte[] key, String source, long defaultTs, long wallClockMillis) {
        Event e = new Event();
        e.payload = payload;
        e.key = key;
        e.source = source;
        e.ts = defaultTs;
        if (payload == null || payload.length == 0) {
            return e.deadLetter(INVALID_JSON, payload == null ? "the record has no value" : "the record is empty");
        }
        // JSON parsers are lenient with some malformed UTF-8 (overlong forms such as C0 AF for '/'), which
        // would let one counter id pass for another: a payload that is not plain ASCII is checked strictly.
        if (!isAscii(payload) && Json.utf8OrNull(payload) == null) {
            return e.deadLetter(INVALID_UTF8, "the record is not valid UTF-8");
        }
        try (JsonParser p = JSON.createParser(payload)) {
            String reason = readObject(p, e);
            if (reason != null) return e;
        } catch (JsonParseException | InputCoercionException ex) {
            return malformed(e, payload, ex);
        } catch (IOException ex) {
            return malformed(e, payload, ex);
        }
        if (e.counter == null) return e.deadLetter(MISSING_COUNTER, "the field 'counter' is required");
        if (wallClockMillis > 0 && maxFutureMillis > 0 && e.ts > wallClockMillis + maxFutureMillis) {
            return e.deadLetter(
                    FUTURE_TS,
                    "ts " + e.ts + " is " + (e.ts - wallClockMillis) + " ms ahead of the wall clock (at most "
                            + maxFutureMillis + " ms allowed)");
        }
        return e;
    }

    private static boolean isAscii(byte[] bytes) {
        for (byte b : bytes) {
            if (b < 0) return false;
        }
        return true;
    }

    private static Event malformed(Event e, byte[] payload, Exception ex) {
        if (Json.utf8OrNull(payload) == null) {
            return e.deadLetter(INVALID_UTF8, "the record is not valid UTF-8");
        }
        String msg = ex.getMessage() == null ? ex.getClass().getSimpleName() : ex.getMessage();
        int nl = msg.indexOf('\n');
        return e.deadLetter(INVALID_JSON, nl > 0 ? msg.substring(0, nl) : msg);
    }

    /** Reads the one object of the record into {@code e}; returns the dead-letter reason, or null. */
    private static String readObject(JsonParser p, Event e) throws IOException {
        if (p.nextToken() != JsonToken.START_OBJECT) {
            e.deadLetter(INVALID_JSON, "the record is not a JSON object");
            return INVALID_JSON;
        }
        String reason = null;
        int seen = 0;
        Set<String> others = null;
        JsonToken t;
        while ((t = p.nextToken()) == JsonToken.FIELD_NAME) {
            String field = p.currentName();
            int bit = bitOf(field);
            boolean duplicate;
            if (bit != 0) {
                duplicate = (seen & bit) != 0;
                seen |= bit;
            } else {
                if (others == null) others = new HashSet<>();
                duplicate = !others.add(field);
            }
            if (duplicate) throw new JsonParseException(p, "Duplicate field '" + field + "'");
            JsonToken v = p.nextToken();
            if (reason != null) {
                p.skipChildren();
                continue;
            }
            reason = switch (field) {
                case "counter" -> readCounter(p, v, e);
                case "delta" -> readDelta(p, v, e);
                case "ts" -> readTs(p, v, e);
                case "event_id" -> readEventId(p, v, e);
                case "user" -> readUser(p, v, e);
                default -> {
                    p.skipChildren();
                    yield null;
                }
            };
        }
        if (t != JsonToken.END_OBJECT) {
            throw new JsonParseException(p, "unexpected token " + t);
        }
        if (p.nextToken() != null) {
            throw new JsonParseException(p, "trailing data after the JSON object");
        }
        return reason;
    }

    private static int bitOf(String field) {
        return switch (field) {
            case "counter" -> COUNTER;
            case "delta" -> DELTA;
            case "ts" -> TS;
            case "event_id" -> EVENT_ID;
            case "user" -> USER;
            default -> 0;
        };
    }

    private static String readCounter(JsonParser p, JsonToken v, Event e) throws IOException {
        if (v == JsonToken.VALUE_NULL) return null;
        if (v != JsonToken.VALUE_STRING) {
            p.skipChildren();
            return fail(e, INVALID_COUNTER, "'counter' must be a string, not " + describe(v));
        }
        String c = p.getText();
        String problem = counterProblem(c);
        if (problem != null) return fail(e, INVALID_COUNTER, problem);
        e.counter = c;
        return null;
    }

    /** Why {@code c} is not a valid counter id, or null when it is. */
    public static String counterProblem(String c) {
        if (c.isEmpty()) return "'counter' is empty";
        int bytes = utf8Length(c);
        if (bytes > MAX_COUNTER_BYTES)
            return "'counter' is " + bytes + " bytes of UTF-8, at most " + MAX_COUNTER_BYTES + " allowed";
        for (int i = 0; i < c.length(); ) {
            int cp = c.codePointAt(i);
            if (cp == '{' || cp == '}') return "'counter' contains '" + (char) cp + "' at index " + i;
            if (Character.isWhitespace(cp) || Character.isSpaceChar(cp))
                return "'counter' contains whitespace (U+" + hex(cp) + ") at index " + i;
            if (Character.isISOControl(cp) || Character.getType(cp) == Character.FORMAT) {
                return "'counter' contains a control character (U+" + hex(cp) + ") at index " + i;
            }
            if (Character.isSurrogate(c.charAt(i)) && !Character.isSupplementaryCodePoint(cp)) {
                return "'counter' contains an unpaired surrogate at index " + i;
            }
            i += Character.charCount(cp);
        }
        return null;
    }

    private static String readDelta(JsonParser p, JsonToken v, Event e) throws IOException {
        if (v == JsonToken.VALUE_NULL) return null;
        if (v != JsonToken.VALUE_NUMBER_INT) {
            p.skipChildren();
            return fail(e, INVALID_DELTA, "'delta' must be an integer, not " + describe(v));
        }
        if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
            return fail(e, INVALID_DELTA, "'delta' " + p.getText() + " is out of range: |delta| <= 10^12");
        }
        long d = p.getLongValue();
        if (d > MAX_ABS_DELTA || d < -MAX_ABS_DELTA) {
            return fail(e, INVALID_DELTA, "'delta' " + d + " is out of range: |delta| <= 10^12");
        }
        e.delta = d;
        return null;
    }

    private static String readTs(JsonParser p, JsonToken v, Event e) throws IOException {
        if (v == JsonToken.VALUE_NULL) return null;
        if (v == JsonToken.VALUE_NUMBER_INT) {
            if (p.getNumberType() == JsonParser.NumberType.BIG_INTEGER) {
                return fail(e, INVALID_TS, "'ts' " + p.getText() + " is out of range");
            }
            long ts = p.getLongValue();
            if (ts < 0 || ts > MAX_TS)
                return fail(e, INVALID_TS, "'ts' " + ts + " is not epoch milliseconds between 1970 and 9999");
            e.ts = ts;
            return null;
        }
        if (v == JsonToken.VALUE_STRING) {
            String text = p.getText();
            try {
                long ts = OffsetDateTime.parse(text, DateTimeFormatter.ISO_OFFSET_DATE_TIME)
                        .toInstant()
                        .toEpochMilli();
                if (ts < 0 || ts > MAX_TS) return fail(e, INVALID_TS, "'ts' " + text + " is before 1970 or after 9999");
                e.ts = ts;
                return null;
            } catch (DateTimeParseException | ArithmeticException ex) {
                return fail(
                        e,
                        INVALID_TS,
                        "'ts' '" + text + "' is not ISO-8601 with an offset (e.g. 2026-11-30T12:00:00Z)");
            }
        }
        p.skipChildren();
        return fail(e, INVALID_TS, "'ts' must be epoch milliseconds or an ISO-8601 string, not " + describe(v));
    }

    private static String readEventId(JsonParser p, JsonToken v, Event e) throws IOException {
        if (v == JsonToken.VALUE_NULL) return null;
        if (v != JsonToken.VALUE_STRING) {
            p.skipChildren();
            return fail(e, INVALID_EVENT_ID, "'event_id' must be a string, not " + describe(v));
        }
        String id = p.getText();
        int bytes = utf8Length(id);
        if (bytes > MAX_EVENT_ID_BYTES)
            return fail(
                    e,
                    INVALID_EVENT_ID,
                    "'event_id' is " + bytes + " bytes, at most " + MAX_EVENT_ID_BYTES + " allowed");
        int lone = loneSurrogate(id);
        if (lone >= 0) return fail(e, INVALID_EVENT_ID, "'event_id' contains an unpaired surrogate at index " + lone);
        e.eventId = id;
        return null;
    }

    private static String readUser(JsonParser p, JsonToken v, Event e) throws IOException {
        if (v == JsonToken.VALUE_NULL) return null;
        if (v != JsonToken.VALUE_STRING) {
            p.skipChildren();
            return fail(e, INVALID_USER, "'user' must be a string, not " + describe(v));
        }
        String u = p.getText();
        int bytes = utf8Length(u);
        if (bytes > MAX_USER_BYTES)
            return fail(e, INVALID_USER, "'user' is " + bytes + " bytes, at most " + MAX_USER_BYTES + " allowed");
        int lone = loneSurrogate(u);
        if (lone >= 0) return fail(e, INVALID_USER, "'user' contains an unpaired surrogate at index " + lone);
        e.user = u;
        return null;
    }

    /**
     * The index of the first unpaired surrogate ({@code "\\ud800"} in JSON), or -1. Such a string has no UTF-8
     * form: encoded it becomes '?' (or U+FFFD), so two distinct users or event ids of lone surrogates would
     * become the same value in Redis and in the dedup state.
     */
    static int loneSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return i;
            }
        }
        return -1;
    }

    private static String fail(Event e, String reason, String detail) {
        e.deadLetter(reason, detail);
        return reason;
    }

    private static String describe(JsonToken t) {
        return switch (t) {
            case START_OBJECT -> "an object";
            case START_ARRAY -> "an array";
            case VALUE_STRING -> "a string";
            case VALUE_NUMBER_INT -> "an integer";
            case VALUE_NUMBER_FLOAT -> "a decimal number";
            case VALUE_TRUE, VALUE_FALSE -> "a boolean";
            default -> String.valueOf(t);
        };
    }

    private static String hex(int cp) {
        return String.format("%04X", cp);
    }

    /** UTF-8 length of a Java string without encoding it. */
    public static int utf8Length(String s) {
        int n = 0;
        for (int i = 0; i < s.length(); i++) {
            char ch = s.charAt(i);
            if (ch < 0x80) n += 1;
            else if (ch < 0x800) n += 2;
            else if (Character.isHighSurrogate(ch) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                n += 4;
                i++;
            } else n += 3;
        }
        return n;
    }

    /** Convenience for tests and tools: parses a line of text read from a file. */
    public Event parseLine(String line, String source, long readTime) {
        return parse(line.getBytes(StandardCharsets.UTF_8), null, source, readTime, 0);
    }
}
