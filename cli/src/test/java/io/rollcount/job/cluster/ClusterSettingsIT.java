package io.rollcount.job.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.chaos.LocalCluster;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The cluster's own Flink settings: on a session cluster whose {@code config.yaml} sets
 * {@code execution.checkpointing.interval: 3s}, a job submitted with {@code flink run} and no
 * {@code --checkpoint.interval} checkpoints every 3 s (read over Flink's REST API); with the option, the option's.
 */
@Tag("cluster")
class ClusterSettingsIT {
    @Test
    void theClustersCheckpointIntervalHoldsUnlessTheOptionIsGiven() throws Exception {
        LocalCluster.jobJar();
        String id = UUID.randomUUID().toString().substring(0, 8);
        try (LocalCluster cluster = LocalCluster.start(1, "--conf", "execution.checkpointing.interval=3s");
                RedisTestSupport redis = new RedisTestSupport()) {
            assertThat(Files.readString(cluster.dir.resolve("conf/config.yaml")))
                    .contains("execution.checkpointing.interval: 3s");
            Path work = cluster.dir.resolve("settings");
            Files.createDirectories(work);
            try (KafkaBroker broker = new KafkaBroker(0, work.resolve("kafka")).start()) {
                broker.createTopics(1, "counter-events");
                assertThat(checkpointIntervalMillis(cluster, args(broker, redis, id + "a")))
                        .as("the cluster's interval")
                        .isEqualTo(3_000);
                assertThat(checkpointIntervalMillis(
                                cluster, args(broker, redis, id + "b", "--checkpoint.interval", "7s")))
                        .as("the option's interval")
                        .isEqualTo(7_000);
            }
        }
    }

    /** Submits the job, reads its checkpoint interval over the REST API once it runs, and cancels it. */
    private static long checkpointIntervalMillis(LocalCluster cluster, List<String> jobArgs) throws Exception {
        String job = cluster.submit(List.of(), jobArgs);
        try {
            cluster.awaitAllRunning(job, Duration.ofMinutes(2));
            return cluster.rest("/jobs/" + job + "/checkpoints/config")
                    .orElseThrow(() -> new AssertionError("no checkpoint config of job " + job))
                    .path("interval")
                    .asLong();
        } finally {
            cluster.cancel(job);
        }
    }

    private static List<String> args(KafkaBroker broker, RedisTestSupport redis, String id, String... more) {
        List<String> a = new ArrayList<>(List.of(
                "--kafka.bootstrap",
                broker.bootstrap(),
                "--kafka.topic",
                "counter-events",
                "--kafka.group-id",
                "g-" + id,
                "--kafka.transactional-id-prefix",
                "t-" + id,
                "--redis",
                redis.url(),
                "--redis.key-prefix",
                redis.prefix + id,
                "--parallelism",
                "1"));
        a.addAll(List.of(more));
        return a;
    }
}
