package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.support.RedisTestSupport;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code bench peers} end to end at a tiny size, against the real Redis and a broker in a child JVM: every
 * variant runs and prints its line, the variants that deduplicate leave exactly the input's sums in Redis, and
 * the ratio line is printed (the figures mean nothing at this size).
 */
class PeersBenchIT {

    @Test
    void everyVariantRunsAndTheExactOnesAreExact(@TempDir Path dir) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        PeersCommand.run(Workload.zipf, 3_000, 500, 1, 100_000, RedisTestSupport.SHARED_URL, dir.resolve("work"), out);
        String text = bytes.toString(StandardCharsets.UTF_8);
        List<String> results = Arrays.stream(text.split("\n"))
                .filter(l -> l.startsWith("RESULT "))
                .toList();
        String number = "[0-9]+(\\.[0-9]+)?";
        String fields = " workload=zipf events=3000 eps=" + number + " job_us=" + number + " redis_us=" + number
                + " broker_us=" + number + " all_us=" + number + " state_bytes_per_counter=-?[0-9]+ values_exact=";
        for (String exact : List.of("sql-exact", "ours-exact", "ours-full")) {
            assertThat(results)
                    .as(text)
                    .anySatisfy(l -> assertThat(l).matches("RESULT peers\\." + exact + fields + "true"));
        }
        assertThat(results).as(text).noneSatisfy(l -> assertThat(l).contains("values_exact=false"));
        assertThat(results)
                .as(text)
                .anySatisfy(l -> assertThat(l)
                        .matches("RESULT peers\\.ratio workload=zipf sql_vs_ours_exact=" + number
                                + " ours_full_vs_exact=" + number + " job_sql_vs_ours_exact=" + number
                                + " sql_vs_ours_exact_by_round=" + number + " ours_full_vs_exact_by_round=" + number));
        assertThat(results)
                .as(text)
                .anySatisfy(l -> assertThat(l).startsWith("RESULT peers.ours-full.threads total_us_per_event="))
                .anySatisfy(l -> assertThat(l).startsWith("RESULT peers.ours-exact.threads total_us_per_event="));
    }
}
