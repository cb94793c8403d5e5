package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobSettings;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.metrics.LocalMetrics;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.redis.RedisServerProcess;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.RedisTestSupport;
import java.io.BufferedWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

/**
 * Redis errors under a whole bounded job on a MiniCluster (no restart allowed: a crash fails the test).
 * Issue 18 item 5: keys of another type under the prefix before the job writes (a hash at one counter's
 * total, a plain string at another's {@code u:all}, a hash at a third one's 1-minute window): the job must
 * finish, every other key must be exact, the foreign keys must be left as they were and be reported once
 * each, and {@code rc:meta:watermark} must stop at the start of the rejected window instead of saying every
 * window is final. Item 8: a Redis of the test's own at its {@code maxmemory} with {@code noeviction}
 * refuses every write with OOM: the job must retry until Redis has room again, then be exact.
 */
class RedisErrorsIT {
    private static final long START =
            io.rollcount.job.support.RecentTime.HOUR_START; // keys expire at window end + retention

    static final Configuration FLINK_CONF = new Configuration();
    static final LocalMetrics METRICS = LocalMetrics.addTo(FLINK_CONF);

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slots(2, FLINK_CONF);

    @TempDir
    Path dir;

    @RegisterExtension
    final RedisTestSupport redis = new RedisTestSupport();

    /**
     * 20,000 events over 200 s (several 1-minute windows), positive deltas only: every write is monotone, so a
     * key of another type is found by the write's own read.
     */
    private GroundTruth writeInput() throws Exception {
        EventGenerator gen = new EventGenerator(7, EventGenerator.Workload.zipf, 200, 100, START, 100, 2_000, 0);
        GroundTruth truth = new GroundTruth();
        Path in = Files.createDirectories(dir.resolve("in"));
        try (BufferedWriter w = Files.newBufferedWriter(in.resolve("events.jsonl"))) {
            for (int i = 0; i < 20_000; i++) {
                Generated g = gen.next();
                truth.add(g);
                w.write(g.line());
                w.write('\n');
            }
        }
        return truth;
    }

    private JobSettings options(String redisUrl, String prefix) {
        JobSettings o =
                JobRuns.fileSettings(dir.resolve("in"), redisUrl, prefix, Duration.ofMillis(300), dir).toBuilder()
                        .set("--redis.retry-timeout", Duration.ofSeconds(120))
                        .build();
        return o;
    }

    private StreamExecutionEnvironment job(JobSettings o) {
        StreamExecutionEnvironment env = JobRuns.environment(o, 2, 0, null); // no restart: a crash fails the test
        JobRuns.buildFromFiles(env, o);
        return env;
    }

    /** Every key of the ground truth but {@code except} holds its exact value (uniques: as PFADD of its users counts). */
    private static void assertExact(Jedis jedis, String prefix, GroundTruth truth, Set<String> except) {
        Map<String, String> wrong = new HashMap<>();
        int checked = 0;
        for (Map.Entry<String, Long> e : truth.redisKeys(prefix).entrySet()) {
            if (except.contains(e.getKey())) continue;
            String actual = jedis.get(e.getKey());
            if (!e.getValue().toString().equals(actual))
                wrong.put(e.getKey(), "expected " + e.getValue() + " got " + actual);
            checked++;
        }
        assertThat(wrong).as("keys with a wrong value of " + checked).isEmpty();
        assertThat(checked).isGreaterThan(1_000);
        String scratch = prefix + ":_scratch";
        for (Map.Entry<String, Set<String>> e : truth.uniquesKeys(prefix).entrySet()) {
            if (except.contains(e.getKey())) continue;
            jedis.del(scratch);
            jedis.pfadd(scratch, e.getValue().toArray(String[]::new));
            assertThat(jedis.pfcount(e.getKey())).as("PFCOUNT " + e.getKey()).isEqualTo(jedis.pfcount(scratch));
        }
        jedis.del(scratch);
    }

    @Test
    void foreignKeysAreRejectedOnceEachWhileEveryOtherKeyIsExactAndTheWatermarkStopsAtTheRejectedWindow()
            throws Exception {
        GroundTruth truth = writeInput();
        Map<String, Long> expected = truth.redisKeys(redis.prefix);
        Map<String, Set<String>> uniques = truth.uniquesKeys(redis.prefix);
        List<String> counters = new ArrayList<>(new TreeSet<>(truth.users.keySet()));
        String hashAtTotal = redis.prefix + ":{" + counters.get(0) + "}:total";
        String stringAtUniques = redis.prefix + ":{" + counters.get(1) + "}:u:all";
        String windowBase = redis.prefix + ":{" + counters.get(2) + "}:1m:";
        String hashAtWindow = new TreeSet<>(expected.keySet())
                .stream()
                        .filter(k -> k.startsWith(windowBase))
                        .reduce((a, b) -> b)
                        .orElseThrow();
        long rejectedWindowStartMillis = Long.parseLong(hashAtWindow.substring(windowBase.length())) * 1000;
        assertThat(expected).containsKeys(hashAtTotal, hashAtWindow);
        assertThat(uniques).containsKey(stringAtUniques);
        // only counter keys: no marker of another job (P:meta:watermark, P:_job, P:_lease)
        redis.jedis.hset(hashAtTotal, "owner", "someone else");
        redis.jedis.set(stringAtUniques, "not a HyperLogLog");
        redis.jedis.hset(hashAtWindow, "owner", "someone else");

        JobSettings o = options(redis.url(), redis.prefix);
        StreamExecutionEnvironment env = job(o);
        long rejectedBefore = METRICS.sum(RollcountMetrics.REDIS_REJECTED);
        env.execute("redis-rejected-keys-it");

        // each foreign key reported once, though the job wrote the total and u:all many times
        assertThat(METRICS.sum(RollcountMetrics.REDIS_REJECTED) - rejectedBefore)
                .isEqualTo(3);
        // the foreign keys as they were
        assertThat(redis.jedis.hgetAll(hashAtTotal)).isEqualTo(Map.of("owner", "someone else"));
        assertThat(redis.jedis.get(stringAtUniques)).isEqualTo("not a HyperLogLog");
        assertThat(redis.jedis.hgetAll(hashAtWindow)).isEqualTo(Map.of("owner", "someone else"));
        // every other key exact, the rejected counters' other keys included
        assertExact(redis.jedis, redis.prefix, truth, Set.of(hashAtTotal, stringAtUniques, hashAtWindow));
        assertThat(redis.jedis.get(redis.prefix + ":{" + counters.get(0) + "}:1m:" + (START / 60_000 * 60)))
                .isNotNull();
        assertThat(uniques).containsKey(redis.prefix + ":{" + counters.get(1) + "}:u:1h:" + (START / 3_600_000 * 3600));
        // not "every window final" (Long.MAX_VALUE): the watermark stopped at the start of the rejected window
        assertThat(redis.jedis.get(redis.prefix + ":meta:watermark"))
                .isEqualTo(Long.toString(rejectedWindowStartMillis));
        assertThat(Files.exists(Path.of(o.dlq)) ? Files.readAllLines(Path.of(o.dlq)) : List.of())
                .isEmpty();
    }

    @Test
    void outOfMemoryIsRetriedUntilRedisHasRoomAgainThenEveryKeyIsExact() throws Exception {
        GroundTruth truth = writeInput();
        try (RedisServerProcess own = RedisServerProcess.launch("--maxmemory-policy", "noeviction");
                Jedis admin = new Jedis("127.0.0.1", own.port)) {
            admin.set("ballast".getBytes(), new byte[4 << 20]);
            admin.configSet("maxmemory", "1mb"); // below what it holds: every write is refused with OOM
            String prefix = "rc";
            JobSettings o = options(own.url(), prefix);
            JobClient client = job(o).executeAsync("redis-oom-it");
            long deadline = System.nanoTime() + 60_000_000_000L;
            while (oomErrors(admin) < 5 && System.nanoTime() < deadline) Thread.sleep(50);
            assertThat(oomErrors(admin)).as("OOM replies to the job's writes").isGreaterThanOrEqualTo(5);
            assertThat(RedisTestSupport.keysOf(admin, prefix))
                    .as("nothing written while Redis is full")
                    .isEmpty();
            assertThat(client.getJobStatus().get()).isEqualTo(JobStatus.RUNNING); // retrying, not failed

            admin.configSet("maxmemory", "0"); // room again
            client.getJobExecutionResult().get(3, TimeUnit.MINUTES);
            assertExact(admin, prefix, truth, Set.of());
            assertThat(admin.get(prefix + ":meta:watermark")).isEqualTo(Long.toString(Long.MAX_VALUE));
        }
    }

    /** OOM error replies the server has sent (Redis 7's INFO errorstats). */
    private static long oomErrors(Jedis admin) {
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("errorstat_OOM:count=(\\d+)").matcher(admin.info("errorstats"));
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }
}
