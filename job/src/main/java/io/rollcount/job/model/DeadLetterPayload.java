package io.rollcount.job.model;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

/**
 * The raw input of a dead letter as the contract writes it ({@code payload}, {@code payload_encoding},
 * {@code payload_truncated}, {@code size}), and the limits of every field of a dead letter, so that a dead
 * letter always fits what its sink accepts: escaping can make a dead letter several times its input (a
 * record of control bytes), and one its sink refuses would fail the job again at every restart.
 *
 * <p>Rules, decided here and nowhere else:
 * <ul>
 *   <li>The payload is cut to at most {@link #MAX_PAYLOAD_BYTES} bytes of the raw input; text is cut on a
 *       code-point boundary, so the cut text is still valid UTF-8.</li>
 *   <li>{@code base64} when the whole input is not valid UTF-8 or holds a control byte other than tab, CR
 *       and LF (each of which JSON would escape to six bytes); decided on the whole input, before any cut,
 *       so a record's encoding does not depend on where it is cut.</li>
 *   <li>{@code reason}, {@code detail} and {@code source} are cut to {@link #MAX_REASON_CHARS},
 *       {@link #MAX_DETAIL_CHARS} and {@link #MAX_SOURCE_CHARS} characters (a detail may quote the record),
 *       lone surrogates replaced by U+FFFD; the Kafka key to {@link #MAX_KEY_BYTES} bytes.</li>
 * </ul>
 * So the JSON of a dead letter is at most {@link #MAX_SERIALIZED_BYTES} bytes, well under the 1 MB a Kafka
 * producer and topic take by default.
 */
public final class DeadLetterPayload {
    /** The most raw input bytes a dead letter carries (contract section 4: 64 KiB). */
    public static final int MAX_PAYLOAD_BYTES = 64 * 1024;

    public static final int MAX_REASON_CHARS = 64;
    public static final int MAX_DETAIL_CHARS = 1024;
    public static final int MAX_SOURCE_CHARS = 1024;
    /** The most bytes of the input's Kafka key a dead letter keeps as its own key. */
    public static final int MAX_KEY_BYTES = 1024;
    /**
     * Upper bound of {@code Json.deadLetter}: a text payload escapes to at most 2 bytes per byte (only '"',
     * '\', tab, CR and LF are escaped), base64 to 4 per 3; a character of the other fields to at most 6
     * (a six-byte escape of a control character); 512 bytes for field names, punctuation, the size and the flag. About 141 KiB.
     */
    public static final int MAX_SERIALIZED_BYTES =
            2 * MAX_PAYLOAD_BYTES + 6 * (MAX_REASON_CHARS + MAX_DETAIL_CHARS + MAX_SOURCE_CHARS) + 512;

    public static final String UTF8 = "utf8";
    public static final String BASE64 = "base64";

    /** The bytes the dead letter carries (already cut), or null: the input had no value (a Kafka tombstone). */
    public final byte[] bytes;
    /** Whether {@link #bytes} are written as base64. */
    public final boolean base64;
    /** Bytes of the whole input. */
    public final long size;

    private DeadLetterPayload(byte[] bytes, boolean base64, long size) {
        this.bytes = bytes;
        this.base64 = base64;
        this.size = size;
    }

    /** The payload of a whole input, cut to {@code maxBytes}. */
    public static DeadLetterPayload of(byte[] whole, int maxBytes) {
        if (whole == null) return new DeadLetterPayload(null, false, 0);
        return cut(whole, whole.length, needsBase64(whole, false), maxBytes);
    }

    /**
     * The payload of an input of which only the first bytes were kept (a file line over the line limit):
     * the encoding is decided on those bytes, an incomplete character at their end aside.
     */
    public static DeadLetterPayload ofPrefix(byte[] prefix, long size, int maxBytes) {
        return cut(prefix, size, needsBase64(prefix, true), maxBytes);
    }

    /** The first bytes of an input whose encoding is already decided, cut further to {@code maxBytes}. */
    public static DeadLetterPayload cut(byte[] raw, long size, boolean base64, int maxBytes) {
        if (raw == null) return new DeadLetterPayload(null, false, size);
        int n = Math.min(raw.length, Math.max(0, maxBytes));
        if (!base64) n = codePointBoundary(raw, n);
        return new DeadLetterPayload(n == raw.length ? raw : Arrays.copyOf(raw, n), base64, Math.max(size, raw.length));
    }

    public boolean truncated() {
        return bytes != null && bytes.length < size;
    }

    /** {@code utf8}, {@code base64}, or null without payload. */
    public String encoding() {
        return bytes == null ? null : base64 ? BASE64 : UTF8;
    }

    /** The {@code payload} field's text. */
    public String text() {
        if (bytes == null) return null;
        return base64 ? Base64.getEncoder().encodeToString(bytes) : new String(bytes, StandardCharsets.UTF_8);
    }

    /** The largest {@code m <= n} at which a valid UTF-8 sequence may be cut: not inside a character. */
    static int codePointBoundary(byte[] raw, int n) {
        if (n >= raw.length) return raw.length;
        while (n > 0 && (raw[n] & 0xC0) == 0x80) n--;
        return n;
    }

    /** Not valid UTF-8, or a control byte JSON would escape to six bytes. */
    static boolean needsBase64(byte[] raw, boolean mayEndMidCharacter) {
        for (byte b : raw) {
            if ((b >= 0 && b < 0x20 && b != '\t' && b != '\n' && b != '\r') || b == 0x7F) return true;
        }
        if (Json.utf8OrNull(raw) != null) return false;
        if (!mayEndMidCharacter) return true;
        int end = codePointBoundary(raw, Math.max(0, raw.length - 1));
        return raw.length - end > 4 || Json.utf8OrNull(Arrays.copyOf(raw, end)) == null;
    }

    /** {@code s} cut to {@code max} characters (not inside a surrogate pair), lone surrogates replaced by U+FFFD. */
    public static String cap(String s, int max) {
        if (s == null) return null;
        String t = s.length() > max ? s.substring(0, Character.isHighSurrogate(s.charAt(max - 1)) ? max - 1 : max) : s;
        StringBuilder out = null;
        for (int i = 0; i < t.length(); i++) {
            char c = t.charAt(i);
            boolean lone = Character.isHighSurrogate(c)
                    ? i + 1 >= t.length() || !Character.isLowSurrogate(t.charAt(i + 1))
                    : Character.isLowSurrogate(c) && (i == 0 || !Character.isHighSurrogate(t.charAt(i - 1)));
            if (lone && out == null) out = new StringBuilder(t.substring(0, i));
            if (out != null) out.append(lone ? '\uFFFD' : c);
        }
        return out == null ? t : out.toString();
    }

    /** The dead letter's Kafka key: the input's, cut to {@link #MAX_KEY_BYTES}. */
    public static byte[] key(byte[] key) {
        return key == null || key.length <= MAX_KEY_BYTES ? key : Arrays.copyOf(key, MAX_KEY_BYTES);
    }
}
