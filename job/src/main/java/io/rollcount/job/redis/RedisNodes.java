package io.rollcount.job.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BiConsumer;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * The nodes that hold an endpoint's keys, for what no single command does across a Redis Cluster: a SCAN
 * sees the keys of one node only, so {@link #scan} walks every master of the cluster (found with
 * {@code CLUSTER NODES} on the first seed that answers), or the one server of a single endpoint.
 */
public final class RedisNodes {
    private RedisNodes() {}

    /** The masters of the cluster that are not failed, or the single server itself. */
    public static List<HostAndPort> masters(RedisEndpoint endpoint) {
        if (!endpoint.cluster()) return List.of(new HostAndPort(endpoint.host(), endpoint.port()));
        JedisConnectionException last = null;
        for (String seed : endpoint.seeds()) {
            HostAndPort s = HostAndPort.from(seed.replace("[", "").replace("]", ""));
            try (Jedis j = endpoint.connect(s.getHost(), s.getPort())) {
                return mastersOf(j.clusterNodes(), s.getHost());
            } catch (JedisConnectionException e) {
                last = e;
            }
        }
        throw new JedisConnectionException(
                "cannot reach any seed node of " + endpoint + " to list the cluster's masters", last);
    }

    /**
     * The ids of every node of the cluster ({@code CLUSTER NODES} on the first seed that answers), sorted; they
     * stay with the nodes through failovers and restarts (they live in each node's {@code nodes.conf}).
     */
    public static List<String> nodeIds(RedisEndpoint endpoint) {
        JedisConnectionException last = null;
        for (String seed : endpoint.seeds()) {
            HostAndPort s = HostAndPort.from(seed.replace("[", "").replace("]", ""));
            try (Jedis j = endpoint.connect(s.getHost(), s.getPort())) {
                return idsOf(j.clusterNodes());
            } catch (JedisConnectionException e) {
                last = e;
            }
        }
        throw new JedisConnectionException("cannot reach any seed node of " + endpoint + " to list its node ids", last);
    }

    /** The node ids of a {@code CLUSTER NODES} reply, sorted. */
    static List<String> idsOf(String clusterNodes) {
        List<String> out = new ArrayList<>();
        for (String line : clusterNodes.split("\\r?\\n")) {
            String id = line.trim().split(" ")[0];
            if (!id.isEmpty()) out.add(id);
        }
        out.sort(null);
        return out;
    }

    /** The masters in a {@code CLUSTER NODES} reply ({@code id host:port@cport flags master ...}); a node of no address takes {@code seedHost}. */
    static List<HostAndPort> mastersOf(String clusterNodes, String seedHost) {
        List<HostAndPort> out = new ArrayList<>();
        for (String line : clusterNodes.split("\\r?\\n")) {
            String[] f = line.trim().split(" ");
            if (f.length < 3) continue;
            List<String> flags = List.of(f[2].split(","));
            if (!flags.contains("master")
                    || flags.contains("fail")
                    || flags.contains("noaddr")
                    || flags.contains("handshake")) continue;
            String addr = f[1];
            int at = addr.indexOf('@');
            if (at >= 0) addr = addr.substring(0, at);
            int colon = addr.lastIndexOf(':');
            String host = addr.substring(0, colon);
            out.add(new HostAndPort(host.isEmpty() ? seedHost : host, Integer.parseInt(addr.substring(colon + 1))));
        }
        return out;
    }

    /**
     * The slots of each master in a {@code CLUSTER SLOTS} reply ({@code [[from, to, [host, port, id], replicas...],
     * ...]}), by master, in the order the reply first names them.
     */
    static List<java.util.BitSet> masterSlots(List<Object> clusterSlots) {
        java.util.Map<String, java.util.BitSet> byMaster = new java.util.LinkedHashMap<>();
        for (Object o : clusterSlots) {
            if (!(o instanceof List<?> range) || range.size() < 3 || !(range.get(2) instanceof List<?> master))
                continue;
            int from = ((Number) range.get(0)).intValue();
            int to = ((Number) range.get(1)).intValue();
            String node = text(master.get(0)) + ":" + master.get(1);
            byMaster.computeIfAbsent(node, n -> new java.util.BitSet(16384)).set(from, to + 1);
        }
        return new ArrayList<>(byMaster.values());
    }

    private static String text(Object o) {
        return o instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : String.valueOf(o);
    }

    /**
     * {@code CLUSTER SLOTS} (what the cluster client itself reads, so no further permission) of the first node of
     * a cluster client's topology that answers, or null for a client of a single server.
     */
    static List<Object> clusterSlots(redis.clients.jedis.UnifiedJedis client) {
        if (!(client instanceof redis.clients.jedis.RedisClusterClient cluster)) return null;
        RuntimeException last = null;
        for (redis.clients.jedis.ConnectionPool pool : cluster.getClusterNodes().values()) {
            try (redis.clients.jedis.Connection c = pool.getResource();
                    Jedis j = new Jedis(c)) {
                return j.clusterSlots();
            } catch (RuntimeException e) {
                last = e;
            }
        }
        throw last != null ? last : new JedisConnectionException("the cluster client knows no node");
    }

    /**
     * Calls {@code page} with each page of keys matching {@code match} on every master, and that master's
     * connection (to act on the keys where they are: a cluster node refuses a command whose keys span slots
     * it shares with no other key, so act per key).
     */
    public static void scan(RedisEndpoint endpoint, String match, BiConsumer<Jedis, List<String>> page) {
        ScanParams params = new ScanParams().match(match).count(10_000);
        for (HostAndPort node : masters(endpoint)) {
            try (Jedis j = endpoint.cluster() ? endpoint.connect(node.getHost(), node.getPort()) : endpoint.connect()) {
                String cursor = ScanParams.SCAN_POINTER_START;
                do {
                    ScanResult<String> r = j.scan(cursor, params);
                    if (!r.getResult().isEmpty()) page.accept(j, r.getResult());
                    cursor = r.getCursor();
                } while (!ScanParams.SCAN_POINTER_START.equals(cursor));
            }
        }
    }

    /** Deletes these keys of the node {@code j} is connected to, one UNLINK per key in a pipeline; returns how many existed. */
    public static long unlinkEach(Jedis j, List<String> keys) {
        var p = j.pipelined();
        List<redis.clients.jedis.Response<Long>> r = new ArrayList<>(keys.size());
        for (String k : keys) r.add(p.unlink(k));
        p.sync();
        long n = 0;
        for (var x : r) n += x.get();
        return n;
    }
}
