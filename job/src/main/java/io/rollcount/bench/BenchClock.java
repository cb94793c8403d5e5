package io.rollcount.bench;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What the benchmark's sources and sinks report to the benchmark in the same JVM (a local MiniCluster):
 * when the first event was made, when the sinks saw the end of their input, the probes of a paced run.
 */
final class BenchClock {
    private BenchClock() {}

    static final AtomicLong FIRST_EVENT_NANOS = new AtomicLong();
    static final AtomicLong LAST_END_NANOS = new AtomicLong();
    static final AtomicInteger ENDS = new AtomicInteger();
    /** Paced runs: probe counter -> creation time (epoch ms). */
    static final ConcurrentHashMap<String, Long> PROBES = new ConcurrentHashMap<>();
    /** Paced runs: the last index each source subtask made. */
    static final AtomicLongArray LAST_INDEX = new AtomicLongArray(64);

    static void reset() {
        FIRST_EVENT_NANOS.set(0);
        LAST_END_NANOS.set(0);
        ENDS.set(0);
        PROBES.clear();
        for (int i = 0; i < LAST_INDEX.length(); i++) LAST_INDEX.set(i, -1);
    }

    static void firstEvent() {
        if (FIRST_EVENT_NANOS.get() == 0) FIRST_EVENT_NANOS.compareAndSet(0, System.nanoTime());
    }

    static void ended() {
        LAST_END_NANOS.accumulateAndGet(System.nanoTime(), Math::max);
        ENDS.incrementAndGet();
    }
}
