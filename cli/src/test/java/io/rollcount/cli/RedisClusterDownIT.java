package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.redis.RedisClusterProcesses;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

/**
 * {@code ./rollcount run --redis.cluster} against a real Redis Cluster that is down because a master and its
 * replica are gone (their slots uncovered, every other node answering CLUSTERDOWN): a refused start, one
 * line naming a seed node and the slots, exit code 2.
 */
class RedisClusterDownIT {
    @RegisterExtension
    static final RedisClusterProcesses CLUSTER = new RedisClusterProcesses();

    @TempDir
    Path dir;

    @Test
    void aClusterWithSlotsUncoveredIsARefusedStartNamingTheSlots() throws Exception {
        int master = CLUSTER.masterPorts().get(0);
        List<int[]> slots = CLUSTER.slotsByMaster().get(master);
        assertThat(slots).hasSize(1);
        for (int replica : CLUSTER.replicasOf(master)) CLUSTER.kill9(replica);
        CLUSTER.kill9(master);
        awaitEveryLiveNodeDown(30_000);
        String seed = "127.0.0.1:" + CLUSTER.livePorts().get(0);

        Path input = dir.resolve("in.jsonl");
        Files.writeString(input, "{\"counter\":\"a:1\",\"ts\":1000}\n");
        CliRun run = CliRun.of(
                Main.commandLine(),
                "run",
                "--input",
                input.toString(),
                "--redis.cluster",
                "--redis",
                CLUSTER.url(),
                "--redis.key-prefix",
                "rcdown" + UUID.randomUUID().toString().substring(0, 8),
                "--dlq",
                dir.resolve("dlq.jsonl").toString(),
                "--checkpoint.dir",
                dir.resolve("checkpoints").toUri().toString());

        assertThat(run.err())
                .isEqualTo("rollcount: Redis Cluster at " + seed + " is down: slots " + slots.get(0)[0] + "-"
                        + slots.get(0)[1] + " are not covered (CLUSTERDOWN); give every slot a live master"
                        + " (redis-cli --cluster fix " + seed + ") and start again" + System.lineSeparator());
        assertThat(run.code()).isEqualTo(2);
        assertThat(dir.resolve("checkpoints")).doesNotExist();
    }

    /** Waits until every live node has marked the dead ones failed and says {@code cluster_state:fail}. */
    private static void awaitEveryLiveNodeDown(long timeoutMillis) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMillis;
        while (true) {
            boolean down = true;
            for (int port : CLUSTER.livePorts()) {
                try (Jedis j = new Jedis("127.0.0.1", port)) {
                    down &= j.clusterInfo().contains("cluster_state:fail");
                }
            }
            if (down) return;
            if (System.currentTimeMillis() > deadline)
                throw new AssertionError("the cluster is not down after " + timeoutMillis + " ms");
            Thread.sleep(100);
        }
    }
}
