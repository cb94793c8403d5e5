package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** `bench job` in its tiny mode prints every RESULT line (figures are not checked: they mean nothing here). */
class JobBenchTest {

    @Test
    void printsEveryResultLine(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        String redis = "redis://127.0.0.1:" + System.getenv().getOrDefault("ROLLCOUNT_TEST_REDIS_PORT", "6379");
        new JobBench(JobBench.Size.TINY, redis, true, dir, out).run();
        String text = bytes.toString(StandardCharsets.UTF_8);
        List<String> results = Arrays.stream(text.split("\n")).filter(l -> l.startsWith("RESULT ")).toList();
        for (String w : List.of("uniform", "zipf", "viral")) {
            assertThat(results).as(text).anySatisfy(l -> assertThat(l).startsWith("RESULT job." + w + " ours_eps=")
                    .contains(" naive_eps=", " ratio_naive=", " sql_eps=", " ratio_sql=", " redis_eps=", " limit_eps=", " ratio_limit=",
                            " redis_cmds_per_event=", " redis_cpu_us_per_event=", " redis_floor_us_per_event="));
        }
        for (String b : List.of("job.zipf.breakdown ours_eps=", "job.viral_vs_uniform ", "job.source ", "job.heap peak_heap_mb=", "job.visibility ", "job.checkpoint duration_ms=",
                "job.state bytes_per_active_counter=", "job.kafka.zipf ours_eps=")) {
            assertThat(results).as(text).anySatisfy(l -> assertThat(l).startsWith("RESULT " + b));
        }
        assertThat(text).doesNotContain("=NaN", "=Infinity");
    }
}
