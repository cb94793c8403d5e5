package io.rollcount.job.redis;

import org.apache.flink.util.SerializedThrowable;

/**
 * The lease of a key prefix is held by another running job: thrown by a {@link RedisSinkWriter} of a job that
 * got past the start check ({@link PrefixGuard#refusal}) at the same moment as that job, with restarts
 * suppressed. Its message is the start check's one line ({@link PrefixGuard#inUse}).
 */
public final class PrefixInUseException extends RedisSinkException.Unchecked {
    private static final long serialVersionUID = 1L;

    public PrefixInUseException(String message) {
        super(message);
    }

    /**
     * The message of the {@code PrefixInUseException} that failed a job, found among the causes of
     * {@code failure} (also as a {@link SerializedThrowable} whose class the client could not load), or null.
     */
    public static String messageIn(Throwable failure) {
        for (Throwable c = failure; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof PrefixInUseException) return c.getMessage();
            if (c instanceof SerializedThrowable s
                    && PrefixInUseException.class.getName().equals(s.getOriginalErrorClassName())) {
                // its message is the original's toString()
                String m = s.getMessage();
                String head = s.getOriginalErrorClassName() + ": ";
                return m.startsWith(head) ? m.substring(head.length()) : m;
            }
        }
        return null;
    }
}
