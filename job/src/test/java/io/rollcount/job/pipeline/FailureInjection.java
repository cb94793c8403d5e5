package io.rollcount.job.pipeline;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Shared switches of the test-only wrappers ({@link GatedSource}, {@link FailingSinks}): where the one
 * injected failure happens, whether it has happened, and how many checkpoints the job has completed. The
 * MiniCluster runs in the test's JVM, so static state reaches the operators; one job at a time.
 */
final class FailureInjection {
    /** Where the single failure of a run is thrown. */
    enum Place {
        /** No failure. */
        NONE,
        /** In the source reader, right after it emitted records (before any operator saw the next ones). */
        AFTER_SOURCE,
        /** In the keyed operator's timer callback: thrown by the chained Redis sink writer it calls synchronously. */
        KEYED_OPERATOR,
        /** In the rollups KafkaSink's writer, after records were sent in the open transaction, before it is pre-committed. */
        SINK_TRANSACTION
    }

    static volatile Place place = Place.NONE;
    /** The gate of {@link GatedSource} stays shut until this is set too (test c lets the broker restart first). */
    static volatile boolean released = true;

    static final AtomicBoolean FAILED = new AtomicBoolean();
    /** The stack of the injected failure, to show where it was thrown. */
    static final AtomicReference<Throwable> THROWN = new AtomicReference<>();

    private static final Set<Long> COMPLETED = ConcurrentHashMap.newKeySet();

    private FailureInjection() {}

    static void reset(Place p, boolean gateReleased) {
        place = p;
        released = gateReleased;
        FAILED.set(false);
        THROWN.set(null);
        COMPLETED.clear();
    }

    static void checkpointCompleted(long id) {
        COMPLETED.add(id);
    }

    static int completedCheckpoints() {
        return COMPLETED.size();
    }

    /** The gate opens once the job has completed two checkpoints (and the test has released it). */
    static boolean gateOpen() {
        return released && completedCheckpoints() >= 2;
    }

    /** True exactly once: when the failure at {@code here} is due (after two completed checkpoints). */
    static boolean failNow(Place here) {
        return place == here && completedCheckpoints() >= 2 && FAILED.compareAndSet(false, true);
    }

    static InjectedFailure failure(String what) {
        InjectedFailure f = new InjectedFailure("injected failure (" + place + "): " + what);
        THROWN.set(f);
        return f;
    }

    static final class InjectedFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        InjectedFailure(String message) {
            super(message);
        }
    }
}
