package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobSettings;
import io.rollcount.job.files.InputFiles;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.support.JobOnMiniClusterTest;
import io.rollcount.job.support.JobRuns;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.Deflater;
import java.util.zip.GZIPInputStream;
import java.util.zip.GZIPOutputStream;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

/**
 * Hostile and broken file input (issue 18, items 2 and 6) through the whole job on a MiniCluster against
 * the real Redis: one line in year 9999 among 300,000 costs one {@code future_ts} dead letter and makes
 * nothing late; a folder of broken files beside a good one counts the good one exactly, costs one
 * {@code unreadable_file} dead letter per broken file, skips what is not an input, and ends.
 */
class FileInputIT extends JobOnMiniClusterTest {
    private static final long START =
            io.rollcount.job.support.RecentTime.HOUR_START; // keys expire at window end + retention
    private static final long YEAR_9999 = 253_402_300_000_000L;

    private JobSettings options(Path input) {
        return JobRuns.fileSettings(input, redis, Duration.ofMillis(500), dir);
    }

    /** Runs the production file pipeline to its end; fails if it takes longer than two minutes (a FIFO read hangs). */
    private void run(JobSettings o) throws Exception {
        StreamExecutionEnvironment env = JobRuns.environment(o, 2, 2, null);
        JobRuns.buildFromFiles(env, o);
        JobClient job = env.executeAsync("file-input-it");
        try {
            job.getJobExecutionResult().get(2, TimeUnit.MINUTES);
        } catch (java.util.concurrent.TimeoutException e) {
            job.cancel().get(30, TimeUnit.SECONDS);
            throw new AssertionError("the run did not end in 2 minutes", e);
        }
    }

    /** Dead letters of the file sink by source: reason and detail. */
    private static Map<String, String[]> deadLetters(Path dlq) throws IOException {
        Map<String, String[]> out = new TreeMap<>();
        if (!Files.exists(dlq)) return out;
        Pattern p = Pattern.compile(
                "\"reason\":\"([a-z0-9_]+)\",\"detail\":\"((?:[^\"\\\\]|\\\\.)*)\".*\"source\":\"([^\"]+)\"");
        for (String line : Files.readAllLines(dlq, StandardCharsets.UTF_8)) {
            Matcher m = p.matcher(line);
            assertThat(m.find()).as(line).isTrue();
            assertThat(out.put(m.group(3), new String[] {m.group(1), m.group(2)}))
                    .as("dead letter twice: " + line)
                    .isNull();
        }
        return out;
    }

    private static Map<String, String> reasons(Map<String, String[]> deadLetters) {
        Map<String, String> out = new TreeMap<>();
        deadLetters.forEach((source, rd) -> out.put(source, rd[0]));
        return out;
    }

    // ------------------------------------------------------------------ item 2: one event far in the future

    @Test
    void oneLineInYear9999AmongThreeHundredThousandMakesNothingLate() throws Exception {
        Path file = dir.resolve("in").resolve("events.jsonl");
        Files.createDirectories(file.getParent());
        EventGenerator gen = new EventGenerator(7, EventGenerator.Workload.zipf, 3_000, 500, START, 1_000, 3_000, 0.05);
        GroundTruth truth = new GroundTruth();
        int outlierLine = 1_000;
        try (OutputStream out = new java.io.BufferedOutputStream(Files.newOutputStream(file), 1 << 16)) {
            for (int line = 1; line <= 300_000; line++) {
                if (line == outlierLine) {
                    out.write(("{\"counter\":\"post:outlier:likes\",\"ts\":" + YEAR_9999 + "}\n")
                            .getBytes(StandardCharsets.UTF_8));
                    continue;
                }
                Generated g = gen.next();
                truth.add(g);
                out.write((g.line() + "\n").getBytes(StandardCharsets.UTF_8));
            }
        }
        JobSettings o = options(file.getParent());
        long started = System.nanoTime();
        run(o);
        System.out.printf("FileInputIT year 9999: 300,000 lines in %.1f s%n", (System.nanoTime() - started) / 1e9);

        Map<String, String[]> dlq = deadLetters(Path.of(o.dlq));
        assertThat(reasons(dlq))
                .as("exactly one dead letter, the outlier, and nothing late")
                .isEqualTo(Map.of(file + "/" + outlierLine, "future_ts"));
        RedisTruth.assertEquals(redis, truth);
    }

    // ------------------------------------------------------------------ item 6: broken files beside a good one

    @Test
    void brokenFilesCostOneDeadLetterEachAndTheGoodOnesCountExactly() throws Exception {
        Path in = Files.createDirectories(dir.resolve("in"));
        EventGenerator gen =
                new EventGenerator(11, EventGenerator.Workload.zipf, 2_000, 300, START, 1_000, 2_000, 0.05);
        GroundTruth truth = new GroundTruth();
        writeGood(in.resolve("good.jsonl"), gen, truth, 20_000);
        // A folder named like a file is a folder: read recursively like any other.
        writeGood(Files.createDirectories(in.resolve("more.jsonl")).resolve("part-1.jsonl"), gen, truth, 2_000);

        // A gzip whose data decodes to valid-looking JSON (stored, not compressed) but whose CRC says it is corrupt.
        Path corrupt = in.resolve("corrupt.jsonl.gz");
        byte[] gz = gzip(garbageLines(100), Deflater.NO_COMPRESSION);
        int at = indexOf(gz, "garbage:50\"".getBytes(StandardCharsets.UTF_8)) + "garbage:".length();
        gz[at] = '9'; // garbage:50 -> garbage:90: still JSON, a different counter
        Files.write(corrupt, gz);
        assertThat(new String(decodeIgnoringCrc(gz), StandardCharsets.UTF_8)).contains("{\"counter\":\"garbage:90\"}");
        // A truncated gzip, and a zero-byte one.
        byte[] whole = gzip(garbageLines(5_000), Deflater.DEFAULT_COMPRESSION);
        Path truncated = in.resolve("truncated.jsonl.gz");
        Files.write(truncated, java.util.Arrays.copyOf(whole, whole.length / 2));
        Path empty = Files.write(in.resolve("empty.jsonl.gz"), new byte[0]);
        // An editor's lock file: a dangling hidden symbolic link.
        Files.createSymbolicLink(in.resolve(".#good.jsonl"), Path.of("nobody@host.12345"));
        // A FIFO named like an input: reading it would block for ever.
        Path fifo = in.resolve("x.jsonl");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString())
                        .inheritIO()
                        .start()
                        .waitFor())
                .isZero();
        // A file without read permission. As root, permissions do not stop a read: then it is an input like any other.
        Path locked = in.resolve("locked.jsonl");
        Files.writeString(locked, "{\"counter\":\"post:locked:likes\",\"ts\":" + START + "}\n");
        Files.setPosixFilePermissions(locked, PosixFilePermissions.fromString("---------"));
        boolean permissionsApply = !Files.isReadable(locked);
        if (!permissionsApply) {
            truth.add(new Generated("", "post:locked:likes", 1, START, null, null, false));
            System.out.println(
                    "FileInputIT: running as root, the file without read permission is read (its skip is not asserted)");
        }
        // A file that fails when it is read, whatever the user: a link to this process's memory (EIO at offset 0).
        Path failing = in.resolve("failing.jsonl");
        Files.createSymbolicLink(failing, Path.of("/proc/self/mem"));

        InputFiles.Scan scan = InputFiles.scan(in.toString());
        Map<String, String> skipped = new TreeMap<>();
        scan.skipped().forEach(s -> skipped.put(s.path(), s.reason()));
        Map<String, String> expectedSkipped = new TreeMap<>(Map.of(
                in.resolve(".#good.jsonl").toString(), "hidden (its name begins with '.')",
                fifo.toString(), "not a regular file (a FIFO, socket or device would block the run)"));
        if (permissionsApply) expectedSkipped.put(locked.toString(), "not readable (permission denied)");
        assertThat(skipped).isEqualTo(expectedSkipped);
        assertThat(scan.inputs())
                .extracting(i -> Path.of(i.path().toUri()).getFileName().toString())
                .containsExactlyElementsOf(
                        permissionsApply
                                ? List.of(
                                        "corrupt.jsonl.gz",
                                        "empty.jsonl.gz",
                                        "failing.jsonl",
                                        "good.jsonl",
                                        "part-1.jsonl",
                                        "truncated.jsonl.gz")
                                : List.of(
                                        "corrupt.jsonl.gz",
                                        "empty.jsonl.gz",
                                        "failing.jsonl",
                                        "good.jsonl",
                                        "locked.jsonl",
                                        "part-1.jsonl",
                                        "truncated.jsonl.gz"));

        JobSettings o = options(in);
        run(o);

        Map<String, String[]> dlq = deadLetters(Path.of(o.dlq));
        assertThat(reasons(dlq))
                .isEqualTo(Map.of(
                        corrupt.toString(), "unreadable_file",
                        truncated.toString(), "unreadable_file",
                        empty.toString(), "unreadable_file",
                        failing.toString(), "unreadable_file"));
        assertThat(dlq.get(corrupt.toString())[1])
                .contains(corrupt.toString())
                .contains("corrupt gzip")
                .contains("none of its lines count");
        assertThat(dlq.get(truncated.toString())[1]).contains("truncated");
        assertThat(dlq.get(empty.toString())[1]).contains("truncated or empty");
        assertThat(dlq.get(failing.toString())[1]).contains(failing.toString()).contains("none of its lines count");
        // Exactly the good files in Redis: no garbage counter, the watermark final only now that the run ended.
        RedisTruth.assertEquals(redis, truth);
    }

    private static void writeGood(Path file, EventGenerator gen, GroundTruth truth, int n) throws IOException {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++) {
            Generated g = gen.next();
            truth.add(g);
            sb.append(g.line()).append('\n');
        }
        Files.writeString(file, sb);
    }

    private static byte[] garbageLines(int n) {
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < n; i++)
            sb.append("{\"counter\":\"garbage:").append(i).append("\"}\n");
        return sb.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] gzip(byte[] data, int level) throws IOException {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream out = new GZIPOutputStream(bytes) {
            {
                def.setLevel(level);
            }
        }) {
            out.write(data);
        }
        return bytes.toByteArray();
    }

    /** What a reader that stops before the trailer decodes: the corrupt file's plausible lines. */
    private static byte[] decodeIgnoringCrc(byte[] gz) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        try (InputStream in = new GZIPInputStream(new java.io.ByteArrayInputStream(gz))) {
            byte[] buf = new byte[4096];
            int n;
            while ((n = in.read(buf)) > 0) out.write(buf, 0, n);
        } catch (java.util.zip.ZipException expected) {
            // "Corrupt GZIP trailer": the lines were all decoded by then
        }
        return out.toByteArray();
    }

    private static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) continue outer;
            }
            return i;
        }
        throw new AssertionError("not found");
    }
}
