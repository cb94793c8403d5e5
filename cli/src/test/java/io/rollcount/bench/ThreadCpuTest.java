package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ThreadCpuTest {
    @Test
    void kindsAddUpSubtasksAndPoolMembers() {
        assertThat(ThreadCpu.kind("count-per-count\n")).isEqualTo("count_per_count");
        assertThat(ThreadCpu.kind("GC Thread#0")).isEqualTo("gc_thread");
        assertThat(ThreadCpu.kind("GC Thread#1")).isEqualTo("gc_thread");
        assertThat(ThreadCpu.kind("C2 CompilerThre")).isEqualTo("jit_compiler");
        assertThat(ThreadCpu.kind("C1 CompilerThre")).isEqualTo("jit_compiler");
        assertThat(ThreadCpu.kind("Source: events ")).isEqualTo("source_events");
        assertThat(ThreadCpu.kind("rocksdb:high")).isEqualTo("rocksdb_high");
        assertThat(ThreadCpu.kind("1234")).isEqualTo("unnamed");
    }

    @Test
    void differencesByKindLargestFirstWithThreadsBornInBetweenCountingWhole() {
        ThreadCpu.Reading from = reading(Map.of(1L, 100L, 2L, 50L, 3L, 10L), Map.of(1L, "a", 2L, "b", 3L, "b"));
        ThreadCpu.Reading to = reading(
                Map.of(1L, 160L, 2L, 150L, 4L, 30L), // 3 ended in between: missing
                Map.of(1L, "a", 2L, "b", 4L, "a"));
        Map<String, Long> kinds = ThreadCpu.byKind(from, to);
        assertThat(List.copyOf(kinds.keySet())).containsExactly("b", "a");
        assertThat(kinds).containsEntry("b", 100L).containsEntry("a", 90L);
        assertThat(ThreadCpu.coverage(kinds, 200)).isEqualTo(0.95);
    }

    @Test
    void readsThisProcessThreadsOnLinux() {
        assumeTrue(Files.isDirectory(Path.of("/proc/self/task")), "Linux /proc");
        ThreadCpu.Reading before = ThreadCpu.read();
        long spin = System.nanoTime() + 50_000_000;
        long x = 0;
        while (System.nanoTime() < spin) x += x * 31 + 7;
        ThreadCpu.Reading after = ThreadCpu.read();
        assertThat(after.isEmpty()).isFalse();
        long total = ThreadCpu.byKind(before, after).values().stream()
                .mapToLong(Long::longValue)
                .sum();
        // this thread spun for 50 ms (less if the machine took the CPU away): some of it must show
        assertThat(total).as("spin %d", x).isGreaterThan(5_000_000L);
    }

    private static ThreadCpu.Reading reading(Map<Long, Long> nanos, Map<Long, String> kinds) {
        ThreadCpu.Reading r = new ThreadCpu.Reading();
        r.nanos.putAll(nanos);
        r.kinds.putAll(kinds);
        return r;
    }
}
