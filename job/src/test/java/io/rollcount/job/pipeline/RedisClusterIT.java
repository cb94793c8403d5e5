package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.metrics.LocalMetrics;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.redis.PrefixGuard;
import io.rollcount.job.redis.RedisClusterProcesses;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.StartChecks;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.RedisClusterClient;

/**
 * The job against a real Redis Cluster (3 masters, 3 replicas): a bounded run is exact with every key in
 * its slot, a key of the wrong type is rejected by name while every other key is written, a slot migration
 * while the job writes changes nothing, and {@code --fresh} clears the prefix on every master.
 */
class RedisClusterIT {
    @RegisterExtension
    static final RedisClusterProcesses CLUSTER = new RedisClusterProcesses();

    static final Configuration FLINK_CONF = new Configuration();
    static final LocalMetrics METRICS = LocalMetrics.addTo(FLINK_CONF);

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slots(2, FLINK_CONF);

    @TempDir
    Path dir;

    @Test
    void aBoundedRunIsExactAndEveryKeyIsInItsSlot() throws Exception {
        ClusterRuns run = new ClusterRuns(CLUSTER, dir).writeInput(40_000, 2_000);
        JobSettings o = run.options();
        // A key of another type where the hottest counter's total goes: rejected by name, every other key written.
        String planted = run.hotTotals.get(0);
        try (RedisClusterClient c = CLUSTER.client()) {
            c.rpush(planted, "not a number");
        }
        long rejectedBefore = METRICS.sum(RollcountMetrics.REDIS_REJECTED);

        StreamExecutionEnvironment env = ClusterRuns.environment(o);
        run.build(env, o, 0);
        env.execute("redis-cluster-a");

        int keys = run.assertEveryKeyInItsSlot();
        run.assertExact(Set.of(planted));
        assertThat(METRICS.sum(RollcountMetrics.REDIS_REJECTED) - rejectedBefore)
                .as("rejected keys")
                .isEqualTo(1);
        assertThat((String) METRICS.gauge(RollcountMetrics.REDIS_FIRST_REJECTED))
                .contains(planted)
                .contains("WRONGTYPE");
        // every master the writers wrote to had each batch acknowledged by its replica
        for (int port : CLUSTER.masterPorts()) {
            try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis("127.0.0.1", port)) {
                assertThat(j.info("commandstats"))
                        .as("WAIT sent to master " + port)
                        .contains("cmdstat_wait:calls=");
            }
        }
        Map<Integer, List<String>> byMaster = CLUSTER.keysByMaster(run.prefix);
        assertThat(byMaster.values())
                .as("keys on every master")
                .allSatisfy(k -> assertThat(k).isNotEmpty());
        System.out.printf(
                "RedisClusterIT a: %d keys checked, per master %s%n",
                keys, byMaster.values().stream().map(List::size).toList());

        // --fresh over this prefix: an earlier job is found, and every master's keys go.
        JobSettings fresh = o.toBuilder().set("--fresh", true).build();
        try (var client = JobConnectors.redisEndpoint(fresh.redis).client()) {
            assertThat(new PrefixGuard(fresh.redis.keyPrefix()).earlierJob(client))
                    .isEqualTo(run.prefix + ":meta:watermark");
        }
        assertThat(StartChecks.prefixRefusal(fresh, false, "-")).isNull();
        assertThat(CLUSTER.keys(run.prefix)).as("keys left after --fresh").isEmpty();
    }

    @Test
    void aSlotMigrationMidStreamChangesNothing() throws Exception {
        ClusterRuns run = new ClusterRuns(CLUSTER, dir).writeInput(60_000, 3_000);
        JobSettings o = run.options();
        // The readers hold after a third of their records until the migration has started.
        JobClient job = run.startHeld(o, 10_000, "redis-cluster-c");
        try (TotalsPoller poller = new TotalsPoller(CLUSTER::client, run.hotTotals)) {
            ClusterRuns.awaitCheckpointsAndTotals(poller, 1, job);
            List<Integer> masters = CLUSTER.masterPorts();
            int from = masters.get(0);
            int to = masters.get(1);
            List<String> reshard = new ArrayList<>(List.of(
                    "redis-cli",
                    "--cluster",
                    "reshard",
                    "127.0.0.1:" + from,
                    "--cluster-from",
                    CLUSTER.nodeId(from),
                    "--cluster-to",
                    CLUSTER.nodeId(to),
                    "--cluster-slots",
                    "2000",
                    "--cluster-yes"));
            CompletableFuture<String> migration = CompletableFuture.supplyAsync(() -> {
                try {
                    return CLUSTER.run(reshard, 120);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            Thread.sleep(300); // the migration under way: the rest of the stream is written meanwhile
            FailureInjection.released = true;
            String out = migration.get();
            assertThat(out).contains("Moving slot");
            ClusterRuns.awaitFinished(job, Duration.ofSeconds(180));
            poller.close();
            assertThat(poller.decreases).as("totals that went backwards").isEmpty();
            System.out.printf(
                    "RedisClusterIT c: %d polls, %d totals seen, %d read errors during the migration%n",
                    poller.polls.get(), poller.maxSeen.size(), poller.errors.get());
        } finally {
            if (!job.getJobStatus().get().isGloballyTerminalState())
                job.cancel().get();
        }
        CLUSTER.awaitHealthy(30_000);
        run.assertEveryKeyInItsSlot();
        run.assertExact(Set.of());
        assertThat(CLUSTER.slotsByMaster().get(CLUSTER.masterPorts().get(1)).stream()
                        .mapToInt(r -> r[1] - r[0] + 1)
                        .sum())
                .as("slots of the master the migration moved 2000 slots to")
                .isGreaterThan(5_461 + 1_900);
    }

    @Test
    void theLeaseAndTheJobMarkShareASlotAndRefuseASecondJob() throws Exception {
        ClusterRuns run = new ClusterRuns(CLUSTER, dir);
        JobSettings o = run.options();
        PrefixGuard guard = new PrefixGuard(o.redis.keyPrefix());
        RedisEndpoint endpoint = JobConnectors.redisEndpoint(o.redis);
        try (var client = endpoint.client()) {
            assertThat(guard.acquire(client, "job-a")).isNull();
            assertThat(guard.acquire(client, "job-b")).isEqualTo("job-a");
            assertThat(client.get(run.prefix + ":_job:{" + run.prefix + ":_lease}"))
                    .isEqualTo("job-a");
            assertThat(StartChecks.prefixRefusal(o, false, "-", "job-b")).contains("is in use by a running job");
            guard.release(client, "job-a");
            assertThat(StartChecks.prefixRefusal(o, false, "-"))
                    .contains("holds the counts of an earlier job")
                    .contains(run.prefix + ":_job:{" + run.prefix + ":_lease}");
            // the mark's name of earlier versions still counts
            client.del(run.prefix + ":_job:{" + run.prefix + ":_lease}");
            client.set(run.prefix + ":_job", "old");
            assertThat(guard.earlierJob(client)).isEqualTo(run.prefix + ":_job");
            client.del(run.prefix + ":_job");
            assertThat(guard.earlierJob(client)).isNull();
        }
    }
}
