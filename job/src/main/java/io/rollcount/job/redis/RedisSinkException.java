package io.rollcount.job.redis;

import java.io.IOException;

/**
 * A Redis write that failed for good: the retry timeout passed, the server refused the credentials or
 * the ACL refused a key (the message names it), or a script call failed as a whole. A key Redis rejects
 * for its data (WRONGTYPE) is no such failure: the writer reports it and goes on. Thrown by {@link RedisSinkWriter}, it
 * fails the job, which then restarts from its last checkpoint. Messages never contain the password.
 */
public class RedisSinkException extends IOException {
    private static final long serialVersionUID = 1L;

    public RedisSinkException(String message, Throwable cause) {
        super(message, cause);
    }

    /** The same inside code that cannot throw checked exceptions. */
    public static class Unchecked extends RuntimeException {
        private static final long serialVersionUID = 1L;

        public Unchecked(String message) {
            super(message);
        }
    }
}
