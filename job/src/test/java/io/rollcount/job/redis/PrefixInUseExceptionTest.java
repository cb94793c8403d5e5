package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.ExecutionException;
import org.apache.flink.runtime.client.JobExecutionException;
import org.apache.flink.runtime.execution.SuppressRestartsException;
import org.apache.flink.util.SerializedThrowable;
import org.junit.jupiter.api.Test;

/** The lease refusal of a writer found in a failed job's causes, as the client gets them. */
class PrefixInUseExceptionTest {
    private static final String LINE = new PrefixGuard("p").inUse();

    private static Throwable failedJob(Throwable cause) {
        return new ExecutionException(new JobExecutionException(null, "Job execution failed.", cause));
    }

    @Test
    void theWritersRefusalIsFoundAmongTheCausesOfTheFailure() {
        Throwable writer = new SuppressRestartsException(new PrefixInUseException(LINE));
        assertThat(PrefixInUseException.messageIn(failedJob(writer))).isEqualTo(LINE);
        // as a client that cannot load the class sees it
        assertThat(PrefixInUseException.messageIn(failedJob(new SerializedThrowable(writer))))
                .isEqualTo(LINE);
    }

    @Test
    void otherFailuresAreNotIt() {
        assertThat(PrefixInUseException.messageIn(
                        failedJob(new SuppressRestartsException(new RedisSinkException.Unchecked(LINE)))))
                .isNull();
        assertThat(PrefixInUseException.messageIn(new RuntimeException())).isNull();
    }
}
