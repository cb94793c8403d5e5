package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.redis.RedisClusterProcesses;
import io.rollcount.job.redis.RedisServerProcess;
import java.net.ServerSocket;
import java.util.Map;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.RedisClusterClient;

/**
 * {@code query} and {@code top} with {@code --redis.cluster} against a real Redis Cluster, and the one-line
 * refusals of a {@code --redis} that does not match the option: a seed list mixing cluster and non-cluster
 * nodes, a cluster node without the option, a single server with it, seeds none of which answers, a
 * database in cluster mode, a list without the option.
 */
class RedisClusterCommandsIT {
    @RegisterExtension
    static final RedisClusterProcesses CLUSTER = new RedisClusterProcesses();

    @Test
    void queryAndTopReadFromTheCluster() {
        String p = "rcq" + UUID.randomUUID().toString().substring(0, 8);
        try (RedisClusterClient c = CLUSTER.client()) {
            // keys on different masters: the total, windows and uniques share {post:1}'s slot; the lists have their own
            c.set(p + ":{post:1}:total", "42");
            c.set(p + ":{post:1}:1m:1764000000", "30");
            c.set(p + ":{post:1}:1m:1764000060", "12");
            c.pfadd(p + ":{post:1}:u:all", "ann", "bob");
            c.set(p + ":meta:watermark", "1764000120000");
            c.zadd(p + ":trending:post", Map.of("post:1", 40.5, "post:2", 10.0));
            c.set(p + ":_v:{" + p + ":trending:post}", "1764000004999");
            c.zadd(p + ":top:post:1h:1763996400", Map.of("post:9", 3.0));
            c.zadd(p + ":top:post:1h:1764000000", Map.of("post:1", 80.0, "post:2", 20.0));
        }
        CliRun q = CliRun.run(
                "query",
                "post:1",
                "--redis",
                CLUSTER.url(),
                "--redis.cluster",
                "--redis.key-prefix",
                p,
                "--res",
                "1m",
                "--last",
                "5m");
        assertThat(q.code()).as(q.err()).isZero();
        assertThat(q.out())
                .contains("post:1  total 42")
                .contains("30")
                .contains("12")
                .contains("unique users: all time 2");

        CliRun t = CliRun.run("top", "post", "--redis", CLUSTER.url(), "--redis.cluster", "--redis.key-prefix", p);
        assertThat(t.code()).as(t.err()).isZero();
        assertThat(t.out())
                .contains("trending in post at 2025-11-24 16:00:04Z")
                .contains("post:1")
                .contains("top 2 of post in the 1h window 2025-11-24 16:00:00Z .. 2025-11-24 17:00:00Z")
                .doesNotContain("post:9");

        // Without a watermark, top finds the latest window by a SCAN of every master.
        try (RedisClusterClient c = CLUSTER.client()) {
            c.del(p + ":meta:watermark");
        }
        CliRun scanned =
                CliRun.run("top", "post", "--redis", CLUSTER.url(), "--redis.cluster", "--redis.key-prefix", p);
        assertThat(scanned.code()).as(scanned.err()).isZero();
        assertThat(scanned.out())
                .contains("top 2 of post in the 1h window 2025-11-24 16:00:00Z .. 2025-11-24 17:00:00Z");
    }

    @Test
    void aClusterNodeWithoutTheOptionIsRefusedNamingIt() {
        int port = CLUSTER.livePorts().get(0);
        CliRun r = CliRun.run("query", "post:1", "--redis", "redis://127.0.0.1:" + port);
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err().strip())
                .isEqualTo("rollcount: --redis: 127.0.0.1:" + port
                        + " is a Redis Cluster node: add --redis.cluster (and list its seed nodes in --redis)");
    }

    @Test
    void aSeedListMixingClusterAndSingleNodesIsRefusedNamingTheNode() throws Exception {
        try (RedisServerProcess single = RedisServerProcess.launch()) {
            CliRun r = CliRun.run(
                    "top", "post", "--redis.cluster", "--redis", CLUSTER.url() + ",127.0.0.1:" + single.port);
            assertThat(r.code()).isEqualTo(2);
            assertThat(r.err().strip())
                    .doesNotContain("\n")
                    .startsWith(
                            "rollcount: --redis: seed node 127.0.0.1:" + single.port + " is not a Redis Cluster node")
                    .contains("mixes cluster and non-cluster nodes");

            CliRun alone = CliRun.run("query", "post:1", "--redis.cluster", "--redis", single.url());
            assertThat(alone.code()).isEqualTo(2);
            assertThat(alone.err().strip())
                    .doesNotContain("\n")
                    .startsWith(
                            "rollcount: --redis: seed node 127.0.0.1:" + single.port + " is not a Redis Cluster node");
        }
    }

    @Test
    void seedsNoneOfWhichAnswersAreNamed() throws Exception {
        int a = freePort();
        int b = freePort();
        CliRun r = CliRun.run(
                "query", "post:1", "--redis.cluster", "--redis", "redis://127.0.0.1:" + a + ",127.0.0.1:" + b);
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip())
                .doesNotContain("\n")
                .startsWith("rollcount: cannot reach Redis at redis://127.0.0.1:" + a + ",127.0.0.1:" + b)
                .contains("tried 127.0.0.1:" + a + " (")
                .contains(", 127.0.0.1:" + b + " (");
    }

    @Test
    void aDatabaseOrAListWithoutTheOptionIsRefusedNamingTheOption() {
        CliRun db = CliRun.run("query", "post:1", "--redis.cluster", "--redis", CLUSTER.url() + "/2");
        assertThat(db.code()).isEqualTo(2);
        assertThat(db.err().strip()).doesNotContain("\n").contains("--redis: seed node 6 must be host:port");
        int port = CLUSTER.livePorts().get(0);
        CliRun db1 = CliRun.run("query", "post:1", "--redis.cluster", "--redis", "redis://127.0.0.1:" + port + "/2");
        assertThat(db1.err().strip())
                .isEqualTo(
                        "rollcount: --redis: a Redis Cluster has database 0 only: remove '/2' (--redis.cluster is set)");
        CliRun list = CliRun.run("query", "post:1", "--redis", CLUSTER.url());
        assertThat(list.code()).isEqualTo(2);
        assertThat(list.err().strip())
                .doesNotContain("\n")
                .startsWith(
                        "rollcount: --redis: a list of nodes is the seed list of a Redis Cluster: add --redis.cluster");
    }

    private static int freePort() throws Exception {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }
}
