package io.rollcount.job;

/**
 * A start of the job that {@link RollcountJob#main} refuses before it builds the job (a bad option, a key prefix
 * another job holds, another job's dead-letter file, an unreachable broker). The message is the one line that
 * says what to do; the exception carries no stack trace and no cause, so that {@code flink run} shows that line
 * as the root cause of the failed submission, and an application cluster reports it as the application's
 * failure.
 */
public final class RefusedStartException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public RefusedStartException(String line) {
        super(line, null, false, false);
    }
}
