package io.rollcount.job.pipeline;

import static io.rollcount.job.pipeline.CompatibilitySavepoint.FILES;
import static io.rollcount.job.pipeline.CompatibilitySavepoint.HOLD_AT;
import static io.rollcount.job.pipeline.CompatibilitySavepoint.PREFIX;
import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobSettings;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.support.JobOnMiniClusterTest;
import io.rollcount.job.support.JobRuns;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.JobID;
import org.apache.flink.client.deployment.StandaloneClusterId;
import org.apache.flink.client.program.rest.RestClusterClient;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.rest.messages.EmptyRequestBody;
import org.apache.flink.runtime.rest.messages.JobMessageParameters;
import org.apache.flink.runtime.rest.messages.checkpoints.CheckpointingStatistics;
import org.apache.flink.runtime.rest.messages.checkpoints.CheckpointingStatisticsHeaders;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;

/**
 * Today's job restores the savepoint of the file job kept in the test resources ({@link CompatibilitySavepoint},
 * made by {@link MakeCompatibilitySavepoint}) and counts the rest of its input exactly: the savepoint's operator
 * uids, state names and serializers must still be the job's. Redis holds what it held at the savepoint (under the
 * test's own prefix); the restored job reads the rest of both files from where the savepoint left them, against
 * its restored state (open windows, closed windows within the lateness, the sketches of the open hours and days,
 * the event ids seen), and ends with every total, window sum and unique-users key in Redis equal to the ground
 * truth of the whole input, every window key expiring as its window says, and the watermark at its end.
 */
class SavepointCompatibilityIT extends JobOnMiniClusterTest {

    @Test
    void theKeptSavepointRestoresAndTheRestCountsExactly() throws Exception {
        Path kept = Path.of(
                getClass().getResource("/" + CompatibilitySavepoint.RESOURCE).toURI());
        Path input = kept.resolve("input");

        // The resources agree with each other: the expected values are those of the kept input.
        GroundTruth truth = CompatibilitySavepoint.truth(input);
        assertThat(CompatibilitySavepoint.expectedValues(truth))
                .as("expected-values.txt is the ground truth of the input")
                .isEqualTo(Files.readAllLines(kept.resolve("expected-values.txt"), StandardCharsets.UTF_8));
        assertThat(CompatibilitySavepoint.expectedUsers(truth))
                .as("expected-users.txt is the ground truth of the input")
                .isEqualTo(Files.readAllLines(kept.resolve("expected-users.txt"), StandardCharsets.UTF_8));

        // Redis as at the savepoint, the input where the savepoint's splits name it, the savepoint somewhere else.
        List<String> dump = Files.readAllLines(kept.resolve("redis.txt"), StandardCharsets.UTF_8);
        assertThat(CompatibilitySavepoint.loadRedis(redis.jedis, dump, redis.prefix))
                .isGreaterThan(1_000);
        CompatibilitySavepoint.placeInput(input);
        Path savepoint = dir.resolve("savepoint");
        CompatibilitySavepoint.copyFolder(kept.resolve("savepoint"), savepoint);

        // The savepoint's event ids carry Flink's state TTL, which counts wall-clock time from the day it was made.
        // Its version did not record when its snapshots were taken, so the restore cannot count the time since as a
        // stop (docs/design.md, deduplication) and a default horizon would forget the ids. This test is about the
        // savepoint's uids, state names and serializers, so the restoring job's horizon keeps them for ten years; on
        // this input, twenty minutes of event time, it decides every redelivery as the default horizon does.
        JobSettings o = CompatibilitySavepoint.options(redis.url(), redis.prefix, dir).toBuilder()
                .set("--dedup-horizon", "3650d")
                .build();
        StreamExecutionEnvironment env =
                JobRuns.environment(o, 2, 0, savepoint.toUri().toString());
        JobRuns.buildFromFiles(env, o);
        JobClient job = env.executeAsync("savepoint-compatibility");
        job.getJobExecutionResult().get(3, TimeUnit.MINUTES);
        assertThat(restoredFrom(job.getJobID()))
                .as("the job started from the kept savepoint")
                .contains(savepoint.getFileName().toString());

        RedisTruth.assertEquals(redis, truth);

        // The savepoint was taken mid-stream: windows and totals it held went on counting after the restore.
        Map<String, Long> expected = truth.redisKeys(PREFIX);
        int grown = 0;
        for (String line : dump) {
            String[] f = line.split(" ", 4);
            String key = f[2].replace("$P:", PREFIX + ":");
            Long whole = expected.get(key);
            if (!f[0].equals("string") || whole == null) continue;
            long atSavepoint =
                    Long.parseLong(new String(java.util.Base64.getDecoder().decode(f[3]), StandardCharsets.UTF_8));
            if (atSavepoint != whole) grown++;
        }
        assertThat(grown).as("keys the restored job changed").isGreaterThan(100);
        // Redeliveries after the savepoint of event ids seen before it: dropped through the restored dedup state.
        assertThat(redeliveriesAcrossTheSavepoint(input))
                .as("redeliveries after the savepoint of events before it")
                .isPositive();
    }

    /** The savepoint the job of {@code id} started from, as its checkpoint statistics name it; null: none. */
    private static String restoredFrom(JobID id) throws Exception {
        try (RestClusterClient<StandaloneClusterId> client =
                new RestClusterClient<>(FLINK.getClientConfiguration(), StandaloneClusterId.getInstance())) {
            CheckpointingStatisticsHeaders headers = CheckpointingStatisticsHeaders.getInstance();
            JobMessageParameters params = headers.getUnresolvedMessageParameters();
            params.jobPathParameter.resolve(id);
            CheckpointingStatistics stats = client.sendRequest(headers, params, EmptyRequestBody.getInstance())
                    .get(30, TimeUnit.SECONDS);
            CheckpointingStatistics.RestoredCheckpointStatistics restored =
                    stats.getLatestCheckpoints().getRestoredCheckpointStatistics();
            return restored == null || !restored.isSavepoint() ? null : restored.getExternalPath();
        }
    }

    /** The records after the savepoint whose (counter, event id) came before it. */
    private static int redeliveriesAcrossTheSavepoint(Path input) throws Exception {
        Set<String> before = new HashSet<>();
        int across = 0;
        for (int f = 0; f < FILES; f++) {
            List<Generated> records = CompatibilitySavepoint.read(CompatibilitySavepoint.inputFile(input, f));
            for (Generated g : records.subList(0, HOLD_AT)) {
                if (g.eventId() != null) before.add(g.counter() + "\u0000" + g.eventId());
            }
        }
        for (int f = 0; f < FILES; f++) {
            List<Generated> records = CompatibilitySavepoint.read(CompatibilitySavepoint.inputFile(input, f));
            for (Generated g : records.subList(HOLD_AT, records.size())) {
                if (g.eventId() != null && before.contains(g.counter() + "\u0000" + g.eventId())) across++;
            }
        }
        return across;
    }
}
