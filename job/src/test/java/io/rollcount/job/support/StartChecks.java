package io.rollcount.job.support;

import io.rollcount.job.JobSettings;
import io.rollcount.job.Launcher;
import io.rollcount.job.RefusedStartException;

/** The launcher's start checks as a test asks about them: the refusal, or null for a start that may go on. */
public final class StartChecks {
    private StartChecks() {}

    /**
     * The refusal of {@code flink run}'s client ({@link Launcher.Place#CLIENT}) for a start of {@code settings}
     * that restores a checkpoint ({@code restoring}: one that need not exist here) or none; null if it may start.
     */
    public static String prefixRefusal(JobSettings settings, boolean restoring, String resumeHint) {
        return prefixRefusal(settings, restoring, resumeHint, null);
    }

    /** As {@link #prefixRefusal(JobSettings, boolean, String)}, for a job whose writers hold {@code leaseToken}. */
    public static String prefixRefusal(JobSettings settings, boolean restoring, String resumeHint, String leaseToken) {
        try {
            Launcher.of(settings, Launcher.Place.CLIENT, resumeHint)
                    .holdingLease(leaseToken)
                    .checkStart(restoring ? "file:///a-checkpoint-elsewhere/chk-1" : null, "flink run -s");
            return null;
        } catch (RefusedStartException e) {
            return e.getMessage();
        }
    }
}
