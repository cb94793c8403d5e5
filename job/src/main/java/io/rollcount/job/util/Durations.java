package io.rollcount.job.util;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses the durations of the command line: {@code 500ms}, {@code 5s}, {@code 1m}, {@code 1h}, {@code 1d}, or ISO-8601 {@code PT5S}. */
public final class Durations {
    private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)");

    private Durations() {}

    public static Duration parse(String text) {
        if (text == null) throw new IllegalArgumentException("duration is missing");
        String t = text.trim().toLowerCase();
        Matcher m = SIMPLE.matcher(t);
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            return switch (m.group(2)) {
                case "ms" -> Duration.ofMillis(n);
                case "s" -> Duration.ofSeconds(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofDays(n);
            };
        }
        try {
            return Duration.parse(text.trim().toUpperCase());
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(
                    "'" + text + "' is not a duration: use for example 500ms, 5s, 1m, 1h, 1d");
        }
    }

    /** The shortest text of {@link #parse} form for a duration. */
    public static String format(Duration d) {
        long ms = d.toMillis();
        if (ms % 86_400_000L == 0 && ms != 0) return ms / 86_400_000L + "d";
        if (ms % 3_600_000L == 0 && ms != 0) return ms / 3_600_000L + "h";
        if (ms % 60_000L == 0 && ms != 0) return ms / 60_000L + "m";
        if (ms % 1000L == 0) return ms / 1000L + "s";
        return ms + "ms";
    }
}
