package io.rollcount.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * CPU time of the job in this JVM: the benchmark runs every Flink job on a MiniCluster in its own JVM, so
 * the job's cost is the process's CPU time ({@code OperatingSystemMXBean.getProcessCpuTime}: every thread,
 * task threads, RocksDB's native threads, GC and JIT compiler threads included) less the threads of the
 * benchmark itself that are not the job ({@link #exclude}: the harness thread that waits for the end and
 * samples the heap). The benchmark's event generator is the job's source and counts as the job. The Kafka
 * broker and the dashboard reader ({@link ReadLatencyProbe}) run in child processes of their own, so they
 * are not in this figure.
 */
final class JobCpu {
    private static final Set<Long> EXCLUDED = ConcurrentHashMap.newKeySet();
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private JobCpu() {}

    /** Leaves {@code thread}'s CPU out of {@link #nanos} from now on (while it lives). */
    static void exclude(Thread thread) {
        EXCLUDED.add(thread.getId());
    }

    static void include(Thread thread) {
        EXCLUDED.remove(thread.getId());
    }

    /** The process's CPU time so far minus that of the excluded threads, in ns; -1 where the JVM cannot tell. */
    static long nanos() {
        long process = OS.getProcessCpuTime();
        if (process < 0) return -1;
        long excluded = 0;
        for (long id : EXCLUDED) {
            long t = THREADS.getThreadCpuTime(id);
            if (t > 0) excluded += t;
        }
        return process - excluded;
    }
}
