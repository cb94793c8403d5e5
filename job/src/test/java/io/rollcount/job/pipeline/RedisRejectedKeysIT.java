package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobOptions;
import io.rollcount.job.RollcountJob;
import io.rollcount.job.files.DeadLetterFileSink;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.redis.RedisSink;
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
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 5: keys of another type under the prefix before the job writes (a hash at one counter's
 * total, a plain string at another's {@code u:all}, a hash at a third one's 1-minute window). The bounded
 * job must finish (no crash loop: the job gets no restart at all), every other key must be exact, the
 * foreign keys must be left as they were and be reported once each, and {@code rc:meta:watermark} must stop
 * at the start of the rejected window instead of saying every window is final.
 */
class RedisRejectedKeysIT {
    private static final long START = 1_764_000_000_000L; // 2025-11-24T16:00:00Z

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
            .setNumberTaskManagers(1).setNumberSlotsPerTaskManager(2).build());

    @TempDir
    Path dir;

    private RedisTestSupport redis;

    @BeforeEach
    void connect() {
        redis = new RedisTestSupport();
    }

    @AfterEach
    void cleanUp() {
        redis.close();
    }

    @Test
    void foreignKeysAreRejectedOnceEachWhileEveryOtherKeyIsExactAndTheWatermarkStopsAtTheRejectedWindow() throws Exception {
        // 20,000 events over 200 s (several 1-minute windows), positive deltas only: every write is monotone,
        // so a key of another type is found by the write's own read
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
        Map<String, Long> expected = truth.redisKeys(redis.prefix);
        Map<String, Set<String>> uniques = truth.uniquesKeys(redis.prefix);
        List<String> counters = new ArrayList<>(new TreeSet<>(truth.users.keySet()));
        String hashAtTotal = redis.prefix + ":{" + counters.get(0) + "}:total";
        String stringAtUniques = redis.prefix + ":{" + counters.get(1) + "}:u:all";
        String windowBase = redis.prefix + ":{" + counters.get(2) + "}:1m:";
        String hashAtWindow = new TreeSet<>(expected.keySet()).stream().filter(k -> k.startsWith(windowBase)).reduce((a, b) -> b).orElseThrow();
        long rejectedWindowStartMillis = Long.parseLong(hashAtWindow.substring(windowBase.length())) * 1000;
        assertThat(expected).containsKeys(hashAtTotal, hashAtWindow);
        assertThat(uniques).containsKey(stringAtUniques);
        // only counter keys: no marker of another job (P:meta:watermark, P:_job, P:_lease)
        redis.jedis.hset(hashAtTotal, "owner", "someone else");
        redis.jedis.set(stringAtUniques, "not a HyperLogLog");
        redis.jedis.hset(hashAtWindow, "owner", "someone else");

        JobOptions o = new JobOptions();
        o.input = in.toString();
        o.redis = redis.url();
        o.redisKeyPrefix = redis.prefix;
        o.checkpointInterval = "300ms";
        o.dlq = dir.resolve("dlq.jsonl").toString();
        o.validate();
        Configuration conf = RollcountJob.configuration(o);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none"); // a crash would fail the test, not loop
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        RollcountJob.build(env, o, RollcountJob.fileSource(o),
                new RollcountJob.Outputs(RedisSink.fromOptions(o), new DeadLetterFileSink(o.dlq), 1, null));
        long rejectedBefore = RedisSink.KEYS_REJECTED.sum();
        env.execute("redis-rejected-keys-it");

        // each foreign key reported once, though the job wrote the total and u:all many times
        assertThat(RedisSink.KEYS_REJECTED.sum() - rejectedBefore).isEqualTo(3);
        // the foreign keys as they were
        assertThat(redis.jedis.hgetAll(hashAtTotal)).isEqualTo(Map.of("owner", "someone else"));
        assertThat(redis.jedis.get(stringAtUniques)).isEqualTo("not a HyperLogLog");
        assertThat(redis.jedis.hgetAll(hashAtWindow)).isEqualTo(Map.of("owner", "someone else"));
        // every other key exact, the rejected counters' other keys included
        Map<String, String> wrong = new HashMap<>();
        int checked = 0;
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            if (e.getKey().equals(hashAtTotal) || e.getKey().equals(hashAtWindow)) continue;
            String actual = redis.jedis.get(e.getKey());
            if (!e.getValue().toString().equals(actual)) wrong.put(e.getKey(), "expected " + e.getValue() + " got " + actual);
            checked++;
        }
        assertThat(wrong).as("keys with a wrong value of " + checked).isEmpty();
        assertThat(redis.jedis.get(redis.prefix + ":{" + counters.get(0) + "}:1m:" + (START / 60_000 * 60))).isNotNull();
        String scratch = redis.prefix + ":_scratch";
        for (Map.Entry<String, Set<String>> e : uniques.entrySet()) {
            if (e.getKey().equals(stringAtUniques)) continue;
            redis.jedis.del(scratch);
            redis.jedis.pfadd(scratch, e.getValue().toArray(String[]::new));
            assertThat(redis.jedis.pfcount(e.getKey())).as("PFCOUNT " + e.getKey()).isEqualTo(redis.jedis.pfcount(scratch));
        }
        redis.jedis.del(scratch);
        assertThat(uniques).containsKey(redis.prefix + ":{" + counters.get(1) + "}:u:1h:" + (START / 3_600_000 * 3600));
        // not "every window final" (Long.MAX_VALUE): the watermark stopped at the start of the rejected window
        assertThat(redis.jedis.get(redis.prefix + ":meta:watermark")).isEqualTo(Long.toString(rejectedWindowStartMillis));
        assertThat(Files.exists(Path.of(o.dlq)) ? Files.readAllLines(Path.of(o.dlq)) : List.of()).isEmpty();
    }
}
