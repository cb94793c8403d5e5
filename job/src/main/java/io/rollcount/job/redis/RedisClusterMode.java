package io.rollcount.job.redis;

import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * The check of {@link RedisEndpoint#checkMode()}: each seed node of an endpoint asked with {@code INFO cluster}
 * whether it is a Redis Cluster node, as {@code --redis.cluster} says it must be or must not be, and whether
 * the cluster serves.
 */
final class RedisClusterMode {
    private final RedisEndpoint endpoint;
    private final String[] seedHosts;
    private final int[] seedPorts;

    RedisClusterMode(RedisEndpoint endpoint, String[] seedHosts, int[] seedPorts) {
        this.endpoint = endpoint;
        this.seedHosts = seedHosts;
        this.seedPorts = seedPorts;
    }

    /** What {@link RedisEndpoint#checkMode()} says it does. */
    void check() {
        List<String> failures = new ArrayList<>();
        int reached = 0;
        boolean serving = false;
        RedisClusterDownException down = null;
        for (int i = 0; i < seedHosts.length; i++) {
            String node = endpoint.seeds().get(i);
            Boolean enabled;
            String nodesIfDown = null;
            try (Jedis j = endpoint.connect(seedHosts[i], seedPorts[i])) {
                reached++;
                enabled = clusterEnabled(j);
                if (endpoint.cluster() && Boolean.TRUE.equals(enabled)) nodesIfDown = clusterNodesIfDown(j);
            } catch (JedisConnectionException e) {
                failures.add(node + " (" + endpoint.redact(rootMessage(e)) + ")");
                continue;
            }
            if (nodesIfDown == null) serving = true;
            else if (down == null) down = RedisClusterDownException.of(node, nodesIfDown);
            if (enabled == null) continue;
            if (endpoint.cluster() && !enabled) {
                throw new IllegalArgumentException(
                        "--redis: seed node " + node + " is not a Redis Cluster node (cluster_enabled:0)"
                                + (seedHosts.length > 1 ? ": the list mixes cluster and non-cluster nodes" : "")
                                + "; with --redis.cluster every node must be a cluster node");
            }
            if (!endpoint.cluster() && enabled) {
                throw new IllegalArgumentException("--redis: " + node
                        + " is a Redis Cluster node: add --redis.cluster (and list its seed nodes in --redis)");
            }
        }
        if (reached == 0) {
            throw new JedisConnectionException(
                    "cannot reach any " + (endpoint.cluster() ? "seed node of the Redis Cluster" : "Redis")
                            + " given in --redis: tried " + String.join(", ", failures));
        }
        if (!serving) throw down;
    }

    /**
     * {@code CLUSTER NODES} of a node that says {@code cluster_state:fail} (it answers CLUSTERDOWN), or null if
     * it serves or its ACL refuses {@code CLUSTER INFO}.
     */
    private static String clusterNodesIfDown(Jedis j) {
        try {
            return j.clusterInfo().contains("cluster_state:fail") ? j.clusterNodes() : null;
        } catch (JedisDataException e) {
            return null;
        }
    }

    /** {@code cluster_enabled} of {@code INFO cluster}, or null if the ACL refuses INFO or the answer lacks it. */
    private static Boolean clusterEnabled(Jedis j) {
        String info;
        try {
            info = j.info("cluster");
        } catch (JedisDataException e) {
            return null;
        }
        for (String line : info.split("\r?\n")) {
            if (line.startsWith("cluster_enabled:")) return line.trim().endsWith(":1");
        }
        return null;
    }

    private static String rootMessage(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        return String.valueOf(root.getMessage());
    }
}
