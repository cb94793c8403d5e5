package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import org.junit.jupiter.api.Test;

/** The job's CPU is the process's less the excluded threads': a busy excluded thread does not count, a busy other one does. */
class JobCpuTest {
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    @Test
    void anExcludedThreadIsLeftOut() throws Exception {
        long spin = 300_000_000L; // 0.3 s of CPU
        Thread excluded = busy(Long.MAX_VALUE); // spins until interrupted
        JobCpu.exclude(excluded);
        long job0 = JobCpu.nanos();
        long process0 = OS.getProcessCpuTime();
        excluded.start();
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (ManagementFactory.getThreadMXBean().getThreadCpuTime(excluded.getId()) < spin
                && System.nanoTime() < deadline) Thread.sleep(10);
        long job1 = JobCpu.nanos();
        long process1 = OS.getProcessCpuTime();
        excluded.interrupt();
        excluded.join();
        JobCpu.include(excluded);
        // the process paid for the spin, the job's figure did not
        assertThat(process1 - process0).isGreaterThanOrEqualTo(spin);
        assertThat((process1 - process0) - (job1 - job0)).isGreaterThanOrEqualTo(spin - 20_000_000L);

        Thread counted = busy(spin);
        long job2 = JobCpu.nanos();
        counted.start();
        counted.join();
        assertThat(JobCpu.nanos() - job2).isGreaterThanOrEqualTo(spin - 20_000_000L);
    }

    /** A thread that spins until it has used {@code nanos} of CPU (or is interrupted). */
    private static Thread busy(long nanos) {
        return new Thread(() -> {
            var threads = ManagementFactory.getThreadMXBean();
            long x = 0;
            while (threads.getCurrentThreadCpuTime() < nanos
                    && !Thread.currentThread().isInterrupted()) {
                for (int i = 0; i < 100_000; i++) x += i ^ (x >>> 3);
            }
            if (x == 42) System.out.print("");
        });
    }
}
