package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

class CheckpointFailuresTest {
    @AfterEach
    void forget() {
        CheckpointFailures.clear();
    }

    @Test
    void namesTheInnermostCause() {
        CheckpointFailures.record(new RuntimeException(
                "Asynchronous task checkpoint failed.",
                new ExecutionException(new IOException("No space left on device"))));
        assertThat(CheckpointFailures.last()).isEqualTo("java.io.IOException: No space left on device");
    }

    @Test
    void aCancelledCheckpointKeepsTheCauseSeenBeforeIt() {
        CheckpointFailures.record(new RuntimeException(new IOException("No space left on device")));
        CheckpointFailures.record(new RuntimeException(new CancellationException()));
        CheckpointFailures.record(new RuntimeException(new InterruptedException()));
        assertThat(CheckpointFailures.last()).isEqualTo("java.io.IOException: No space left on device");
    }

    @Test
    void onlyCancellationsLeaveNoCause() {
        CheckpointFailures.record(new CancellationException());
        assertThat(CheckpointFailures.last()).isNull();
    }
}
