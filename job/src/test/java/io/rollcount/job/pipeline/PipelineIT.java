package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.files.DeadLetterFileSink;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.support.FailOnceSink;
import io.rollcount.job.support.JobOnMiniClusterTest;
import io.rollcount.job.support.JobRuns;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Pattern;
import java.util.zip.GZIPOutputStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

/**
 * The exact pipeline end to end on a MiniCluster with RocksDB and checkpoints, against the real Redis:
 * a skewed stream with duplicates, negative deltas, out-of-order events and every kind of bad line, read
 * from a .jsonl and a .jsonl.gz file. Every total and window sum in Redis must equal the ground truth the
 * test computes itself, no other key may exist, and every bad line must be in the dead-letter file.
 */
class PipelineIT extends JobOnMiniClusterTest {
    private static final int EVENTS = 120_000;
    private static final long START =
            io.rollcount.job.support.RecentTime.HOUR_START; // keys expire at window end + retention

    private record Input(GroundTruth truth, Map<String, String> badSources) {}

    /** Writes the stream into two files (one gzipped) and returns the ground truth and the bad lines' reasons. */
    private Input writeInput(double negativeShare) throws IOException {
        EventGenerator gen =
                new EventGenerator(42, EventGenerator.Workload.zipf, 3_000, 500, START, 1_000, 3_000, negativeShare);
        GroundTruth truth = new GroundTruth();
        Map<String, String> bad = new HashMap<>();
        String[][] badLines = EventGenerator.badLines(START);
        Path plain = dir.resolve("a.jsonl");
        Path gz = dir.resolve("b.jsonl.gz");
        try (OutputStream a = Files.newOutputStream(plain);
                OutputStream b = new GZIPOutputStream(Files.newOutputStream(gz))) {
            int[] lines = {0, 0};
            for (int i = 0; i < EVENTS; i++) {
                int f = i % 2;
                OutputStream out = f == 0 ? a : b;
                Path file = f == 0 ? plain : gz;
                if (i % 4_000 == 7) {
                    String[] line = badLines[(i / 4_000) % badLines.length];
                    out.write((line[0] + "\n").getBytes(StandardCharsets.UTF_8));
                    bad.put(file + "/" + (++lines[f]), line[1]);
                    continue;
                }
                if (i == 50_001) {
                    out.write(EventGenerator.invalidUtf8Line());
                    out.write('\n');
                    bad.put(file + "/" + (++lines[f]), "invalid_utf8");
                    continue;
                }
                Generated g = gen.next();
                truth.add(g);
                out.write((g.line() + (i % 10 == 3 ? "\r\n" : "\n")).getBytes(StandardCharsets.UTF_8));
                lines[f]++;
            }
        }
        return new Input(truth, bad);
    }

    private JobSettings options() {
        return JobRuns.fileSettings(dir, redis, Duration.ofMillis(300), dir);
    }

    private StreamExecutionEnvironment environment(JobSettings o) {
        return JobRuns.environment(o, 2, 3, null);
    }

    @Test
    void boundedRunLeavesExactlyTheGroundTruthInRedis() throws Exception {
        Input input = writeInput(0.05);
        JobSettings o = options();
        StreamExecutionEnvironment env = environment(o);
        JobRuns.buildFromFiles(env, o);
        env.execute("pipeline-it");

        assertRedisEqualsTruth(input.truth());
        assertDeadLetters(Path.of(o.dlq), input.badSources());
        assertThat(input.truth().duplicates).as("the stream has redeliveries").isGreaterThan(1000);
        assertThat(input.truth().negativeCounters)
                .as("the stream has decrements")
                .isNotEmpty();
    }

    /** Fails the Redis sink once, after two checkpoints and N writes, so the job restarts from that checkpoint. */
    static final class AfterTwoCheckpoints implements FailOnceSink.Trigger<RedisWrite> {
        private static final long serialVersionUID = 1L;
        static final AtomicBoolean FAILED = new AtomicBoolean();
        static final AtomicInteger CHECKPOINTS = new AtomicInteger();

        @Override
        public boolean counts(RedisWrite write) {
            return true;
        }

        @Override
        public boolean fire() {
            return CHECKPOINTS.get() >= 2 && FAILED.compareAndSet(false, true);
        }

        @Override
        public Exception failure(long writes) {
            return new IOException("injected failure after " + writes + " writes");
        }

        @Override
        public void flushed(boolean endOfInput) {
            if (!endOfInput) CHECKPOINTS.incrementAndGet();
        }
    }

    @Test
    void aFailureMidStreamRestartsFromTheCheckpointAndTotalsNeverGoBack() throws Exception {
        Input input = writeInput(0.0);
        JobSettings o = options();
        StreamExecutionEnvironment env = environment(o);
        AfterTwoCheckpoints.FAILED.set(false);
        AfterTwoCheckpoints.CHECKPOINTS.set(0);
        Pipeline.build(
                env,
                o,
                JobConnectors.fileSource(o),
                new Pipeline.Outputs(
                        new FailOnceSink<>(JobConnectors.redisSink(o), 3_000, new AfterTwoCheckpoints()),
                        new DeadLetterFileSink(o.dlq),
                        1,
                        null));

        // A poller reads the hottest totals while the job runs; none may ever decrease.
        List<String> hot = new ArrayList<>();
        EventGenerator names = new EventGenerator(1, EventGenerator.Workload.zipf, 3_000, 1, START, 1, 0, 0);
        for (int rank = 0; rank < 30; rank++) hot.add(redis.prefix + ":{" + names.counterId(rank) + "}:total");
        List<String> hotUniques = new ArrayList<>();
        for (int rank = 0; rank < 10; rank++) hotUniques.add(redis.prefix + ":{" + names.counterId(rank) + "}:u:all");
        Map<String, Long> maxSeen = new ConcurrentHashMap<>();
        List<String> decreases = new ArrayList<>();
        AtomicBoolean running = new AtomicBoolean(true);
        Thread poller = new Thread(() -> {
            try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis(redis.host, redis.port)) {
                while (running.get()) {
                    List<String> values = j.mget(hot.toArray(String[]::new));
                    for (int i = 0; i < hot.size(); i++) {
                        if (values.get(i) == null) continue;
                        long v = Long.parseLong(values.get(i));
                        Long before =
                                maxSeen.put(hot.get(i), Math.max(v, maxSeen.getOrDefault(hot.get(i), Long.MIN_VALUE)));
                        if (before != null && v < before) decreases.add(hot.get(i) + ": " + before + " -> " + v);
                    }
                    // Sketches only grow: a restart from a checkpoint never shrinks what Redis holds.
                    for (String k : hotUniques) {
                        long v = j.pfcount(k);
                        Long before = maxSeen.put(k, Math.max(v, maxSeen.getOrDefault(k, Long.MIN_VALUE)));
                        if (before != null && v < before) decreases.add(k + ": " + before + " -> " + v);
                    }
                    Thread.sleep(20);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        poller.start();
        try {
            env.execute("pipeline-failure-it");
        } finally {
            running.set(false);
            poller.join();
        }
        assertThat(AfterTwoCheckpoints.FAILED).as("the failure was injected").isTrue();
        assertThat(maxSeen).as("the poller saw totals").isNotEmpty();
        assertThat(decreases).as("totals that went backwards").isEmpty();
        assertRedisEqualsTruth(input.truth());
        assertDeadLetters(Path.of(o.dlq), input.badSources());
    }

    private void assertRedisEqualsTruth(GroundTruth truth) {
        RedisTruth.assertEquals(redis, truth);
    }

    private static String first(java.util.Collection<?> items) {
        return items.stream().limit(10).map(String::valueOf).toList().toString();
    }

    private static void assertDeadLetters(Path dlq, Map<String, String> expected) throws IOException {
        List<String> lines = Files.readAllLines(dlq, StandardCharsets.UTF_8);
        Map<String, String> actual = new HashMap<>();
        Pattern p = Pattern.compile("\"reason\":\"([a-z0-9_]+)\".*\"source\":\"([^\"]+)\"");
        for (String line : lines) {
            var m = p.matcher(line);
            assertThat(m.find()).as(line).isTrue();
            assertThat(actual.put(m.group(2), m.group(1)))
                    .as("dead letter twice: " + line)
                    .isNull();
        }
        assertThat(actual).isEqualTo(expected);
    }
}
