package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.rollcount.chaos.LocalCluster;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The reading examples of {@code examples/} (redis-py with Debian's {@code /usr/bin/python3}, and Jedis as a
 * single-file Java program), run against the real Redis after a bounded run of the bundled sample, print what
 * {@code ./rollcount query --json} and {@code top --json} print: the total, each 1m window's sum, the day's unique
 * users, and the namespace's 1h top-K list.
 */
class ReadingExamplesIT {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path dir;

    @Test
    void thePythonAndJavaExamplesReadWhatQueryAndTopPrint() throws Exception {
        Path root = LocalCluster.repoRoot();
        try (RedisTestSupport redis = new RedisTestSupport()) {
            String p = redis.prefix;
            CliRun run = CliRun.run(
                    "run",
                    "--input",
                    root.resolve("samples/events.jsonl.gz").toString(),
                    "--redis",
                    redis.url(),
                    "--redis.key-prefix",
                    p,
                    "--dlq",
                    dir.resolve("dlq.jsonl").toString(),
                    "--checkpoint.dir",
                    dir.resolve("checkpoints").toUri().toString());
            assertThat(run.code()).as(run.err()).isZero();

            JsonNode all = json(CliRun.run("top", "_all", "--json", "--redis", redis.url(), "--redis.key-prefix", p));
            String counter =
                    all.path("window").path("items").get(0).path("counter").asText();
            String ns = counter.substring(0, counter.indexOf(':'));
            JsonNode query = json(CliRun.run(
                    "query", counter, "--last", "1h", "--json", "--redis", redis.url(), "--redis.key-prefix", p));
            JsonNode top = json(CliRun.run("top", ns, "--json", "--redis", redis.url(), "--redis.key-prefix", p));

            JsonNode python = json(run(List.of(
                    "/usr/bin/python3",
                    root.resolve("examples/python/read_counts.py").toString(),
                    "--redis",
                    redis.url(),
                    "--prefix",
                    p,
                    counter)));
            JsonNode java = json(run(List.of(
                    Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                    "-cp",
                    System.getProperty("java.class.path"),
                    root.resolve("examples/java/ReadCounts.java").toString(),
                    redis.url(),
                    p,
                    counter)));
            for (JsonNode example : List.of(python, java)) assertSameAs(example, query, top);
        }
    }

    /** The example's values are those of query --json and top --json. */
    private static void assertSameAs(JsonNode example, JsonNode query, JsonNode top) {
        assertThat(example.path("total").asLong()).isEqualTo(query.path("total").asLong());
        Map<Long, JsonNode> bySart = new HashMap<>();
        for (JsonNode w : query.path("windows")) bySart.put(w.path("start").asLong(), w.path("sum"));
        int compared = 0;
        long counted = 0;
        for (JsonNode w : example.path("windows")) {
            JsonNode expected = bySart.get(w.path("start").asLong());
            if (expected == null) continue; // a minute boundary passed between the two reads
            assertThat(w.path("sum").isNull()).isEqualTo(expected.isNull());
            if (!expected.isNull()) assertThat(w.path("sum").asLong()).isEqualTo(expected.asLong());
            compared++;
            counted += w.path("sum").asLong();
        }
        assertThat(compared).as("windows compared").isGreaterThanOrEqualTo(59);
        assertThat(counted).as("events of the last hour").isPositive();
        assertThat(example.path("uniques_day").asLong())
                .isEqualTo(query.path("uniques").path("day").asLong())
                .isPositive();
        List<String> expectedTop = new ArrayList<>();
        for (JsonNode i : top.path("window").path("items"))
            expectedTop.add(i.path("counter").asText() + "=" + i.path("score").asDouble());
        List<String> got = new ArrayList<>();
        for (JsonNode i : example.path("top"))
            got.add(i.path("counter").asText() + "=" + i.path("score").asDouble());
        assertThat(got).isNotEmpty().isEqualTo(expectedTop);
    }

    private static JsonNode json(CliRun r) throws Exception {
        assertThat(r.code()).as(r.err()).isZero();
        return JSON.readTree(r.out());
    }

    private static JsonNode json(String out) throws Exception {
        return JSON.readTree(out);
    }

    private static String run(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(120, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(String.join(" ", command) + ":\n" + out).isZero();
        return out.strip().lines().reduce((a, b) -> b).orElse("");
    }
}
