package io.rollcount.job.redis.internal;

import io.rollcount.job.util.IoThreadOnly;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Redis Cluster only: each pipeline ends with {@code WAIT 1} to every master it wrote to, so that a batch
 * completes only once a replica has its writes, and a master killed after that loses none of them at failover.
 * Nothing is waited for on a single server.
 */
public final class ReplicaWait implements RetryingConnection.Listener {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaWait.class);
    /** How long a batch waits for a master's replica to acknowledge its writes ({@code WAIT}). */
    public static final long REPLICA_WAIT_MILLIS = 2_000;

    private final SinkMetrics metrics;
    /** The master ({@code host:port}) of each slot written to, as the client's topology said. */
    @IoThreadOnly
    private final Map<Integer, String> nodeOfSlot = new HashMap<>();
    /** Masters found without a replica, not waited for until the next connection. */
    @IoThreadOnly
    private final Set<String> noReplica = new HashSet<>();

    public ReplicaWait(SinkMetrics metrics) {
        this.metrics = metrics;
    }

    @Override
    public void connected(UnifiedJedis client) {}

    @Override
    public void disconnected() {
        nodeOfSlot.clear();
        noReplica.clear();
    }

    /**
     * Appends to the pipeline, after the calls, one {@code WAIT 1 <timeout>} per master that the keys' slots
     * map to, on the pipeline's own connection to that master (WAIT waits for the writes of its connection).
     * Masters known to have no replica are skipped. Returns the WAIT replies by master and a key of it.
     */
    public Map<String, Response<Long>> queue(UnifiedJedis j, AbstractPipeline p, List<String> keys) {
        if (!(j instanceof RedisClusterClient cluster)) return Map.of();
        Map<String, String> sampleKeyByNode = new LinkedHashMap<>();
        for (String key : keys) {
            if (key == null) continue;
            int slot = JedisClusterCRC16.getSlot(key);
            String node = nodeOfSlot.computeIfAbsent(slot, s -> {
                try (Connection conn = cluster.getConnectionFromSlot(s)) {
                    return conn.getHostAndPort().toString();
                }
            });
            sampleKeyByNode.putIfAbsent(node, key);
        }
        Map<String, Response<Long>> replies = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : sampleKeyByNode.entrySet()) {
            if (noReplica.contains(e.getKey())) continue;
            replies.put(e.getKey() + " " + e.getValue(), p.waitReplicas(e.getValue(), 1, REPLICA_WAIT_MILLIS));
            metrics.commands(1);
        }
        return replies;
    }

    /**
     * A master whose WAIT timed out: fine (and skipped from now on) if it has no replica connected, as after
     * its replica was promoted in place of a failed master; otherwise a transient NOREPLICAS error, and the
     * batch is sent again.
     */
    public void check(UnifiedJedis j, Map<String, Response<Long>> replies) {
        for (Map.Entry<String, Response<Long>> e : replies.entrySet()) {
            if (e.getValue().get() >= 1) continue;
            String node = e.getKey().substring(0, e.getKey().indexOf(' '));
            String sampleKey = e.getKey().substring(node.length() + 1);
            int replicas;
            try (Connection c = ((RedisClusterClient) j).getConnectionFromSlot(JedisClusterCRC16.getSlot(sampleKey));
                    Jedis n = new Jedis(c)) {
                replicas = connectedReplicas(n.info("replication"));
            }
            if (replicas > 0) {
                throw new JedisDataException("NOREPLICAS no replica of " + node + " acknowledged the batch within "
                        + REPLICA_WAIT_MILLIS + " ms");
            }
            LOG.warn(
                    "Redis Cluster master {} has no replica: writes to it are not waited for until the writer reconnects",
                    node);
            noReplica.add(node);
        }
    }

    private static int connectedReplicas(String infoReplication) {
        for (String line : infoReplication.split("\\r?\\n")) {
            if (line.startsWith("connected_slaves:"))
                return Integer.parseInt(
                        line.substring("connected_slaves:".length()).trim());
        }
        return 0;
    }
}
