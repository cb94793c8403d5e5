package io.rollcount.job.support;

import io.rollcount.job.JobOptions;
import io.rollcount.job.Launcher;
import io.rollcount.job.RefusedStartException;

/** The launcher's start checks as a test asks about them: the refusal, or null for a start that may go on. */
public final class StartChecks {
    private StartChecks() {}

    /**
     * The refusal of {@code flink run}'s client ({@link Launcher.Place#CLIENT}) for a start of {@code options}
     * that restores a checkpoint ({@code restoring}: one that need not exist here) or none; null if it may start.
     */
    public static String prefixRefusal(JobOptions options, boolean restoring, String resumeHint) {
        try {
            Launcher.of(options, Launcher.Place.CLIENT, resumeHint)
                    .checkStart(restoring ? "file:///a-checkpoint-elsewhere/chk-1" : null, "flink run -s");
            return null;
        } catch (RefusedStartException e) {
            return e.getMessage();
        }
    }
}
