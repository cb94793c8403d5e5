package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.redis.PrefixGuard;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.support.RedisTestSupport;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

/**
 * Two {@code ./rollcount run} on one fresh key prefix, both past the start check before either job starts (as
 * when started at the same moment), against the real Redis: the writers of one take the prefix's lease, and
 * the other ends with the start check's one line, exit code 2, having written nothing.
 */
class RunCommandLeaseRaceIT {
    /** Enough input to keep the first job running well past the start of the second (a few seconds). */
    private static final int EVENTS = 300_000;

    private static final int COUNTERS = 1_000;

    @TempDir
    Path dir;

    @Test
    void ofTwoRunsStartedTogetherOneCountsAndTheOtherEndsWithThePrefixInUseLine() throws Exception {
        String prefix = "rcrace" + UUID.randomUUID().toString().substring(0, 8);
        Path input = events(dir.resolve("in.jsonl"));
        CyclicBarrier bothChecked = new CyclicBarrier(2);
        ExecutorService two = Executors.newFixedThreadPool(2);
        try (Jedis redis = new Jedis("127.0.0.1", 6379)) {
            List<Future<CliRun>> runs = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                String[] args = args(prefix, input, i);
                runs.add(two.submit(() -> {
                    RunCommand run = new RunCommand();
                    run.afterPrefixCheck = () -> await(bothChecked);
                    return CliRun.of(run, args);
                }));
            }
            CliRun a = runs.get(0).get(5, TimeUnit.MINUTES);
            CliRun b = runs.get(1).get(5, TimeUnit.MINUTES);

            CliRun winner = a.code() == 0 ? a : b;
            CliRun loser = winner == a ? b : a;
            assertThat(List.of(winner.code(), loser.code()))
                    .as("a: %s / b: %s", a.err(), b.err())
                    .containsExactly(0, RunCommand.EXIT_REFUSED);
            assertThat(loser.err().lines().toList()).last().isEqualTo("rollcount: " + new PrefixGuard(prefix).inUse());
            RedisKeys keys = new RedisKeys(prefix);
            // the loser wrote nothing: every counter's total is the winner's count, not twice it
            assertThat(redis.get(keys.total("c:0"))).isEqualTo(Integer.toString(EVENTS / COUNTERS));
        } finally {
            two.shutdownNow();
            try (Jedis redis = new Jedis("127.0.0.1", 6379)) {
                RedisTestSupport.deleteAll(redis, prefix);
            }
        }
    }

    private String[] args(String prefix, Path input, int i) {
        return new String[] {
            "--input", input.toString(),
            "--redis.key-prefix", prefix,
            "--dlq", dir.resolve("dlq-" + i + ".jsonl").toString(),
            "--checkpoint.dir", dir.resolve("checkpoints").toUri().toString(),
            "--parallelism", "1"
        };
    }

    private static void await(CyclicBarrier barrier) {
        try {
            barrier.await(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("the other run did not pass its start check", e);
        }
    }

    private static Path events(Path file) throws Exception {
        long ts = System.currentTimeMillis() - 3_600_000;
        try (BufferedWriter w = Files.newBufferedWriter(file)) {
            for (int i = 0; i < EVENTS; i++) {
                w.write("{\"counter\":\"c:" + (i % COUNTERS) + "\",\"ts\":" + (ts + i / 100) + "}\n");
            }
        }
        return file;
    }
}
