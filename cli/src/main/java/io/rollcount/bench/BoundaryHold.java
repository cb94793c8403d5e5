package io.rollcount.bench;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiter;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;

/**
 * A rate limiter for the bench's generator source that holds each reader, once it has made an event at or past an
 * event time, until two checkpoints have completed, then lets it read at full speed. Checkpoints are taken one at a
 * time, so the second of them was triggered after the hold began: a checkpoint triggered after every reader passed
 * that event time completes while the events are still read, on any machine and however short the run. The tail
 * scenario's runs of seconds hold at the first hour's boundary so that they always have a boundary's checkpoint to
 * report.
 *
 * <p>The generator function tells its reader's limiter that it got there ({@link #reached}); both run on the source
 * task's thread, and the limiter makes itself that thread's one ({@link #acquire}, called before every event) so
 * that the function can find it. A hold lasts at most {@link #MAX_HOLD} (checkpoints failing); the reader then goes
 * on. {@link #heldAt} and {@link #heldMillis} keep when each reader began its hold and how long it lasted, for the
 * run's report; the bench clears them per run.
 */
final class BoundaryHold<S extends SourceSplit> implements RateLimiterStrategy<S> {
    private static final long serialVersionUID = 1L;

    /** The longest a reader is held. */
    static final Duration MAX_HOLD = Duration.ofSeconds(60);

    /** Checkpoints completed during a hold that end it. */
    static final int CHECKPOINTS = 2;

    /** When each reader began its hold (epoch ms), in the order they began. */
    static final List<Long> heldAt = new CopyOnWriteArrayList<>();

    /** How long each ended hold lasted (ms). */
    static final List<Long> heldMillis = new CopyOnWriteArrayList<>();

    private static final ThreadLocal<Limiter<?>> ON_THREAD = new ThreadLocal<>();

    @Override
    public RateLimiter<S> createRateLimiter(int parallelism) {
        return new Limiter<>();
    }

    /** The reader on this thread has made its event at the hold's event time: hold it before its next event. */
    static void reached() {
        Limiter<?> limiter = ON_THREAD.get();
        if (limiter != null) limiter.hold();
    }

    static void clear() {
        heldAt.clear();
        heldMillis.clear();
    }

    /** When every one of {@code readers} was held (the last of them to begin its hold); -1 if not all were. */
    static long allHeldAt(int readers) {
        List<Long> held = List.copyOf(heldAt);
        return held.size() < readers
                ? -1
                : held.stream().mapToLong(Long::longValue).max().orElse(-1);
    }

    /** One reader's limiter: free until {@link #hold}, then closed until {@value #CHECKPOINTS} completions. */
    private static final class Limiter<S extends SourceSplit> implements RateLimiter<S> {
        private static final CompletableFuture<Void> FREE = CompletableFuture.completedFuture(null);

        /** The open hold; null before it and after it (ended by a completion or by the timeout's thread). */
        private volatile CompletableFuture<Void> hold;

        private boolean held;
        private long holdBegan;
        private int completedDuringHold;

        @Override
        public CompletionStage<Void> acquire(int requests) {
            ON_THREAD.set(this);
            return hold == null ? FREE : hold;
        }

        void hold() {
            if (held) return;
            held = true;
            holdBegan = System.currentTimeMillis();
            heldAt.add(holdBegan);
            hold = new CompletableFuture<Void>().completeOnTimeout(null, MAX_HOLD.toMillis(), TimeUnit.MILLISECONDS);
            hold.thenRun(this::release);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            if (hold != null && ++completedDuringHold >= CHECKPOINTS) hold.complete(null);
        }

        private void release() {
            heldMillis.add(System.currentTimeMillis() - holdBegan);
            hold = null;
        }
    }
}
