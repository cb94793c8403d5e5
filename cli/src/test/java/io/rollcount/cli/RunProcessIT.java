package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.support.RedisTestSupport;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./rollcount run} as a process of its own, started the way the {@code rollcount} script starts it
 * ({@code exec java -Djava.io.tmpdir=<root>/run-$$ ...} with the CLI's log configuration): issue 18 items
 * 10c (each run left about 22 MB in {@code .rollcount/tmp}) and 8b (a full checkpoint disk ended in a
 * message that never said "No space left").
 */
class RunProcessIT {
    @TempDir
    Path dir;

    @Test
    void aRunLeavesNoTemporaryFilesAndRemovesThoseOfDeadRuns() throws Exception {
        try (RedisTestSupport redis = new RedisTestSupport()) {
            Path root = dir.resolve("tmp-root");
            long deadPid = 999_999_999L;
            assumeTrue(ProcessHandle.of(deadPid).isEmpty());
            Path stale = Files.createDirectories(root.resolve("run-" + deadPid).resolve("flink-rocksdb"));
            Files.writeString(stale.resolve("leftover"), "x".repeat(1000));
            Path input = writeEvents(dir.resolve("in.jsonl"), 3_000, 100);

            Process p = startRun(root, input, redis, redis.prefix, "dlq.jsonl");
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
            String err = Files.readString(dir.resolve("err.txt"));
            assertThat(p.exitValue()).as("stderr: %s", err).isZero();
            assertThat(redis.jedis.get(new RedisKeys(redis.prefix).total("c:7")))
                    .isEqualTo("30");
            try (Stream<Path> left = Files.list(root)) {
                assertThat(left.toList())
                        .as("what the run left in its temporary folder root")
                        .isEmpty();
            }

            // Stopped midway (SIGTERM, as Ctrl-C): the shutdown hook deletes the run's temporary folder.
            // big enough to outlast the first progress lines: a million events now take the job about 6 s
            Path big = writeEvents(dir.resolve("big.jsonl"), 8_000_000, 1_000);
            Process q = startRun(root, big, redis, redis.prefix + "b", "dlq-b.jsonl");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (q.isAlive()
                    && System.nanoTime() < deadline
                    && !Files.readString(dir.resolve("err.txt")).contains("events read")) Thread.sleep(200);
            assertThat(q.isAlive()).as("still running when stopped").isTrue();
            q.destroy();
            assertThat(q.waitFor(60, TimeUnit.SECONDS)).isTrue();
            try (Stream<Path> left = Files.list(root)) {
                assertThat(left.toList()).as("temporary folders after SIGTERM").isEmpty();
            } finally {
                RedisTestSupport.deleteAll(redis.jedis, redis.prefix + "b");
            }
        }
    }

    /** A checkpoint folder on a 256 KiB tmpfs: each checkpoint failure's cause is on stderr, and the run's last line names it. */
    @Test
    void aFullCheckpointDiskSaysNoSpaceLeft() throws Exception {
        Path disk = Files.createDirectories(dir.resolve("small-disk"));
        Process mount = new ProcessBuilder("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", disk.toString())
                .redirectErrorStream(true)
                .start();
        boolean mounted = mount.waitFor(20, TimeUnit.SECONDS) && mount.exitValue() == 0;
        assumeTrue(
                mounted,
                "a tiny tmpfs is the way to fill a disk for real, and mount needs root: "
                        + new String(mount.getInputStream().readAllBytes()));
        try (RedisTestSupport redis = new RedisTestSupport()) {
            Path root = dir.resolve("tmp-root");
            Path input = writeEvents(dir.resolve("in.jsonl"), 400_000, 200_000);
            Process p = startRun(
                    root,
                    input,
                    redis,
                    redis.prefix,
                    "dlq.jsonl",
                    "--checkpoint.interval",
                    "1s",
                    "--checkpoint.dir",
                    disk.toUri().toString());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(100);
            String err = "";
            while (System.nanoTime() < deadline && !err.contains("No space left on device") && p.isAlive()) {
                Thread.sleep(500);
                err = Files.readString(dir.resolve("err.txt"));
            }
            assertThat(err).contains("checkpoint failed: ").contains("No space left on device");
            String line = err.lines()
                    .filter(l -> l.contains("No space left on device"))
                    .findFirst()
                    .orElseThrow();
            assertThat(line).contains("checkpoint failed: ").contains("could not be completed");
            // Flink gives up (tolerable checkpoint failures, then its restarts): the last line names the cause too.
            if (p.waitFor(150, TimeUnit.SECONDS)) {
                err = Files.readString(dir.resolve("err.txt")).strip();
                // the run's last line of its own (a log line of the JVM's shutdown may still follow it)
                String last = err.lines()
                        .filter(l -> l.startsWith("rollcount: "))
                        .reduce((a, b) -> b)
                        .orElse("");
                assertThat(p.exitValue()).isEqualTo(1);
                assertThat(last)
                        .startsWith("rollcount: the job failed: ")
                        .contains(
                                "Exceeded checkpoint tolerable failure threshold",
                                "The last failed checkpoint's cause: java.io.IOException: No space left on device.",
                                "checkpoints go to " + disk.toUri());
            } else {
                // Ctrl-C / kill: the shutdown hook deletes the run's temporary folder.
                p.destroy();
                assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
                throw new AssertionError("the run did not end within 150 s of its checkpoints failing");
            }
            try (Stream<Path> left = Files.list(root)) {
                assertThat(left.toList())
                        .as("temporary folders after a failed run")
                        .isEmpty();
            }
        } finally {
            new ProcessBuilder("umount", "-l", disk.toString()).start().waitFor(20, TimeUnit.SECONDS);
        }
    }

    /** One line per event: counters c:0 .. c:(counters-1) in turn, delta 1. */
    private static Path writeEvents(Path file, int events, int counters) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            for (int i = 0; i < events; i++) w.write("{\"counter\":\"c:" + (i % counters) + "\",\"delta\":1}\n");
        }
        return file;
    }

    /**
     * {@code run} of {@code input} at parallelism 1 into {@code prefix} of {@code redis}, dead letters to
     * {@code dir/dlq}, with {@code more} options, started as the rollcount script starts it ({@link #start}).
     */
    private Process startRun(
            Path tmpRoot, Path input, RedisTestSupport redis, String prefix, String dlq, String... more)
            throws IOException {
        List<String> args = new ArrayList<>(List.of(
                "run",
                "--input",
                input.toString(),
                "--redis",
                redis.url(),
                "--redis.key-prefix",
                prefix,
                "--parallelism",
                "1",
                "--dlq",
                dir.resolve(dlq).toString()));
        args.addAll(List.of(more));
        return start(tmpRoot, args.toArray(String[]::new));
    }

    /** As the rollcount script: {@code exec java -Djava.io.tmpdir=<root>/run-$$ ... io.rollcount.cli.Main <args>}. */
    private Process start(Path tmpRoot, String... args) throws IOException {
        Files.createDirectories(tmpRoot);
        Path log4j = Path.of("src/main/resources/log4j2-cli.properties").toAbsolutePath();
        List<String> command = new ArrayList<>(List.of(
                "bash",
                "-c",
                "mkdir -p \"$0/run-$$\" && exec java -Xmx1g -Djava.io.tmpdir=\"$0/run-$$\" -Dlog4j.configurationFile=\"$1\" -cp \"$2\" io.rollcount.cli.Main \"${@:3}\"",
                tmpRoot.toString(),
                log4j.toString(),
                System.getProperty("java.class.path")));
        command.addAll(List.of(args));
        return new ProcessBuilder(command)
                .directory(dir.toFile())
                .redirectOutput(dir.resolve("out.txt").toFile())
                .redirectError(dir.resolve("err.txt").toFile())
                .start();
    }
}
