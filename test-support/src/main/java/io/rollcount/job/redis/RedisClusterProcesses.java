package io.rollcount.job.redis;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * A real Redis Cluster of 3 masters and 3 replicas for a test class: six {@code redis-server
 * --cluster-enabled yes} child processes on free loopback ports (see {@link #freeNodePort}) in a folder under {@code target/}, joined by
 * {@code redis-cli --cluster create ... --cluster-replicas 1}, ready once every node says
 * {@code cluster_state:ok} and every master has its replica in sync. A node that misses
 * {@value #NODE_TIMEOUT_MILLIS} ms is failed over. Register it as a static extension; it ends every process
 * after the class, whatever happened:
 * <pre>{@code
 * @RegisterExtension
 * static final RedisClusterProcesses CLUSTER = new RedisClusterProcesses();
 * }</pre>
 */
public final class RedisClusterProcesses implements BeforeAllCallback, AfterAllCallback {
    public static final int NODES = 6;
    public static final int NODE_TIMEOUT_MILLIS = 2_000;

    private final Map<Integer, Process> processes = new LinkedHashMap<>();
    private final List<Integer> ports = new ArrayList<>();
    private Path dir;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
    }

    /** Starts the six nodes and creates the cluster; ends whatever started if that fails. */
    public void start() throws Exception {
        Path base = Path.of("target", "redis-clusters").toAbsolutePath();
        Files.createDirectories(base);
        dir = Files.createTempDirectory(base, "cluster-");
        try {
            for (int i = 0; i < NODES; i++) ports.add(launchNode());
            List<String> create = new ArrayList<>(List.of("redis-cli", "--cluster", "create"));
            for (int port : ports) create.add("127.0.0.1:" + port);
            create.addAll(List.of("--cluster-replicas", "1", "--cluster-yes"));
            run(create, 60);
            awaitHealthy(60_000);
        } catch (Exception | Error e) {
            close();
            throw e;
        }
    }

    /**
     * Starts one node on a port of {@link #freeNodePort} and waits until it listens. A node that could not
     * bind after all (a client socket took its port or its bus port in between) exits at once: it is started
     * again on other ports, at most {@value #LAUNCH_ATTEMPTS} times in all. Returns its port.
     */
    private int launchNode() throws IOException, InterruptedException {
        IllegalStateException last = null;
        for (int attempt = 0; attempt < LAUNCH_ATTEMPTS; attempt++) {
            int port = freeNodePort();
            launch(port);
            try {
                awaitListening(port);
                return port;
            } catch (IllegalStateException e) {
                last = e;
                Process p = processes.remove(port);
                if (p != null) p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        throw last;
    }

    private static final int LAUNCH_ATTEMPTS = 3;
    /** Node ports are drawn from here: the port and its cluster bus port (+10000) both below Linux's ephemeral range (32768-60999). */
    private static final int FIRST_NODE_PORT = 20_000;

    private static final int LAST_NODE_PORT = 22_767;

    /**
     * A port whose cluster bus port (the port + 10000) is free too, both outside the ephemeral range from
     * which the kernel gives client sockets their local ports: a node on an ephemeral port (as
     * {@code ServerSocket(0)} hands out) could find its bus port taken by any of the tests' many client
     * connections, and exit ({@code RedisClusterFailoverIT} once failed with "did not listen within 10 s").
     */
    private static int freeNodePort() throws IOException {
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int i = 0; i < 200; i++) {
            int port = random.nextInt(FIRST_NODE_PORT, LAST_NODE_PORT + 1);
            if (bindable(port) && bindable(port + 10_000)) return port;
        }
        throw new IOException("no free port pair (port, port + 10000) in " + FIRST_NODE_PORT + "-" + LAST_NODE_PORT);
    }

    private static boolean bindable(int port) {
        try (java.net.ServerSocket s = new java.net.ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(new InetSocketAddress(java.net.InetAddress.getLoopbackAddress(), port), 1);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private void launch(int port) throws IOException {
        Path nodeDir = dir.resolve(Integer.toString(port));
        Files.createDirectories(nodeDir);
        List<String> cmd = List.of(
                "redis-server",
                "--port",
                Integer.toString(port),
                "--bind",
                "127.0.0.1",
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                nodeDir.resolve("nodes.conf").toString(),
                "--cluster-node-timeout",
                Integer.toString(NODE_TIMEOUT_MILLIS),
                "--save",
                "",
                "--appendonly",
                "no",
                "--daemonize",
                "no",
                "--dir",
                nodeDir.toString(),
                "--logfile",
                nodeDir.resolve("redis.log").toString());
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(new File(nodeDir.toFile(), "stdout.log")))
                .start();
        processes.put(port, p);
    }

    private void awaitListening(int port) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            Process p = processes.get(port);
            if (p != null && !p.isAlive()) {
                throw new IllegalStateException("redis-server on " + port + " exited (" + p.exitValue() + "): "
                        + tail(dir.resolve(Integer.toString(port)).resolve("redis.log")));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException e) {
                Thread.sleep(20);
            }
        }
        throw new IllegalStateException("redis-server did not listen on " + port + " within 10 s");
    }

    /** The last lines of a node's log, or "" if it has none. */
    private static String tail(Path log) {
        try {
            List<String> lines = Files.exists(log) ? Files.readAllLines(log) : List.of();
            return String.join(" | ", lines.subList(Math.max(0, lines.size() - 3), lines.size()));
        } catch (IOException e) {
            return "";
        }
    }

    /** Runs a redis-cli command, failing with its output unless it exits 0 within the time. */
    public String run(List<String> cmd, int timeoutSeconds) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException(String.join(" ", cmd) + " did not end within " + timeoutSeconds + " s");
        }
        String text = new String(out);
        if (p.exitValue() != 0)
            throw new IllegalStateException(String.join(" ", cmd) + " failed (" + p.exitValue() + "): " + text);
        return text;
    }

    /**
     * Waits until every live node says {@code cluster_state:ok}, agrees on the masters of all 16384 slots,
     * and every master with a live replica has it in sync (so that WAIT 1 can succeed).
     */
    public void awaitHealthy(long timeoutMillis) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMillis;
        String last = "";
        while (System.currentTimeMillis() < deadline) {
            try {
                last = health();
                if (last == null) return;
            } catch (RuntimeException e) {
                last = e.toString();
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the Redis Cluster is not healthy after " + timeoutMillis + " ms: " + last);
    }

    private String health() {
        Set<String> views = new HashSet<>();
        for (int port : livePorts()) {
            try (Jedis j = new Jedis("127.0.0.1", port)) {
                String info = j.clusterInfo();
                if (!info.contains("cluster_state:ok"))
                    return port + " says " + info.lines().findFirst().orElse("");
                if (!info.contains("cluster_slots_assigned:16384")) return port + " has not every slot assigned";
                views.add(mastersView(j.clusterNodes()));
                if (j.info("replication").contains("role:master")) {
                    String repl = j.info("replication");
                    boolean hasLiveReplica = repl.contains("connected_slaves:1");
                    boolean expectsReplica = replicasOf(port).stream().anyMatch(processes.keySet()::contains);
                    if (expectsReplica && !hasLiveReplica) return "master " + port + " waits for its replica";
                    if (hasLiveReplica && !repl.contains("state=online"))
                        return "the replica of " + port + " is not online";
                }
            }
        }
        if (views.size() != 1) return "nodes disagree about the masters: " + views;
        return null;
    }

    /** The live masters' addresses and slot ranges, as one node sees them (for agreement between nodes). */
    private static String mastersView(String clusterNodes) {
        List<String> masters = new ArrayList<>();
        for (String line : clusterNodes.split("\n")) {
            String[] f = line.trim().split(" ");
            if (f.length < 9 || !f[2].contains("master") || f[2].contains("fail")) continue;
            masters.add(f[1].replaceAll("@.*", "") + " "
                    + String.join(" ", List.of(f).subList(8, f.length)));
        }
        masters.sort(null);
        return masters.toString();
    }

    /** Ports of the nodes still running. */
    public List<Integer> livePorts() {
        List<Integer> out = new ArrayList<>();
        processes.forEach((port, p) -> {
            if (p.isAlive()) out.add(port);
        });
        return out;
    }

    /** Ports of the live masters. */
    public List<Integer> masterPorts() {
        List<Integer> out = new ArrayList<>();
        for (int port : livePorts()) {
            try (Jedis j = new Jedis("127.0.0.1", port)) {
                if (j.info("replication").contains("role:master")) out.add(port);
            }
        }
        return out;
    }

    /** The ports of the replicas of this master, as the cluster lists them. */
    public List<Integer> replicasOf(int masterPort) {
        String id = nodeId(masterPort);
        List<Integer> out = new ArrayList<>();
        for (int port : livePorts()) {
            if (port == masterPort) continue;
            try (Jedis j = new Jedis("127.0.0.1", port)) {
                for (String line : j.clusterNodes().split("\n")) {
                    String[] f = line.trim().split(" ");
                    if (f.length > 3 && f[2].contains("myself") && f[3].equals(id)) out.add(port);
                }
            }
        }
        return out;
    }

    /** The cluster node id of the node on this port. */
    public String nodeId(int port) {
        try (Jedis j = new Jedis("127.0.0.1", port)) {
            return j.clusterMyId();
        }
    }

    /** {@code kill -9} of the node on this port (SIGKILL: no shutdown, no goodbye to the cluster). */
    public void kill9(int port) throws InterruptedException {
        Process p = processes.get(port);
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
    }

    /** {@code redis://127.0.0.1:P1,127.0.0.1:P2,...}: every node as a seed (the option {@code --redis} with {@code --redis.cluster}). */
    public String url() {
        StringBuilder sb = new StringBuilder("redis://");
        for (int i = 0; i < ports.size(); i++)
            sb.append(i == 0 ? "" : ",").append("127.0.0.1:").append(ports.get(i));
        return sb.toString();
    }

    /** A cluster client for the test's own reads (the caller closes it). */
    public RedisClusterClient client() {
        Set<HostAndPort> seeds = new HashSet<>();
        for (int port : livePorts()) seeds.add(new HostAndPort("127.0.0.1", port));
        return RedisClusterClient.create(seeds);
    }

    /**
     * What each node is, for a failure message: per process its port, whether it lives, its role, replica
     * link, key count and the keys of {@code prefix}, and the last lines of its log.
     */
    public String describe(String prefix) {
        StringBuilder sb = new StringBuilder();
        processes.forEach((port, p) -> {
            sb.append("node ").append(port).append(p.isAlive() ? " alive" : " dead");
            if (p.isAlive()) {
                try (Jedis j = new Jedis("127.0.0.1", port)) {
                    for (String line : j.info("replication").split("\\r?\\n")) {
                        if (line.startsWith("role:")
                                || line.startsWith("connected_slaves:")
                                || line.startsWith("master_link_status:")
                                || line.startsWith("slave0:")
                                || line.startsWith("master_port:"))
                            sb.append(' ').append(line);
                    }
                    sb.append(" dbsize:").append(j.dbSize());
                    String cursor = ScanParams.SCAN_POINTER_START;
                    long keys = 0;
                    do {
                        ScanResult<String> r = j.scan(
                                cursor, new ScanParams().match(prefix + ":*").count(1000));
                        keys += r.getResult().size();
                        cursor = r.getCursor();
                    } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
                    sb.append(" prefix_keys:").append(keys);
                } catch (RuntimeException e) {
                    sb.append(" unreadable: ").append(e);
                }
            }
            sb.append('\n');
            try {
                List<String> log =
                        Files.readAllLines(dir.resolve(Integer.toString(port)).resolve("redis.log"));
                for (String line : log.subList(Math.max(0, log.size() - 25), log.size()))
                    sb.append("  ").append(line).append('\n');
            } catch (IOException e) {
                sb.append("  (no log: ").append(e).append(")\n");
            }
        });
        return sb.toString();
    }

    /** Every key matching {@code prefix:*}, by master port. */
    public Map<Integer, List<String>> keysByMaster(String prefix) {
        Map<Integer, List<String>> out = new HashMap<>();
        for (int port : masterPorts()) {
            List<String> keys = new ArrayList<>();
            try (Jedis j = new Jedis("127.0.0.1", port)) {
                String cursor = ScanParams.SCAN_POINTER_START;
                ScanParams params = new ScanParams().match(prefix + ":*").count(1000);
                do {
                    ScanResult<String> r = j.scan(cursor, params);
                    keys.addAll(r.getResult());
                    cursor = r.getCursor();
                } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
            }
            out.put(port, keys);
        }
        return out;
    }

    /** Every key matching {@code prefix:*} on the masters. */
    public List<String> keys(String prefix) {
        List<String> out = new ArrayList<>();
        keysByMaster(prefix).values().forEach(out::addAll);
        return out;
    }

    /** The slot ranges each live master serves, as {@code CLUSTER SLOTS} of one node says: port -> {from, to} pairs. */
    public Map<Integer, List<int[]>> slotsByMaster() {
        Map<Integer, List<int[]>> out = new HashMap<>();
        try (Jedis j = new Jedis("127.0.0.1", livePorts().get(0))) {
            for (Object o : j.clusterSlots()) {
                List<?> range = (List<?>) o;
                int from = ((Long) range.get(0)).intValue();
                int to = ((Long) range.get(1)).intValue();
                int port = ((Long) ((List<?>) range.get(2)).get(1)).intValue();
                out.computeIfAbsent(port, p -> new ArrayList<>()).add(new int[] {from, to});
            }
        }
        return out;
    }

    /** Ends every node (SIGKILL) and deletes the folder. */
    public void close() {
        for (Process p : processes.values()) {
            p.destroyForcibly();
        }
        for (Process p : processes.values()) {
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        processes.clear();
        if (dir != null) {
            try (var walk = Files.walk(dir)) {
                walk.sorted(java.util.Comparator.reverseOrder())
                        .forEach(f -> f.toFile().delete());
            } catch (IOException e) {
                // under target/: mvn clean removes it
            }
        }
    }
}
