package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.support.RedisTestSupport;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code bench growth --scenario tail} at a small size, against the real Redis and its own Kafka broker: a
 * RESULT bench.tail.threads line with the counting thread's CPU, then one RESULT bench.tail line with every field,
 * the figures measured (not their values: a size of seconds on a shared machine), and the rollups committed on
 * counter-rollups.
 */
class GrowthTailIT {
    private static final Pattern RESULT = Pattern.compile("RESULT bench\\.tail counters=50000 events=(\\d+)"
            + " job_us=([0-9.]+) rocksdb_reads_per_event=([0-9.]+) visits_per_counter_hour=([0-9.]+)"
            + " checkpoint_ms=(-?\\d+) checkpoint_bytes=(-?\\d+) redis_us=([0-9.]+) redis_bytes_per_counter=(-?\\d+)"
            + " redis=written");
    /** The job's CPU by kind of thread, before the size's figures; the counting thread is always there. */
    private static final Pattern THREADS = Pattern.compile(
            "^RESULT bench\\.tail\\.threads counters=50000 total_us_per_event=([0-9.]+) covered=[0-9.]+ .*"
                    + "\\bcount_per_count=([0-9.]+)");

    private static final Pattern ROLLUPS = Pattern.compile("rollups on counter-rollups: (\\d+) records");

    @Test
    void measuresTheTailWithRedisAndRollupsWritten(@TempDir Path dir) {
        String text = run(
                "growth",
                "--scenario",
                "tail",
                "--sizes",
                "50k",
                "--redis",
                RedisTestSupport.SHARED_URL,
                "--work-dir",
                dir.toString());
        List<String> results = Arrays.stream(text.split("\n"))
                .filter(l -> l.startsWith("RESULT "))
                .toList();
        assertThat(results).as(text).hasSize(2);
        Matcher threads = THREADS.matcher(results.get(0));
        assertThat(threads.find()).as(results.get(0)).isTrue();
        assertThat(Double.parseDouble(threads.group(1)))
                .as("total_us_per_event")
                .isPositive();
        assertThat(Double.parseDouble(threads.group(2))).as("count_per_count").isPositive();
        Matcher m = RESULT.matcher(results.get(1));
        assertThat(m.matches()).as(results.get(1)).isTrue();
        assertThat(Long.parseLong(m.group(1))).isEqualTo(new TailSchedule(50_000, 1.5, 2, 2).events());
        assertThat(Double.parseDouble(m.group(2))).as("job_us in %s", text).isPositive();
        assertThat(Double.parseDouble(m.group(3)))
                .as("rocksdb_reads_per_event in %s", text)
                .isPositive();
        assertThat(Double.parseDouble(m.group(4)))
                .as("visits_per_counter_hour in %s", text)
                .isPositive();
        // the source is held at the first hour's boundary until a checkpoint triggered after it completes
        assertThat(text).as(text).contains("the longest after the first hour's boundary #");
        assertThat(Long.parseLong(m.group(5))).as("checkpoint_ms in %s", text).isPositive();
        assertThat(Long.parseLong(m.group(6)))
                .as("checkpoint_bytes in %s", text)
                .isPositive();
        assertThat(Double.parseDouble(m.group(7))).as("redis_us in %s", text).isPositive();
        assertThat(Long.parseLong(m.group(8)))
                .as("redis_bytes_per_counter in %s", text)
                .isPositive();
        Matcher rollups = ROLLUPS.matcher(text);
        assertThat(rollups.find()).as(text).isTrue();
        assertThat(Long.parseLong(rollups.group(1))).as("rollups committed").isPositive();
    }

    /** The command's standard output (the bench prints to System.out). */
    private static String run(String... args) {
        PrintStream saved = System.out;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        System.setOut(new PrintStream(bytes, true, StandardCharsets.UTF_8));
        try {
            int code = new CommandLine(new BenchCommand()).execute(args);
            assertThat(code).as(bytes.toString(StandardCharsets.UTF_8)).isZero();
        } finally {
            System.setOut(saved);
        }
        return bytes.toString(StandardCharsets.UTF_8);
    }
}
