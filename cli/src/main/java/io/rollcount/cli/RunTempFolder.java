package io.rollcount.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * The per-run temporary folder of {@code ./rollcount}: the script points {@code java.io.tmpdir} at
 * {@code .rollcount/tmp/run-<pid>} (its own process id, which {@code exec} keeps), where the MiniCluster,
 * RocksDB and the in-process Kafka broker put 20+ MB a run. It is deleted when the JVM exits (a normal
 * end, a failure or Ctrl-C, by a shutdown hook); folders of runs that did not get to clean up (kill -9,
 * power loss) are deleted by the next run, once no process of their id is alive. Before this each run
 * left about 22 MB behind in {@code .rollcount/tmp}.
 */
final class RunTempFolder {
    static final String PREFIX = "run-";

    private RunTempFolder() {}

    /**
     * When {@code java.io.tmpdir} is this process's {@code run-<pid>} folder: removes the folders of dead
     * runs beside it and deletes this one at exit. Does nothing for any other temporary folder.
     */
    static void manage() {
        Path own = Path.of(System.getProperty("java.io.tmpdir")).toAbsolutePath();
        if (!own.getFileName()
                .toString()
                .equals(PREFIX + ProcessHandle.current().pid())) return;
        try {
            Files.createDirectories(own);
        } catch (IOException e) {
            return;
        }
        removeStale(own.getParent());
        Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteWhileInUse(own), "rollcount-tmp-cleanup"));
    }

    /**
     * At exit Flink's and RocksDB's own shutdown hooks run at the same time and may still write into the
     * folder: delete again until it stays gone (at most about 10 s).
     */
    static void deleteWhileInUse(Path dir) {
        for (int i = 0; i < 50 && Files.exists(dir); i++) {
            deleteQuietly(dir);
            if (!Files.exists(dir)) return;
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Deletes every {@code run-<pid>} folder under {@code root} whose process is gone; returns how many. */
    static int removeStale(Path root) {
        int removed = 0;
        try (Stream<Path> children = Files.list(root)) {
            for (Path child : (Iterable<Path>) children::iterator) {
                String name = child.getFileName().toString();
                if (!name.startsWith(PREFIX)) continue;
                long pid;
                try {
                    pid = Long.parseLong(name.substring(PREFIX.length()));
                } catch (NumberFormatException e) {
                    continue;
                }
                if (pid == ProcessHandle.current().pid()
                        || ProcessHandle.of(pid).map(ProcessHandle::isAlive).orElse(false)) continue;
                deleteQuietly(child);
                removed++;
            }
        } catch (IOException e) {
            // nothing to clean, or no access: never a reason not to run
        }
        return removed;
    }

    static void deleteQuietly(Path dir) {
        if (!Files.exists(dir)) return;
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // still in use or gone already: best effort
                }
            });
        } catch (IOException | RuntimeException e) {
            // best effort
        }
    }
}
