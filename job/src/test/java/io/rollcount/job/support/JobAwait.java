package io.rollcount.job.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.core.execution.JobClient;

/** Waits, in tests, for a condition while a job runs, failing early if the job ends first. */
public final class JobAwait {
    private JobAwait() {}

    /** A condition that may throw while a broker or Redis is briefly away: then it is asked again. */
    public interface Condition {
        boolean holds() throws Exception;
    }

    /** Waits up to {@code timeout} for {@code condition}, asking every 100 ms; fails if {@code job} ends first. */
    public static void await(String what, Duration timeout, Condition condition, JobClient job) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                if (condition.holds()) return;
            } catch (Exception e) {
                // a broker or Redis briefly away: look again
            }
            JobStatus status = job.getJobStatus().get(30, TimeUnit.SECONDS);
            assertThat(status.isGloballyTerminalState())
                    .as("the job ended (" + status + ") before: " + what)
                    .isFalse();
            assertThat(System.nanoTime())
                    .as("waited " + timeout + " for: " + what)
                    .isLessThan(deadline);
            Thread.sleep(100);
        }
    }
}
