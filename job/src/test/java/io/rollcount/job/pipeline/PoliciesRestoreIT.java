package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
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
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

/**
 * A real savepoint restored with changed namespace policies (README, "Changing policies"): the job runs
 * without policies, is stopped with a savepoint mid-stream, and resumes on the same key prefix with
 * {@code post} cut down to 1m and 1h without uniques and {@code api} without dedup. Windows open at the
 * savepoint keep counting (post's 1m and 1h sums exact over the whole stream); what the new policies turn
 * off is no longer written (post's 5s, 5m and 1d sums and its uniques hold only what the first part wrote);
 * api's redeliveries after the restore count; every other counter is exact as if nothing changed.
 */
class PoliciesRestoreIT extends JobOnMiniClusterTest {
    private static final int EVENTS_PER_FILE = 15_000;
    /** Each source reader holds after this many records of its file, until the savepoint. */
    private static final int HOLD_AT = 5_000;

    private static final long START = RecentTime.HOUR_START;

    private static final String NEW_POLICIES = """
            - match: post
              resolutions: [1m, 1h]
              uniques: false
            - match: api
              dedup: false
            """;

    private JobSettings options(Path input, String policies) {
        return JobRuns.fileSettings(input, redis, Duration.ofMillis(500), dir).toBuilder()
                .set("--policies", policies)
                .build();
    }

    @Test
    void openWindowsKeepCountingAndWhatTheNewPoliciesTurnOffIsNoLongerWritten() throws Exception {
        // Two files, one per source reader, events alternating between them in time order.
        Path input = Files.createDirectories(dir.resolve("input"));
        EventGenerator gen = new EventGenerator(21, EventGenerator.Workload.zipf, 1_000, 300, START, 1_000, 2_000, 0);
        List<List<Generated>> files = List.of(new ArrayList<>(), new ArrayList<>());
        for (int i = 0; i < 2 * EVENTS_PER_FILE; i++) files.get(i % 2).add(gen.next());
        for (int f = 0; f < 2; f++) {
            try (BufferedWriter out =
                    Files.newBufferedWriter(input.resolve("events-" + f + ".jsonl"), StandardCharsets.UTF_8)) {
                for (Generated g : files.get(f)) {
                    out.write(g.line());
                    out.write('\n');
                }
            }
        }
        Path policies = dir.resolve("policies.yaml");
        Files.writeString(policies, NEW_POLICIES);

        // Part 1, no policies: each reader holds after HOLD_AT records (the gate stays shut); then a savepoint.
        JobSettings o = options(input, null);
        StreamExecutionEnvironment env = JobRuns.environment(o, 2, 2, null);
        FailureInjection.reset(FailureInjection.Place.NONE, false);
        Pipeline.build(env, o, new GatedSource<>(JobConnectors.fileSource(o), HOLD_AT), JobRuns.fileOutputs(o));
        JobClient job = env.executeAsync("policies-restore-part-1");
        long deadline = System.currentTimeMillis() + 60_000;
        // Both readers near their hold (the watermark follows the slower), then a moment for the last records.
        while (true) {
            String wm = redis.jedis.get(redis.prefix + ":meta:watermark");
            if (wm != null && Long.parseLong(wm) >= START + 2L * HOLD_AT - 9_000) break;
            assertThat(job.getJobStatus().get().isGloballyTerminalState())
                    .as("the job still runs")
                    .isFalse();
            assertThat(System.currentTimeMillis())
                    .as("the watermark reaches the hold")
                    .isLessThan(deadline);
            Thread.sleep(20);
        }
        Thread.sleep(1_500);
        String savepoint = job.stopWithSavepoint(
                        false, dir.resolve("savepoints").toUri().toString(), SavepointFormatType.CANONICAL)
                .get(120, TimeUnit.SECONDS);

        // Part 2: the rest of the input from the savepoint, with the new policies, on the same key prefix.
        FailureInjection.reset(FailureInjection.Place.NONE, true);
        JobSettings ro = options(input, policies.toString());
        StreamExecutionEnvironment renv = JobRuns.environment(ro, 2, 2, savepoint);
        JobRuns.buildFromFiles(renv, ro);
        renv.execute("policies-restore-part-2");

        // The truth: part 1 is the first HOLD_AT lines of each file, part 2 the rest.
        Expect defaults = Expect.defaults(100);
        Map<String, Expect> expect = new HashMap<>();
        expect.put("post", new Expect(EnumSet.of(Resolution.M1, Resolution.H1), Map.of(), Set.of(), true, true, 100));
        PolicyTruth whole = new PolicyTruth(redis.prefix, expect, defaults);
        PolicyTruth firstPart = new PolicyTruth(redis.prefix, Map.of(), defaults);
        for (List<Generated> f : files) {
            for (Generated g : f.subList(0, HOLD_AT)) {
                whole.add(g);
                firstPart.add(g);
            }
        }
        long droppedInPart1 = whole.duplicatesDropped;
        expect.put(
                "api",
                new Expect(EnumSet.allOf(Resolution.class), Map.of(), Set.of("1h", "1d", "all"), false, true, 100));
        for (List<Generated> f : files) for (Generated g : f.subList(HOLD_AT, f.size())) whole.add(g);

        // Everything but post's keys that the new policies turned off: exact, as if nothing had changed.
        Predicate<String> turnedOff = k -> k.startsWith(redis.prefix + ":{post:")
                && (k.contains("}:5s:") || k.contains("}:5m:") || k.contains("}:1d:") || k.contains("}:u:"));
        List<String> leftovers = new ArrayList<>();
        whole.assertRedis(redis, turnedOff, leftovers);
        assertThat(whole.redeliveriesCounted)
                .as("api's redeliveries after the restore count")
                .isPositive();
        assertThat(whole.duplicatesDropped).as("the others' are still dropped").isGreaterThan(droppedInPart1);

        // post's turned-off keys: only what part 1 wrote (open windows as far as they had been flushed,
        // uniques exactly part 1's users), none of a window that only part 2 had events of.
        int sums = 0;
        for (String k : leftovers) {
            if (k.contains("}:u:")) {
                assertThat(firstPart.users).as(k + ": a uniques key of part 1").containsKey(k);
                String scratch = redis.prefix + ":_scratch";
                redis.jedis.del(scratch);
                redis.jedis.pfadd(scratch, firstPart.users.get(k).toArray(String[]::new));
                assertThat(RedisTruth.samePfaddBytes(redis.jedis, k, scratch))
                        .as(k + " holds part 1's users only")
                        .isTrue();
                redis.jedis.del(scratch);
            } else {
                assertThat(firstPart.values).as(k + ": a window of part 1").containsKey(k);
                assertThat(Long.parseLong(redis.jedis.get(k)))
                        .as(k)
                        .isPositive()
                        .isLessThanOrEqualTo(firstPart.values.get(k));
                sums++;
            }
        }
        assertThat(sums).as("part 1 wrote post's 5s windows").isPositive();
        assertThat(leftovers).anyMatch(k -> k.contains("}:u:all"));
        // The minute open at the savepoint went on counting: more than part 1 alone.
        String minute = redis.prefix + ":{" + gen.counterId(0) + "}:1m:" + START / 1000;
        assertThat(Long.parseLong(redis.jedis.get(minute)))
                .isEqualTo(whole.values.get(minute))
                .isGreaterThan(firstPart.values.get(minute));
    }
}
