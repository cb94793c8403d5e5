package io.rollcount.job.util;

import java.time.Duration;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** The command line's durations ({@code 500ms}, {@code 5s}, {@code 1m}, {@code 1h}, {@code 1d}, ISO-8601) for picocli. */
public final class DurationConverter implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
        try {
            return Durations.parse(value);
        } catch (IllegalArgumentException e) {
            throw new TypeConversionException(e.getMessage());
        }
    }
}
