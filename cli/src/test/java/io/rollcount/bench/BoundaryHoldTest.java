package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CompletableFuture;
import org.apache.flink.api.connector.source.lib.NumberSequenceSource.NumberSequenceSplit;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class BoundaryHoldTest {
    @BeforeEach
    void clear() {
        BoundaryHold.clear();
    }

    @Test
    void aReaderThatReachedTheHoldWaitsForTwoCheckpointsThenReadsFreely() {
        RateLimiter<NumberSequenceSplit> limiter = new BoundaryHold<NumberSequenceSplit>().createRateLimiter(2);
        assertThat(future(limiter)).isDone();
        limiter.notifyCheckpointComplete(1); // before the hold: does not count
        BoundaryHold.reached();
        CompletableFuture<Void> held = future(limiter);
        assertThat(held).isNotDone();
        assertThat(BoundaryHold.heldAt).hasSize(1);
        limiter.notifyCheckpointComplete(2); // may have been triggered before the hold
        assertThat(held).isNotDone();
        limiter.notifyCheckpointComplete(3); // triggered after checkpoint 2 completed, so after the hold began
        assertThat(held).isDone();
        assertThat(BoundaryHold.heldMillis).hasSize(1);
        assertThat(future(limiter)).isDone();
        BoundaryHold.reached(); // once only
        assertThat(future(limiter)).isDone();
        assertThat(BoundaryHold.heldAt).hasSize(1);
    }

    @Test
    void allHeldAtIsWhenTheLastReaderBeganItsHold() {
        assertThat(BoundaryHold.allHeldAt(2)).isEqualTo(-1);
        BoundaryHold.heldAt.add(1_000L);
        assertThat(BoundaryHold.allHeldAt(2)).isEqualTo(-1);
        BoundaryHold.heldAt.add(1_700L);
        assertThat(BoundaryHold.allHeldAt(2)).isEqualTo(1_700L);
    }

    @Test
    void eachReaderIsHeldByItsOwnLimiterOnItsOwnThread() throws Exception {
        BoundaryHold<NumberSequenceSplit> strategy = new BoundaryHold<>();
        RateLimiter<NumberSequenceSplit> here = strategy.createRateLimiter(2);
        RateLimiter<NumberSequenceSplit> there = strategy.createRateLimiter(2);
        future(here);
        Thread other = new Thread(() -> {
            future(there);
            BoundaryHold.reached();
        });
        other.start();
        other.join();
        assertThat(future(here)).isDone();
        CompletableFuture<Void> held = there.acquire().toCompletableFuture();
        assertThat(held).isNotDone();
        there.notifyCheckpointComplete(7);
        there.notifyCheckpointComplete(8);
        assertThat(held).isDone();
    }

    private static CompletableFuture<Void> future(RateLimiter<NumberSequenceSplit> limiter) {
        return limiter.acquire().toCompletableFuture();
    }
}
