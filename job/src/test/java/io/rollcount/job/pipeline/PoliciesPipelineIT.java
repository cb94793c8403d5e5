package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobSettings;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.pipeline.PolicyTruth.Expect;
import io.rollcount.job.support.JobOnMiniClusterTest;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.RecentTime;
import java.io.BufferedWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.resps.Tuple;

/**
 * Namespace policies end to end on a MiniCluster with RocksDB, against the real Redis: a seeded zipf
 * stream over the namespaces post, api, video and user, one rule for each of the first three (user: no
 * rule, every default). Each counter gets exactly the keys, values and expiries of its rule and no other
 * key; dedup off counts redeliveries; top-K and trending lists only where the rule keeps them.
 */
class PoliciesPipelineIT extends JobOnMiniClusterTest {
    private static final int EVENTS = 40_000;
    private static final long START = RecentTime.HOUR_START;
    private static final long DAY = Duration.ofDays(1).toMillis();

    static final String POLICIES = """
            # one rule per namespace of the generator, but user (defaults)
            - match: post
              resolutions: [1m, 1h]
              retention: {1m: 30d}
              uniques: [1d]
              topk: 3
            - match: "ap*"
              resolutions: [5s, 1m]
              uniques: false
              trending: false
              topk: false
              dedup: false
            - match: video
              resolutions: []
              uniques: [1h, all]
              retention: {1h: 5d}
              dedup: 7d
            """;

    /** What the test expects of each namespace under {@link #POLICIES}, written out by hand. */
    static Map<String, Expect> expected() {
        return Map.of(
                "post",
                        new Expect(
                                EnumSet.of(Resolution.M1, Resolution.H1),
                                Map.of(Resolution.M1, 30 * DAY),
                                Set.of("1d"),
                                true,
                                true,
                                3),
                "api", new Expect(EnumSet.of(Resolution.S5, Resolution.M1), Map.of(), Set.of(), false, false, 0),
                "video",
                        new Expect(
                                EnumSet.noneOf(Resolution.class),
                                Map.of(Resolution.H1, 5 * DAY),
                                Set.of("1h", "all"),
                                true,
                                true,
                                100));
    }

    @Test
    void eachCounterGetsExactlyWhatItsRuleKeeps() throws Exception {
        Path input = Files.createDirectories(dir.resolve("input"));
        PolicyTruth truth = new PolicyTruth(redis.prefix, expected(), Expect.defaults(100));
        EventGenerator gen = new EventGenerator(15, EventGenerator.Workload.zipf, 2_000, 400, START, 1_000, 3_000, 0);
        try (BufferedWriter out = Files.newBufferedWriter(input.resolve("events.jsonl"), StandardCharsets.UTF_8)) {
            for (int i = 0; i < EVENTS; i++) {
                Generated g = gen.next();
                truth.add(g);
                out.write(g.line());
                out.write('\n');
            }
        }
        Path policies = dir.resolve("policies.yaml");
        Files.writeString(policies, POLICIES);

        JobSettings o = JobRuns.fileSettings(input, redis, Duration.ofMillis(500), dir).toBuilder()
                .set("--policies", policies.toString())
                .build();
        StreamExecutionEnvironment env = JobRuns.environment(o, 2, 2, null);
        JobRuns.buildFromFiles(env, o);
        env.execute("policies-it");

        Map<String, List<Tuple>> lists = truth.assertRedis(redis);
        assertThat(truth.redeliveriesCounted)
                .as("api counts its redeliveries (dedup off)")
                .isPositive();
        assertThat(truth.duplicatesDropped).as("the others drop theirs").isPositive();
        // Not vacuous: the namespaces with lists have them, post's top-K is 3 long, _all's 100.
        String minute = ":1m:" + START / 1000;
        assertThat(lists)
                .containsKeys(
                        redis.prefix + ":top:post" + minute,
                        redis.prefix + ":top:user" + minute,
                        redis.prefix + ":top:_all" + minute,
                        redis.prefix + ":trending:post",
                        redis.prefix + ":trending:video",
                        redis.prefix + ":trending:_all");
        // Window lists exist only of windows kept: none of video (no resolutions), none of post's 1d.
        assertThat(lists.keySet()).noneMatch(k -> k.contains(":top:video:") || k.contains(":top:post:1d:"));
        assertThat(lists.get(redis.prefix + ":top:post" + minute)).hasSize(3);
        assertThat(lists.get(redis.prefix + ":top:_all" + minute)).hasSize(100);
        assertThat(lists.keySet()).noneMatch(k -> k.contains(":top:api:") || k.endsWith(":trending:api"));
        // The window sums per namespace are what each keeps: post none of 5s, video none at all.
        assertThat(truth.values.keySet())
                .anyMatch(k -> k.startsWith(redis.prefix + ":{post:") && k.contains("}:1m:"))
                .noneMatch(k -> k.startsWith(redis.prefix + ":{post:") && k.contains("}:5s:"))
                .noneMatch(k -> k.startsWith(redis.prefix + ":{video:") && !k.endsWith("}:total"));
    }
}
