package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code ./rollcount demo} in this JVM: a short run against the real Redis with a test key prefix. */
class DemoCommandIT {

    /** Names of the threads a Kafka broker (and its clients) run. */
    private static final List<String> BROKER_THREADS = List.of(
            "kafka",
            "raft",
            "broker-",
            "controller-",
            "ExpirationReaper",
            "LogDirFailureHandler",
            "data-plane",
            "quorum",
            "rollcount-demo");

    private static Set<String> brokerThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .map(Thread::getName)
                .filter(n -> BROKER_THREADS.stream().anyMatch(n::contains))
                .collect(Collectors.toSet());
    }

    @Test
    void runsTheWholeSystemAndStopsCleanly() throws Exception {
        Set<String> before = brokerThreads();
        try (RedisTestSupport redis = new RedisTestSupport()) {
            DemoCommand demo = new DemoCommand();
            CliRun run = CliRun.of(
                    demo,
                    "--duration",
                    "15s",
                    "--rate",
                    "400",
                    "--counters",
                    "1000",
                    "--users",
                    "100",
                    "--checkpoint.interval",
                    "3s",
                    "--redis",
                    redis.url(),
                    "--redis.key-prefix",
                    redis.prefix);
            String text = run.out();
            System.out.println(text);
            System.out.println(run.err());
            assertThat(run.code()).as("exit code; stderr: %s", run.err()).isZero();

            // The view printed one line a second (stdout is not a terminal here), and the summary.
            long viewLines = text.lines()
                    .filter(l -> l.startsWith("rollcount demo: ") && l.contains(" in ") && l.contains(" out "))
                    .count();
            assertThat(viewLines).isGreaterThanOrEqualTo(10);
            assertThat(text).contains("rollcount demo: stopped after", "steady events/s", "checkpoints");

            // The job read what the generator produced, and checkpointed.
            DemoCommand.Summary s = demo.summary;
            assertThat(s.produced()).isGreaterThan(3_000);
            assertThat(s.read()).isGreaterThan(s.produced() / 2).isLessThanOrEqualTo(s.produced());
            assertThat(s.checkpointMillis()).isNotEmpty();

            // Totals of the hot counters are in Redis under the test prefix, and the 5 s windows too.
            EventGenerator workload = new EventGenerator(42, EventGenerator.Workload.viral, 1000, 100, 0, 400, 0, 0.02);
            RedisKeys keys = new RedisKeys(redis.prefix);
            String hottest = workload.counterId(0);
            assertThat(redis.jedis.get(keys.total(hottest))).isNotNull();
            assertThat(Long.parseLong(redis.jedis.get(keys.total(hottest)))).isGreaterThan(s.read() / 10);
            long withTotals = DemoView.hotCounters(redis.jedis, keys, workload).stream()
                    .filter(h -> h.total() != null)
                    .count();
            assertThat(withTotals).isGreaterThanOrEqualTo(5);
            assertThat(redis.keys())
                    .anyMatch(k -> k.startsWith(redis.prefix + ":{" + hottest + "}:" + Resolution.S5.label + ":"));

            // Everything stopped: the temporary folder is gone, and no thread of the broker or generator is left.
            assertThat(demo.workDir).isNotNull();
            assertThat(Files.exists(demo.workDir)).isFalse();
            long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            Set<String> left = brokerThreads();
            left.removeAll(before);
            while (!left.isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(200);
                left = brokerThreads();
                left.removeAll(before);
            }
            assertThat(left).as("threads left after the demo").isEmpty();
        }
        // RedisTestSupport.close() deleted the test prefix's keys.
        try (RedisTestSupport check = new RedisTestSupport()) {
            assertThat(check.keys()).isEmpty();
        }
    }

    @Test
    void saysInOneLineWhatToDoWhenRedisIsNotThere() {
        DemoCommand demo = new DemoCommand();
        // metrics off: a note about a busy default metrics port (another process on 9249) would be a second line
        CliRun run = CliRun.of(demo, "--duration", "5s", "--redis", "redis://127.0.0.1:1", "--metrics.port", "0");
        assertThat(run.code()).isEqualTo(1);
        assertThat(run.err().strip().lines().count()).isEqualTo(1);
        assertThat(run.err()).contains("cannot reach Redis", "start redis-server", "ROLLCOUNT_REDIS");
        assertThat(demo.workDir).as("nothing started").isNull();
        assertThat(run.out()).isEmpty();
    }

    @Test
    void helpListsTheOptionsWithDefaults() {
        String usage = new CommandLine(new DemoCommand()).getUsageMessage().replaceAll("\\s+", " ");
        assertThat(usage)
                .contains(
                        "--duration", "default: 60s", "--rate", "default: 20000", "--redis.key-prefix", "default: rc");
    }

    @Test
    void eventTimeIsReplacedByTheWallClock() {
        assertThat(DemoGenerator.withTime("{\"counter\":\"a\",\"ts\":123,\"user\":\"u1\"}", 1764000000000L))
                .isEqualTo("{\"counter\":\"a\",\"ts\":1764000000000,\"user\":\"u1\"}");
        assertThat(DemoGenerator.withTime("{\"counter\":\"a\"}", 5)).isEqualTo("{\"counter\":\"a\"}");
    }

    @Test
    void steadyRateSkipsTheWarmUp() {
        long s = 1_000_000_000L;
        // 1 s ticks: slow for 5 s, then 1000 events a second.
        List<long[]> samples = new java.util.ArrayList<>();
        long read = 0;
        for (int i = 1; i <= 30; i++) {
            read += i <= 5 ? 10 : 1000;
            samples.add(new long[] {i * s, 0, read});
        }
        assertThat(DemoRun.steady(samples, Duration.ofSeconds(30))).isBetween(999.0, 1001.0);
    }
}
