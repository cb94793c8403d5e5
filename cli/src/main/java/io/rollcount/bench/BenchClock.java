package io.rollcount.bench;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * What the benchmark's sources and sinks report to the benchmark in the same JVM (a local MiniCluster):
 * when the first event was made, when the sinks saw the end of their input, the CPU times at those two
 * moments (the job's, {@link JobCpu}, and the Kafka broker's when one is set), the probes of a paced run.
 */
final class BenchClock {
    private BenchClock() {}

    static final AtomicLong FIRST_EVENT_NANOS = new AtomicLong();
    static final AtomicLong LAST_END_NANOS = new AtomicLong();
    static final AtomicInteger ENDS = new AtomicInteger();
    /** The job's CPU time (ns, {@link JobCpu#nanos}) at the first event and at the last end seen. */
    static final AtomicLong FIRST_EVENT_CPU = new AtomicLong();

    static volatile long lastEndCpu;
    /** Every thread's CPU time ({@link ThreadCpu}) at the first event and at the last end seen. */
    static volatile ThreadCpu.Reading firstEventThreads = new ThreadCpu.Reading();

    static volatile ThreadCpu.Reading lastEndThreads = new ThreadCpu.Reading();
    /** The Kafka broker's CPU time (ns) at the first event and at the last end seen; -1 without a broker. */
    static final AtomicLong FIRST_EVENT_BROKER_CPU = new AtomicLong(-1);

    static volatile long lastEndBrokerCpu = -1;
    /** The broker's CPU clock in Kafka mode, else null. */
    static volatile java.util.function.LongSupplier brokerCpu;
    /** Paced runs: probe counter -> creation time (epoch ms). */
    static final ConcurrentHashMap<String, Long> PROBES = new ConcurrentHashMap<>();
    /** Paced runs: the last index each source subtask made. */
    static final AtomicLongArray LAST_INDEX = new AtomicLongArray(64);

    static void reset() {
        FIRST_EVENT_NANOS.set(0);
        LAST_END_NANOS.set(0);
        ENDS.set(0);
        FIRST_EVENT_CPU.set(0);
        FIRST_EVENT_BROKER_CPU.set(-1);
        lastEndCpu = 0;
        firstEventThreads = new ThreadCpu.Reading();
        lastEndThreads = new ThreadCpu.Reading();
        lastEndBrokerCpu = -1;
        PROBES.clear();
        for (int i = 0; i < LAST_INDEX.length(); i++) LAST_INDEX.set(i, -1);
    }

    static void firstEvent() {
        if (FIRST_EVENT_NANOS.get() == 0 && FIRST_EVENT_NANOS.compareAndSet(0, System.nanoTime())) {
            FIRST_EVENT_CPU.set(JobCpu.nanos());
            firstEventThreads = ThreadCpu.read();
            java.util.function.LongSupplier broker = brokerCpu;
            if (broker != null) FIRST_EVENT_BROKER_CPU.set(broker.getAsLong());
        }
    }

    /** A sink subtask flushed its end of input; the last one's time and CPU readings stand for the run's end. */
    static synchronized void ended() {
        LAST_END_NANOS.accumulateAndGet(System.nanoTime(), Math::max);
        lastEndCpu = JobCpu.nanos();
        lastEndThreads = ThreadCpu.read();
        java.util.function.LongSupplier broker = brokerCpu;
        if (broker != null) lastEndBrokerCpu = broker.getAsLong();
        ENDS.incrementAndGet();
    }
}
