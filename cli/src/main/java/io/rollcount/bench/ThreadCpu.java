package io.rollcount.bench;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * CPU time of this JVM's threads by kind, from Linux's {@code /proc/self/task/<tid>/schedstat} (nanoseconds
 * on a CPU, every thread: Flink's task threads, RocksDB's native flush and compaction threads, GC and JIT
 * compiler threads), so that a run's job CPU per event ({@link JobCpu}) can be told apart by where it goes.
 * A thread's kind is its kernel name ({@code comm}, the first 15 bytes of the Java thread's name, e.g.
 * {@code count-per-count} for the chain that starts with {@code count-per-counter}) with digits and
 * trailing punctuation dropped, so that subtasks and pool members add up ({@code GC Thread#0},
 * {@code GC Thread#1}: {@code gc_thread}; see {@link #kind}).
 *
 * <p>A thread that ends between two readings is missing from their difference, so the kinds add up to a
 * little less than the process's CPU time ({@link #coverage} says how much). Where {@code /proc} is not
 * there (not Linux), {@link #read} is empty and nothing is printed.
 */
final class ThreadCpu {
    private ThreadCpu() {}

    private static final Path TASKS = Path.of("/proc/self/task");

    /** One reading: CPU ns by thread id, and each thread's kind. */
    static final class Reading {
        final Map<Long, Long> nanos = new HashMap<>();
        final Map<Long, String> kinds = new HashMap<>();

        boolean isEmpty() {
            return nanos.isEmpty();
        }
    }

    /** Every thread of this process now; empty where /proc cannot be read. */
    static Reading read() {
        Reading r = new Reading();
        if (!Files.isDirectory(TASKS)) return r;
        try (DirectoryStream<Path> tasks = Files.newDirectoryStream(TASKS)) {
            for (Path task : tasks) {
                try {
                    long tid = Long.parseLong(task.getFileName().toString());
                    String stat = Files.readString(task.resolve("schedstat"), StandardCharsets.US_ASCII);
                    long ns = Long.parseLong(stat.substring(0, stat.indexOf(' ')));
                    r.nanos.put(tid, ns);
                    r.kinds.put(tid, kind(Files.readString(task.resolve("comm"), StandardCharsets.UTF_8)));
                } catch (IOException | RuntimeException gone) {
                    // the thread ended while being read
                }
            }
        } catch (IOException e) {
            return new Reading();
        }
        return r;
    }

    /**
     * A thread's kind from its kernel name: lower case, digits and punctuation runs to '_', trimmed; HotSpot's
     * C1 and C2 compiler threads are {@code jit_compiler}.
     */
    static String kind(String comm) {
        if (comm.startsWith("C1 Compiler") || comm.startsWith("C2 Compiler")) return "jit_compiler";
        String k = comm.strip()
                .toLowerCase(Locale.ROOT)
                .replaceAll("[0-9]+", "")
                .replaceAll("[^a-z]+", "_")
                .replaceAll("^_+|_+$", "");
        return k.isEmpty() ? "unnamed" : k;
    }

    /**
     * CPU ns per kind from {@code from} to {@code to}, largest first: threads in both readings count their
     * difference, threads born between count all of theirs.
     */
    static Map<String, Long> byKind(Reading from, Reading to) {
        Map<String, Long> sums = new HashMap<>();
        for (Map.Entry<Long, Long> e : to.nanos.entrySet()) {
            long before = from.nanos.getOrDefault(e.getKey(), 0L);
            long d = e.getValue() - before;
            if (d > 0) sums.merge(to.kinds.get(e.getKey()), d, Long::sum);
        }
        LinkedHashMap<String, Long> sorted = new LinkedHashMap<>();
        sums.entrySet().stream()
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .forEachOrdered(e -> sorted.put(e.getKey(), e.getValue()));
        return sorted;
    }

    /** The share of {@code processNanos} that the kinds account for (threads that ended in between are not). */
    static double coverage(Map<String, Long> byKind, long processNanos) {
        long sum = byKind.values().stream().mapToLong(Long::longValue).sum();
        return processNanos <= 0 ? Double.NaN : sum / (double) processNanos;
    }
}
