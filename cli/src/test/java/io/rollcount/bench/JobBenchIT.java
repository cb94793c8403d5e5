package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.support.RedisTestSupport;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** `bench job` in its tiny mode prints every RESULT line with every field (figures are not checked beyond having been measured: they mean nothing here). */
class JobBenchIT {

    /** The first RESULT line that starts with {@code RESULT <name>}. */
    private static String line(List<String> results, String name) {
        return results.stream()
                .filter(l -> l.startsWith("RESULT " + name))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no line RESULT " + name + " in " + results));
    }

    /** Some RESULT line starts with {@code RESULT <start>} and has every one of {@code fields}. */
    private static void assertHasLine(List<String> results, String text, String start, String... fields) {
        assertThat(results)
                .as(text)
                .anySatisfy(l -> assertThat(l).startsWith("RESULT " + start).contains(fields));
    }

    @Test
    void printsEveryResultLine(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        String redis = RedisTestSupport.SHARED_URL;
        Path policies = Path.of("..", "samples", "policies.yaml").toAbsolutePath();
        new JobBench(new BenchPlan(JobBench.Size.TINY, redis, dir, null, new BenchPlan.Full(true, policies)), out)
                .run();
        String text = bytes.toString(StandardCharsets.UTF_8);
        List<String> results = Arrays.stream(text.split("\n"))
                .filter(l -> l.startsWith("RESULT "))
                .toList();
        for (String w : List.of("uniform", "zipf", "viral")) {
            assertHasLine(
                    results,
                    text,
                    "job." + w + " ours_eps=",
                    " naive_eps=",
                    " ratio_naive=",
                    " sql_eps=",
                    " ratio_sql=",
                    " redis_eps=",
                    " limit_eps=",
                    " ratio_limit=",
                    " redis_cmds_per_event=",
                    " redis_cpu_us_per_event=",
                    " naive_redis_eps=",
                    " ratio_naive_redis=",
                    " sql_redis_eps=",
                    " ratio_sql_redis=",
                    " job_cpu_us_per_event=",
                    " redis_bytes_per_counter=",
                    " redis_floor_us_per_event=");
        }
        String kafka = line(results, "job.kafka.zipf ");
        assertThat(kafka)
                .contains(
                        " ratio_naive=",
                        " job_cpu_us_per_event=",
                        " redis_cpu_us_per_event=",
                        " broker_cpu_us_per_event=",
                        " all_cpu_us_per_event=",
                        " cores_per_million_eps=");
        String reads = line(results, "job.read_latency ");
        assertThat(reads)
                .matches(
                        "RESULT job\\.read_latency p50_ms=[0-9.]+ p99_ms=[0-9.]+ max_ms=[0-9.]+ reads=[1-9][0-9]* reader_stall_p50_ms=[0-9.]+ reader_stall_p99_ms=[0-9.]+ reader_stall_max_ms=[0-9.]+ .*");
        // the CPU figures were measured (a job that ran took CPU), not left at zero
        assertThat(results)
                .filteredOn(l -> l.startsWith("RESULT job.zipf "))
                .singleElement()
                .asString()
                .doesNotContain(" job_cpu_us_per_event=0.0 ", " redis_bytes_per_counter=0 ");
        // ours only (leading space): the textbook job's broker share of a 4,000-event run can be under
        // one 10 ms tick of /proc/<pid>/stat, so its naive_broker_cpu_us_per_event may read 0.0 here
        assertThat(kafka).doesNotContain(" broker_cpu_us_per_event=0.0 ", " job_cpu_us_per_event=0.0 ");
        for (String b : List.of(
                "job.zipf.breakdown ours_eps=",
                "job.read_latency p50_ms=",
                "job.viral_vs_uniform ",
                "job.source ",
                "job.heap peak_heap_mb=",
                "job.visibility ",
                "job.checkpoint duration_ms=",
                "job.state bytes_per_active_counter=",
                "job.kafka.zipf ours_eps=")) {
            assertThat(results).as(text).anySatisfy(l -> assertThat(l).startsWith("RESULT " + b));
        }
        // the zipf workload once more under samples/policies.yaml, beside the default
        for (String v : List.of("default", "policies")) {
            assertHasLine(
                    results,
                    text,
                    "job.policies variant=" + v + " ",
                    " eps=",
                    " job_cpu_us_per_event=",
                    " redis_cpu_us_per_event=",
                    " redis_keys_per_counter=",
                    " redis_bytes_per_counter=",
                    " state_bytes_per_active_counter=");
        }
        String savings = line(results, "job.policies.savings ");
        assertThat(savings)
                .contains(
                        " redis_keys_ratio=",
                        " redis_bytes_ratio=",
                        " redis_cpu_ratio=",
                        " state_ratio=",
                        " eps_ratio=");
        // fewer resolutions and uniques for three of the four namespaces: fewer keys per counter, whatever the noise
        double keys = Double.parseDouble(savings.replaceAll(".* redis_keys_ratio=([0-9.]+) .*", "$1"));
        assertThat(keys).as(savings).isPositive().isLessThan(1.0);
        // the job's CPU of the Redis-discarded zipf run, by kind of thread: the kinds account for it, and the
        // counting and deduplicating threads are among them
        if (java.nio.file.Files.isDirectory(Path.of("/proc/self/task"))) {
            String threads = line(results, "job.zipf.breakdown.threads ");
            assertThat(threads)
                    .contains(" total_us_per_event=", " count_per_count=", " drop_duplicates=", " source_events=");
            double covered = Double.parseDouble(threads.replaceAll(".* covered=([0-9.]+) .*", "$1"));
            assertThat(covered).as(threads).isBetween(0.5, 1.2);
        }
        assertThat(text).doesNotContain("=NaN", "=Infinity");
    }
    /**
     * `--only-ours zipf --with-floor`: ours and the plain-writes floor alternate, each with its Redis CPU, and
     * both count the same events (the floor writes the same keys, only without the guard).
     */
    @Test
    void profileWithFloorAlternatesOursAndFloor(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        String redis = RedisTestSupport.SHARED_URL;
        BenchPlan.Mode floor = new BenchPlan.OnlyOurs(io.rollcount.job.gen.EventGenerator.Workload.zipf, true, false);
        new JobBench(new BenchPlan(JobBench.Size.TINY, redis, dir, null, floor), out).run();
        String text = bytes.toString(StandardCharsets.UTF_8);
        List<String> runs = Arrays.stream(text.split("\n"))
                .map(String::strip)
                .filter(l -> l.startsWith("ours zipf ") || l.startsWith("floor zipf "))
                .toList();
        assertThat(runs)
                .as(text)
                .extracting(l -> l.substring(0, l.indexOf(' ')))
                .containsExactly("ours", "floor", "floor", "ours", "ours", "floor");
        assertThat(runs).as(text).allSatisfy(l -> assertThat(l).matches(".* Redis CPU [0-9.]+ us/event"));
        assertThat(runs.stream()
                        .map(l -> l.replaceAll(".* counted ([0-9,]+),.*", "$1"))
                        .distinct())
                .as(text)
                .singleElement();
        if (java.nio.file.Files.isDirectory(Path.of("/proc/self/task"))) {
            // each run's CPU by kind of thread, the floor's under a name of its own
            assertThat(text.split("\n"))
                    .filteredOn(l ->
                            l.startsWith("RESULT job.zipf.threads ") || l.startsWith("RESULT job.zipf.floor.threads "))
                    .hasSize(6)
                    .allSatisfy(l -> assertThat(l).contains(" covered=", " count_per_count="));
        }
    }

    /** The profiling options' combinations are checked when the plan is made, before anything runs. */
    @Test
    void refusesProfilingOptionsThatDoNotGoTogether(@TempDir Path dir) {
        for (List<String> args : List.of(
                List.of("--with-floor"),
                List.of("--only-ours", "zipf", "--with-floor", "--no-redis"),
                List.of("--no-redis"))) {
            java.io.StringWriter err = new java.io.StringWriter();
            List<String> all =
                    new java.util.ArrayList<>(List.of("job", "--tiny", "--no-kafka", "--work-dir", dir.toString()));
            all.addAll(args);
            int code = new picocli.CommandLine(new BenchCommand())
                    .setErr(new java.io.PrintWriter(err))
                    .execute(all.toArray(String[]::new));
            assertThat(code).as(args.toString()).isEqualTo(2);
            assertThat(err.toString())
                    .as(args.toString())
                    .contains(args.contains("--with-floor") ? "--with-floor needs" : "--no-redis needs");
        }
    }
}
