package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobSettings;
import io.rollcount.job.redis.RedisClusterProcesses;
import io.rollcount.job.support.MiniClusters;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

/**
 * {@code kill -9} of a Redis Cluster master while the job writes: its replica is promoted, the writers
 * retry through the failover, the results are exact, and a reader polling positive-only totals never sees
 * one go down (each batch waits for a replica to acknowledge it, so the promoted replica has every write
 * of a completed flush).
 */
class RedisClusterFailoverIT {
    @RegisterExtension
    static final RedisClusterProcesses CLUSTER = new RedisClusterProcesses();

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slots(2);

    @TempDir
    Path dir;

    @Test
    void killingAMasterMidStreamLosesNothingAndNoTotalGoesDown() throws Exception {
        ClusterRuns run = new ClusterRuns(CLUSTER, dir).writeInput(60_000, 3_000);
        JobSettings o = run.options();
        // The readers hold after a third of their records until the master is dead: the rest is written during the
        // failover.
        JobClient job = run.startHeld(o, 10_000, "redis-cluster-b");
        int victim;
        int promoted;
        try (TotalsPoller poller = new TotalsPoller(CLUSTER::client, run.hotTotals)) {
            ClusterRuns.awaitCheckpointsAndTotals(poller, 10, job);
            // the master of the hottest counter's slot
            victim = masterOf(run.hotTotals.get(0));
            List<Integer> replicas = CLUSTER.replicasOf(victim);
            assertThat(replicas).hasSize(1);
            promoted = replicas.get(0);
            CLUSTER.kill9(victim);
            FailureInjection.released = true;
            ClusterRuns.awaitFinished(job, Duration.ofSeconds(180));
            poller.close();
            assertThat(poller.decreases).as("totals that went backwards").isEmpty();
            assertThat(poller.maxSeen.size()).isEqualTo(run.hotTotals.size());
            System.out.printf(
                    "RedisClusterFailoverIT b: killed master %d, replica %d promoted; %d polls, %d read errors during the failover%n",
                    victim, promoted, poller.polls.get(), poller.errors.get());
        } finally {
            if (!job.getJobStatus().get().isGloballyTerminalState())
                job.cancel().get();
        }
        assertThat(CLUSTER.masterPorts())
                .as("the replica is a master now")
                .contains(promoted)
                .doesNotContain(victim);
        CLUSTER.awaitHealthy(30_000);
        try {
            run.assertEveryKeyInItsSlot();
            run.assertExact(Set.of());
        } catch (AssertionError e) {
            // what each node holds and its log's end, to tell a lost write from a node the checks did not read
            System.out.printf(
                    "RedisClusterFailoverIT: killed %d, promoted %d; the nodes now:%n%s",
                    victim, promoted, CLUSTER.describe(run.prefix));
            throw e;
        }
    }

    /** The port of the master that serves this key's slot. */
    private static int masterOf(String key) {
        try (Jedis j = new Jedis("127.0.0.1", CLUSTER.livePorts().get(0))) {
            long slot = j.clusterKeySlot(key);
            for (var e : CLUSTER.slotsByMaster().entrySet()) {
                for (int[] r : e.getValue()) {
                    if (slot >= r[0] && slot <= r[1]) return e.getKey();
                }
            }
        }
        throw new IllegalStateException("no master serves " + key);
    }
}
