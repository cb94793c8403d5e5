package io.rollcount.job.pipeline;

import static io.rollcount.job.pipeline.CompatibilitySavepoint.FILES;
import static io.rollcount.job.pipeline.CompatibilitySavepoint.HOLD_AT;
import static io.rollcount.job.pipeline.CompatibilitySavepoint.INPUT_DIR;
import static io.rollcount.job.pipeline.CompatibilitySavepoint.PREFIX;
import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.support.JobOnMiniClusterTest;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Makes the savepoint that {@link SavepointCompatibilityIT} restores, with its input, the keys Redis held at
 * the savepoint and the expected values (see {@link CompatibilitySavepoint}), into the folder named by the
 * system property {@code rollcount.savepoint.out}. Not a test of its own (its name matches neither
 * {@code *Test} nor {@code *IT}); run it on purpose, from the repository's root, against the real Redis:
 * <pre>
 * mvn -B -o -pl job -am test -Dtest=MakeCompatibilitySavepoint -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Drollcount.savepoint.out=$PWD/job/src/test/resources/savepoints/v1-files
 * </pre>
 * A savepoint made again differs byte for byte (job ids, timing) but holds the same kind of state.
 */
@EnabledIfSystemProperty(named = "rollcount.savepoint.out", matches = ".+")
class MakeCompatibilitySavepoint extends JobOnMiniClusterTest {

    @Test
    void makeTheSavepoint() throws Exception {
        Path out = Path.of(System.getProperty("rollcount.savepoint.out"));
        RedisTestSupport.deleteAll(redis.jedis, PREFIX);
        List<List<Generated>> files = CompatibilitySavepoint.generate();
        Path input = dir.resolve("input");
        CompatibilitySavepoint.writeInput(input, files);
        CompatibilitySavepoint.placeInput(input);

        // The job on the input, each reader holding after HOLD_AT lines (the gate stays shut); then a savepoint.
        JobSettings o = CompatibilitySavepoint.options(redis.url(), PREFIX, dir);
        StreamExecutionEnvironment env = JobRuns.environment(o, 2, 0, null);
        FailureInjection.reset(FailureInjection.Place.NONE, false);
        Pipeline.build(env, o, new GatedSource<>(JobConnectors.fileSource(o), HOLD_AT), JobRuns.fileOutputs(o));
        JobClient job = env.executeAsync("make-compatibility-savepoint");
        long lastHeld = Long.MAX_VALUE;
        for (List<Generated> f : files)
            lastHeld = Math.min(lastHeld, f.get(HOLD_AT - 1).ts());
        long deadline = System.currentTimeMillis() + 120_000;
        while (true) {
            String wm = redis.jedis.get(PREFIX + ":meta:watermark");
            if (wm != null && Long.parseLong(wm) >= lastHeld - 10_000) break;
            assertThat(job.getJobStatus().get().isGloballyTerminalState())
                    .as("the job still runs")
                    .isFalse();
            assertThat(System.currentTimeMillis())
                    .as("the watermark reaches the hold")
                    .isLessThan(deadline);
            Thread.sleep(20);
        }
        Thread.sleep(1_500); // the last flush of the held records
        String savepoint = job.stopWithSavepoint(
                        false, dir.resolve("savepoints").toUri().toString(), SavepointFormatType.CANONICAL)
                .get(120, TimeUnit.SECONDS);
        job.getJobExecutionResult().get(60, TimeUnit.SECONDS);

        Files.createDirectories(out);
        try (Stream<Path> old = Files.list(out)) {
            assertThat(old.toList()).as(out + " is empty").isEmpty();
        }
        CompatibilitySavepoint.copyFolder(Path.of(java.net.URI.create(savepoint)), out.resolve("savepoint"));
        CompatibilitySavepoint.writeInput(out.resolve("input"), files);
        Files.write(
                out.resolve("redis.txt"),
                CompatibilitySavepoint.dumpRedis(redis.jedis, PREFIX),
                StandardCharsets.UTF_8);
        GroundTruth truth = CompatibilitySavepoint.truth(input);
        Files.write(
                out.resolve("expected-values.txt"),
                CompatibilitySavepoint.expectedValues(truth),
                StandardCharsets.UTF_8);
        Files.write(
                out.resolve("expected-users.txt"), CompatibilitySavepoint.expectedUsers(truth), StandardCharsets.UTF_8);
        RedisTestSupport.deleteAll(redis.jedis, PREFIX);
        System.out.printf(
                "compatibility savepoint of %d x %d events (held at %d) from %s in %s (input read from %s)%n",
                FILES, files.get(0).size(), HOLD_AT, savepoint, out, INPUT_DIR);
    }
}
