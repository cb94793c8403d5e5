package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.support.RedisTestSupport;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * {@code ./rollcount run --metrics.port}: Flink's Prometheus reporter on the MiniCluster serves Rollcount's
 * metrics (names {@code ..._rollcount_<name>}, dead letters labelled by reason) while the job runs; a port
 * another process holds is refused with exit code 2 and one line naming it (by {@code run}, and by
 * {@code demo} when the port was given).
 */
class RunCommandMetricsIT {
    @TempDir
    Path dir;

    @Test
    void aMetricsPortInUseIsRefusedWithOneLineNamingIt() throws Exception {
        try (ServerSocket taken = new ServerSocket(0)) {
            int port = taken.getLocalPort();
            Path input = dir.resolve("in.jsonl");
            Files.writeString(input, "{\"counter\":\"a:b\",\"ts\":1000}\n");
            CliRun run = CliRun.of(
                    new RunCommand(),
                    "--input",
                    input.toString(),
                    "--metrics.port",
                    Integer.toString(port),
                    "--dlq",
                    dir.resolve("dlq.jsonl").toString(),
                    "--checkpoint.dir",
                    dir.resolve("chk").toUri().toString());
            assertThat(run.code()).isEqualTo(RunCommand.EXIT_REFUSED);
            assertThat(run.err().strip())
                    .isEqualTo("rollcount: --metrics.port " + port
                            + ": the port is in use (another process listens on it); choose another port");
        }
    }

    @Test
    void theDemoRefusesAnExplicitMetricsPortInUseBeforeStartingAnything() throws Exception {
        try (ServerSocket taken = new ServerSocket(0)) {
            int port = taken.getLocalPort();
            CliRun demo = CliRun.of(
                    new DemoCommand(),
                    "--duration",
                    "5s",
                    "--metrics.port",
                    Integer.toString(port),
                    "--redis",
                    "redis://127.0.0.1:1");
            assertThat(demo.code()).isEqualTo(2);
            assertThat(demo.err().strip())
                    .isEqualTo("rollcount demo: --metrics.port " + port
                            + ": the port is in use (another process listens on it); choose another port");
        }
    }

    @Test
    void rollcountMetricsAreServedForPrometheusWhileTheJobRuns() throws Exception {
        int port;
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        Path input = dir.resolve("in.jsonl");
        long now = System.currentTimeMillis();
        StringBuilder lines = new StringBuilder();
        for (int i = 0; i < 150_000; i++) {
            lines.append("{\"counter\":\"m:c")
                    .append(i % 5000)
                    .append("\",\"ts\":")
                    .append(now - 600_000 + i)
                    .append(",\"event_id\":\"e")
                    .append(i % 120_000)
                    .append("\"}\n");
            if (i % 1000 == 0) lines.append("not json\n");
        }
        Files.writeString(input, lines);

        try (RedisTestSupport redis = new RedisTestSupport()) {
            StringWriter err = new StringWriter();
            RunCommand run = new RunCommand();
            CommandLine cli = new CommandLine(run);
            cli.setErr(new PrintWriter(err, true));
            cli.setOut(new PrintWriter(new StringWriter(), true));
            CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() -> cli.execute(
                    "--input",
                    input.toString(),
                    "--metrics.port",
                    Integer.toString(port),
                    "--redis",
                    redis.url(),
                    "--redis.key-prefix",
                    redis.prefix,
                    "--parallelism",
                    "1",
                    "--dlq",
                    dir.resolve("dlq.jsonl").toString(),
                    "--checkpoint.dir",
                    dir.resolve("chk").toUri().toString()));

            // Scrape as Prometheus does until every Rollcount metric shows, counted events and a dead letter's
            // reason among them (or the run ends): the reason's counter exists only from its first dead letter on.
            HttpClient http = HttpClient.newBuilder()
                    .connectTimeout(Duration.ofSeconds(2))
                    .build();
            AtomicReference<String> last = new AtomicReference<>("");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!exit.isDone() && System.nanoTime() < deadline) {
                try {
                    HttpResponse<String> r = http.send(
                            HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                                    .timeout(Duration.ofSeconds(5))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
                    if (r.statusCode() == 200 && r.body().contains("rollcount_")) {
                        last.set(r.body());
                        if (missing(r.body()).isEmpty()
                                && r.body().matches("(?s).*rollcount_eventsCounted\\{[^}]*} [1-9].*")
                                && INVALID_JSON.matcher(r.body()).find()) break;
                    }
                } catch (java.io.IOException notYet) {
                    // the MiniCluster's reporter is not up yet
                }
                Thread.sleep(200);
            }
            assertThat(exit.get(3, TimeUnit.MINUTES))
                    .as("run exit; stderr: %s", err)
                    .isZero();
            assertThat(err.toString()).contains("Prometheus metrics at http://127.0.0.1:" + port + "/metrics");
            String body = last.get();
            assertThat(body)
                    .as("a scrape while the job ran showed counted events")
                    .isNotEmpty();
            assertThat(missing(body))
                    .as("Rollcount metrics missing from the last scrape while the job ran")
                    .isEmpty();
            assertThat(body).as("counted events").containsPattern("rollcount_eventsCounted\\{[^}]*} [1-9]");
            assertThat(body).as("dead letters labelled by reason").containsPattern(INVALID_JSON);
            assertThat(body)
                    .as("latency quantiles")
                    .containsPattern("rollcount_redisWriteLatencyMs\\{.*quantile=\"0\\.99\"");
            RedisTestSupport.deleteAll(redis.jedis, redis.prefix);
        }
    }

    /** The dead letters of reason invalid_json, as the reporter labels them. */
    private static final java.util.regex.Pattern INVALID_JSON = java.util.regex.Pattern.compile(
            "(?m)^flink_taskmanager_job_task_operator_rollcount_reason_deadLetters\\{.*reason=\"invalid_json\"");

    private static final String[] NAMES = {
        "eventsRead",
        "eventsCounted",
        "eventsDeduplicated",
        "eventsLate",
        "partialSums",
        "redisWriteLatencyMs",
        "redisRetries",
        "redisCommandsSent",
        "redisKeysWritten",
        "redisWritesInFlight",
        "trendingListAgeMs",
        "eventTimeLagMs",
        "reason_deadLetters"
    };

    /** The Rollcount metrics without a sample in a Prometheus scrape. */
    private static java.util.List<String> missing(String body) {
        return java.util.Arrays.stream(NAMES)
                .filter(n -> !java.util.regex.Pattern.compile(
                                "(?m)^flink_taskmanager_job_task_operator_rollcount_" + n + "[{ ]")
                        .matcher(body)
                        .find())
                .toList();
    }
}
