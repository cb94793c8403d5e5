package io.rollcount.job.policy;

/** A bad {@code --policies} file: one line naming the file, the rule's position and the field. Nothing starts. */
public final class PoliciesException extends IllegalArgumentException {
    private static final long serialVersionUID = 1L;

    public PoliciesException(String message) {
        super(message);
    }
}
