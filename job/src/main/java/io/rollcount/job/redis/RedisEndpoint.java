package io.rollcount.job.redis;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.Serializable;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Objects;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import javax.net.ssl.TrustManagerFactory;
import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * Where and how to reach one Redis server, or a Redis Cluster: host(s), port(s), database, ACL user, password
 * and TLS.
 *
 * <p>Parsed from {@code redis://[user[:password]@]host[:port][/db]} or {@code rediss://...} (TLS). With
 * {@code --redis.cluster} ({@link Builder#setCluster}) the URL lists the seed nodes of a Redis Cluster,
 * {@code redis://[user[:password]@]host:port,host2:port2,...}, user, password and TLS the same for every
 * node, no database; {@link #client()} is then a {@link RedisClusterClient} that routes every command by
 * the slot of its keys, and {@link #checkMode()} tells a seed list that mixes cluster and non-cluster
 * nodes, or a cluster node given without the option, apart from a working one. The
 * password may instead come from a file ({@code --redis.password-file}) or from
 * {@code $ROLLCOUNT_REDIS_PASSWORD}, so that it need not travel on a command line, where {@code ps}, the
 * shell history and the Flink web UI's job parameters would show it. Whatever its source, the password
 * never appears in {@link #toString()}, in a log line or in an exception message of this package: they
 * print {@code ***} in its place.
 *
 * <p>TLS ({@code rediss://}) verifies the server's certificate chain and host name (endpoint
 * identification {@code HTTPS}) against the JVM's default trust store ({@code -Djavax.net.ssl.trustStore}),
 * or against one CA certificate given as PEM ({@link Builder#setCaCertificatePem}, or the file named by
 * {@code $ROLLCOUNT_REDIS_CA} for the job). The CA certificate's bytes are kept in this object,
 * so it travels with the job to every TaskManager.
 *
 * <p>The setters of {@link #builder()} check what they are given at once and name themselves in their
 * messages ({@link InvalidSettingException}); {@code JobConnectors.redisEndpoint} maps the command line's
 * {@code --redis*} options to them.
 *
 * <p>Instances are immutable and {@link Serializable}: the sink ships one to each of its writers, which
 * open their own connections with {@link #connect()}.
 */
public final class RedisEndpoint implements Serializable {
    private static final long serialVersionUID = 1L;

    public static final String PASSWORD_ENV = "ROLLCOUNT_REDIS_PASSWORD";
    public static final String CA_ENV = "ROLLCOUNT_REDIS_CA";
    public static final int DEFAULT_PORT = 6379;

    private final String host;
    private final int port;
    private final int database;
    private final String user;
    private final String password;
    private final boolean tls;
    private final byte[] caCertificatePem;
    private final boolean verifyHostname;
    private final int connectTimeoutMillis;
    private final int socketTimeoutMillis;
    private final boolean cluster;
    /** The seed nodes: the first is {@link #host}:{@link #port}; more only for a cluster. */
    private final String[] seedHosts;

    private final int[] seedPorts;

    private RedisEndpoint(Builder b) {
        this.cluster = b.cluster;
        this.seedHosts = b.seedHosts.toArray(String[]::new);
        this.seedPorts = b.seedPorts.stream().mapToInt(Integer::intValue).toArray();
        this.host = b.host;
        this.port = b.port;
        this.database = b.database;
        this.user = b.user;
        this.password = b.password;
        this.tls = b.tls;
        this.caCertificatePem = b.caCertificatePem;
        this.verifyHostname = b.verifyHostname;
        this.connectTimeoutMillis = b.connectTimeoutMillis;
        this.socketTimeoutMillis = b.socketTimeoutMillis;
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Parses a URL that carries its password, if any, itself. */
    public static RedisEndpoint parse(String url) {
        return builder().setUrl(url).build();
    }

    public String host() {
        return host;
    }

    public int port() {
        return port;
    }

    public int database() {
        return database;
    }
    /** The ACL user, or null for the default user. */
    public String user() {
        return user;
    }

    public boolean hasPassword() {
        return password != null;
    }

    public boolean tls() {
        return tls;
    }
    /** Whether this endpoint is a Redis Cluster (its keys spread over nodes by slot): one script call then touches one slot only. */
    public boolean cluster() {
        return cluster;
    }

    /** The seed nodes ({@code host:port}, IPv6 hosts in brackets): one for a single server, all of {@code --redis} for a cluster. */
    public List<String> seeds() {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < seedHosts.length; i++) out.add(hostPort(seedHosts[i], seedPorts[i]));
        return out;
    }

    private static String hostPort(String h, int p) {
        return (h.indexOf(':') >= 0 ? "[" + h + "]" : h) + ":" + p;
    }

    /** The text to put in place of the password wherever something is printed. */
    static final String REDACTED = "***";

    /** {@code text} with every occurrence of the password replaced by {@code ***}. */
    public String redact(String text) {
        if (text == null || password == null || password.isEmpty()) return text;
        return text.replace(password, REDACTED);
    }

    /** The URL without the password (replaced by {@code ***}). */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(tls ? "rediss://" : "redis://");
        if (user != null || password != null) {
            if (user != null) sb.append(user);
            if (password != null) sb.append(':').append(REDACTED);
            sb.append('@');
        }
        sb.append(String.join(",", seeds()));
        if (database != 0) sb.append('/').append(database);
        return sb.toString();
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof RedisEndpoint e)) return false;
        return port == e.port
                && database == e.database
                && tls == e.tls
                && host.equals(e.host)
                && cluster == e.cluster
                && java.util.Arrays.equals(seedHosts, e.seedHosts)
                && java.util.Arrays.equals(seedPorts, e.seedPorts)
                && Objects.equals(user, e.user)
                && Objects.equals(password, e.password);
    }

    @Override
    public int hashCode() {
        return Objects.hash(host, port, database, user, tls);
    }

    /**
     * Opens a new connection and authenticates it (AUTH, SELECT and the TLS handshake happen on
     * connect). The caller owns it and must close it.
     *
     * @throws redis.clients.jedis.exceptions.JedisException if the server cannot be reached or refuses the
     *     credentials; its message never contains the password
     */
    public Jedis connect() {
        return connect(host, port);
    }

    /** {@link #connect()} to one node of this endpoint (a seed or a cluster node), with its credentials and TLS. */
    public Jedis connect(String nodeHost, int nodePort) {
        Jedis jedis = new Jedis(new HostAndPort(nodeHost, nodePort), clientConfig());
        try {
            jedis.ping();
        } catch (RuntimeException e) {
            jedis.close();
            throw e;
        }
        return jedis;
    }

    /**
     * A client of this endpoint for the job's writers and checks: {@link UnifiedJedis}, whose commands and
     * {@link UnifiedJedis#pipelined() pipelines} are the same API for one server and for a Redis Cluster. It
     * holds at most two connections; checked with a {@code PING}. The caller owns it and must close it.
     *
     * @throws redis.clients.jedis.exceptions.JedisException if the server cannot be reached or refuses the
     *     credentials; its message never contains the password
     */
    public UnifiedJedis client() {
        GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
        pool.setMaxTotal(2);
        pool.setMaxIdle(2);
        pool.setJmxEnabled(false);
        if (cluster) return clusterClient(pool);
        UnifiedJedis client = new RedisClient.Builder()
                .hostAndPort(host, port)
                .clientConfig(clientConfig())
                .poolConfig(pool)
                .build();
        try {
            client.ping();
        } catch (RuntimeException e) {
            client.close();
            throw e;
        }
        return client;
    }

    /**
     * A {@link RedisClusterClient} of the seed nodes, its pools of at most two connections per node. Its
     * commands follow MOVED/ASK redirections (up to 5 attempts within the socket timeout); its pipelines
     * ({@link redis.clients.jedis.ClusterPipeline}) route each command by the slot of its keys and do not
     * follow redirections: a writer retries the batch (every write is idempotent) on a new client, which
     * reads the topology afresh. If no seed answers as a cluster node, says why for each seed.
     */
    private UnifiedJedis clusterClient(GenericObjectPoolConfig<Connection> pool) {
        java.util.Set<HostAndPort> nodes = new java.util.LinkedHashSet<>();
        for (int i = 0; i < seedHosts.length; i++) nodes.add(new HostAndPort(seedHosts[i], seedPorts[i]));
        RedisClusterClient client;
        try {
            client = RedisClusterClient.builder()
                    .nodes(nodes)
                    .clientConfig(clientConfig())
                    .poolConfig(pool)
                    .maxAttempts(5)
                    .maxTotalRetriesDuration(java.time.Duration.ofMillis(socketTimeoutMillis))
                    .build();
        } catch (JedisClusterOperationException e) {
            // "Could not initialize cluster slots cache": find out which of unreachable, refused or not a cluster
            checkMode();
            throw new JedisClusterOperationException(
                    "no seed node of " + this + " answered as a Redis Cluster node: " + e.getMessage(), e);
        }
        return client;
    }

    /**
     * Checks the seed nodes against {@code --redis.cluster}, each with {@code INFO cluster}: throws an
     * {@link IllegalArgumentException} of one line naming the node and the option for a non-cluster node in
     * a cluster's seed list, or a cluster node given without {@code --redis.cluster}; a
     * {@link JedisConnectionException} naming every node tried if none can be reached; a
     * {@link RedisClusterDownException} naming the slots not covered if every seed reached says
     * {@code cluster_state:fail}. Unreachable seeds among reachable ones are fine (a seed may be down while the
     * cluster serves), and so is a seed that says fail while another serves. A user whose ACL refuses
     * {@code INFO} skips the check.
     */
    public void checkMode() {
        List<String> failures = new ArrayList<>();
        int reached = 0;
        boolean serving = false;
        RedisClusterDownException down = null;
        for (int i = 0; i < seedHosts.length; i++) {
            String node = hostPort(seedHosts[i], seedPorts[i]);
            Boolean enabled;
            String nodesIfDown = null;
            try (Jedis j = connect(seedHosts[i], seedPorts[i])) {
                reached++;
                enabled = clusterEnabled(j);
                if (cluster && Boolean.TRUE.equals(enabled)) nodesIfDown = clusterNodesIfDown(j);
            } catch (JedisConnectionException e) {
                failures.add(node + " (" + redact(rootMessage(e)) + ")");
                continue;
            }
            if (nodesIfDown == null) serving = true;
            else if (down == null) down = RedisClusterDownException.of(node, nodesIfDown);
            if (enabled == null) continue;
            if (cluster && !enabled) {
                throw new IllegalArgumentException(
                        "--redis: seed node " + node + " is not a Redis Cluster node (cluster_enabled:0)"
                                + (seedHosts.length > 1 ? ": the list mixes cluster and non-cluster nodes" : "")
                                + "; with --redis.cluster every node must be a cluster node");
            }
            if (!cluster && enabled) {
                throw new IllegalArgumentException("--redis: " + node
                        + " is a Redis Cluster node: add --redis.cluster (and list its seed nodes in --redis)");
            }
        }
        if (reached == 0) {
            throw new JedisConnectionException(
                    "cannot reach any " + (cluster ? "seed node of the Redis Cluster" : "Redis")
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

    private JedisClientConfig clientConfig() {
        DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(connectTimeoutMillis)
                .socketTimeoutMillis(socketTimeoutMillis)
                .database(database)
                // no CLIENT SETNAME / SETINFO: the ACL user needs no permission beyond the sink's commands
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
                .resp2();
        if (user != null) config.user(user);
        if (password != null) config.password(password);
        if (tls) {
            // Jedis checks the host name (HTTPS identification) unless given parameters without it
            SSLParameters params = new SSLParameters();
            if (verifyHostname) params.setEndpointIdentificationAlgorithm("HTTPS");
            config.ssl(true).sslSocketFactory(sslSocketFactory()).sslParameters(params);
        }
        return config.build();
    }

    private SSLSocketFactory sslSocketFactory() {
        try {
            if (caCertificatePem == null) {
                return SSLContext.getDefault().getSocketFactory();
            }
            KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
            trust.load(null, null);
            Collection<? extends Certificate> certs = CertificateFactory.getInstance("X.509")
                    .generateCertificates(new ByteArrayInputStream(caCertificatePem));
            int i = 0;
            for (Certificate c : certs) trust.setCertificateEntry("redis-ca-" + i++, c);
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            SSLContext ctx = SSLContext.getInstance("TLS");
            ctx.init(null, tmf.getTrustManagers(), null);
            return ctx.getSocketFactory();
        } catch (GeneralSecurityException | IOException e) {
            throw new IllegalStateException("cannot set up TLS for " + this + ": " + e.getMessage(), e);
        }
    }

    /**
     * Builds a {@link RedisEndpoint}. Each setter checks its value at once and names itself when it refuses
     * one ({@link InvalidSettingException}); {@link #build()} checks what depends on several settings: the URL
     * against {@link #setCluster} (a list of nodes, a database), and a password in the URL and a password file
     * at the same time (which one would be meant?). The fallback password ({@code $ROLLCOUNT_REDIS_PASSWORD})
     * is used only where neither gives one.
     */
    public static final class Builder {
        static final String NAME = "RedisEndpoint.builder()";

        private String url;
        private String host;
        private int port = DEFAULT_PORT;
        private int database;
        private String user;
        private String password;
        private String urlPassword;
        private String filePassword;
        private String fallbackPassword;
        private boolean tls;
        private byte[] caCertificatePem;
        private boolean verifyHostname = true;
        private int connectTimeoutMillis = 2_000;
        private int socketTimeoutMillis = 10_000;
        private boolean cluster;
        private final List<String> seedHosts = new ArrayList<>();
        private final List<Integer> seedPorts = new ArrayList<>();
        /** Whether {@link #parseUrl} checks the URL's syntax only, whatever {@link #cluster} says (in {@link #setUrl}). */
        private boolean syntaxOnly;

        private Builder() {}

        private static InvalidSettingException invalid(String setter, String problem) {
            return new InvalidSettingException(NAME, setter, problem);
        }

        /**
         * {@code redis://[user[:password]@]host[:port][/db]} or {@code rediss://...}, user and password
         * percent-encoded; with {@link #setCluster} a list of seed nodes. Checks the syntax at once; whether a
         * list or a database fits {@link #setCluster} is checked by {@link #build()}.
         */
        public Builder setUrl(String url) {
            if (url == null || url.isBlank()) {
                throw invalid("setUrl", "the Redis URL must be set (redis://host:port or rediss://host:port)");
            }
            this.url = url;
            syntaxOnly = true;
            try {
                parseUrl(url.trim());
            } finally {
                syntaxOnly = false;
            }
            return this;
        }

        /**
         * The URL's host list {@code host:port,host2:port2,...} are seed nodes of a Redis Cluster (user, password
         * and TLS of the first apply to all; database 0 only).
         */
        public Builder setCluster(boolean cluster) {
            this.cluster = cluster;
            return this;
        }

        /** Reads the password from the first line of this file now (trailing newline and spaces removed); null for none. */
        public Builder setPasswordFile(Path file) {
            if (file == null) {
                filePassword = null;
                return this;
            }
            String text;
            try {
                text = Files.readString(file, StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw invalid(
                        "setPasswordFile",
                        "cannot read " + file + ": " + e.getClass().getSimpleName());
            }
            int nl = text.indexOf('\n');
            String read = (nl >= 0 ? text.substring(0, nl) : text).strip();
            if (read.isEmpty()) throw invalid("setPasswordFile", file + " is empty");
            filePassword = read;
            return this;
        }

        /** The password where neither the URL nor a password file gives one ({@code $ROLLCOUNT_REDIS_PASSWORD}). */
        public Builder setFallbackPassword(String password) {
            this.fallbackPassword = password;
            return this;
        }

        /** Trust exactly the CA certificate(s) in this PEM file (read now) for {@code rediss://}, instead of the JVM's trust store. */
        public Builder setCaCertificatePem(Path file) {
            try {
                this.caCertificatePem = Files.readAllBytes(file);
            } catch (IOException e) {
                throw invalid("setCaCertificatePem", "cannot read " + file + ": " + e.getMessage());
            }
            return this;
        }

        /** Trust exactly the CA certificate(s) in these PEM bytes for {@code rediss://}. */
        public Builder setCaCertificatePem(byte[] pem) {
            this.caCertificatePem = pem == null ? null : pem.clone();
            return this;
        }

        /** Whether {@code rediss://} checks that the certificate names the host (default true). */
        public Builder setVerifyHostname(boolean verify) {
            this.verifyHostname = verify;
            return this;
        }

        /** How long connecting may take (default 2 s); positive. */
        public Builder setConnectTimeoutMillis(int millis) {
            if (millis <= 0) throw invalid("setConnectTimeoutMillis", "must be positive, got " + millis + " ms");
            this.connectTimeoutMillis = millis;
            return this;
        }

        /** How long one reply may take before the connection counts as broken (default 10 s); positive. */
        public Builder setSocketTimeoutMillis(int millis) {
            if (millis <= 0) throw invalid("setSocketTimeoutMillis", "must be positive, got " + millis + " ms");
            this.socketTimeoutMillis = millis;
            return this;
        }

        public RedisEndpoint build() {
            if (url == null) {
                throw invalid("setUrl", "the Redis URL must be set (redis://host:port or rediss://host:port)");
            }
            parseUrl(url.trim());
            if (urlPassword != null && filePassword != null) {
                throw invalid(
                        "setPasswordFile", "the {setUrl} URL carries a password already; give it in one place only");
            }
            password = urlPassword != null
                    ? urlPassword
                    : filePassword != null
                            ? filePassword
                            : (fallbackPassword != null && !fallbackPassword.isEmpty() ? fallbackPassword : null);
            return new RedisEndpoint(this);
        }

        /** Parses by hand: java.net.URI would quote the whole URL, password included, in its errors. */
        private void parseUrl(String u) {
            user = null;
            urlPassword = null;
            database = 0;
            String rest;
            if (u.regionMatches(true, 0, "redis://", 0, 8)) {
                tls = false;
                rest = u.substring(8);
            } else if (u.regionMatches(true, 0, "rediss://", 0, 9)) {
                tls = true;
                rest = u.substring(9);
            } else {
                throw invalid("setUrl", "must start with redis:// or rediss:// (got " + schemeOf(u) + ")");
            }
            // a cluster's user info belongs to the first seed: it ends before the first ',' (percent-encode a ',' in
            // it)
            int comma = cluster ? rest.indexOf(',') : -1;
            int at = comma >= 0 ? rest.lastIndexOf('@', comma) : rest.lastIndexOf('@');
            if (at >= 0) {
                String userInfo = rest.substring(0, at);
                rest = rest.substring(at + 1);
                int colon = userInfo.indexOf(':');
                String u1 = colon >= 0 ? userInfo.substring(0, colon) : userInfo;
                String p1 = colon >= 0 ? userInfo.substring(colon + 1) : null;
                user = u1.isEmpty() ? null : decode(u1, "user name");
                urlPassword = p1 == null || p1.isEmpty() ? null : decode(p1, "password");
            }
            if (rest.indexOf('?') >= 0 || rest.indexOf('#') >= 0) {
                throw invalid("setUrl", "query parameters are not supported in " + redactedUrl());
            }
            String[] nodes = rest.split(",", -1);
            if (nodes.length > 1 && !cluster && !syntaxOnly) {
                throw invalid(
                        "setUrl",
                        "a list of nodes is the seed list of a Redis Cluster: add {setCluster} (got " + redactedUrl()
                                + ")");
            }
            String hostPort = nodes[0];
            String path = "";
            int slash = hostPort.indexOf('/');
            if (slash >= 0) {
                path = hostPort.substring(slash + 1);
                hostPort = hostPort.substring(0, slash);
            }
            Object[] first = hostAndPort(hostPort);
            host = (String) first[0];
            port = (Integer) first[1];
            seedHosts.clear();
            seedPorts.clear();
            seedHosts.add(host);
            seedPorts.add(port);
            for (int i = 1; i < nodes.length; i++) {
                String n = nodes[i].trim();
                String scheme = tls ? "rediss://" : "redis://";
                if (n.regionMatches(true, 0, "redis://", 0, 8) || n.regionMatches(true, 0, "rediss://", 0, 9)) {
                    if (!n.regionMatches(true, 0, scheme, 0, scheme.length())) {
                        throw invalid(
                                "setUrl",
                                "every seed node takes the scheme of the first (" + scheme + ") in " + redactedUrl());
                    }
                    n = n.substring(scheme.length());
                }
                if (n.indexOf('@') >= 0 || n.indexOf('/') >= 0) {
                    throw invalid(
                            "setUrl",
                            "seed node " + (i + 1)
                                    + " must be host:port (user, password and TLS come from the first) in "
                                    + redactedUrl());
                }
                Object[] hp = hostAndPort(n);
                seedHosts.add((String) hp[0]);
                seedPorts.add((Integer) hp[1]);
            }
            if (!path.isEmpty()) {
                try {
                    database = Integer.parseInt(path);
                } catch (NumberFormatException e) {
                    throw invalid("setUrl", "the database after '/' must be a number in " + redactedUrl());
                }
                if (database < 0) throw invalid("setUrl", "the database must not be negative in " + redactedUrl());
            }
            if (cluster && !syntaxOnly && database != 0) {
                throw invalid(
                        "setUrl",
                        "a Redis Cluster has database 0 only: remove '/" + database + "' ({setCluster} is set)");
            }
        }

        /** {host, port} of {@code host[:port]} or {@code [v6]:port}; the default port where none is given. */
        private Object[] hostAndPort(String hostPort) {
            String h;
            String portText = null;
            int p = DEFAULT_PORT;
            if (hostPort.startsWith("[")) {
                int close = hostPort.indexOf(']');
                if (close < 0) throw invalid("setUrl", "unclosed '[' in the host of " + redactedUrl());
                h = hostPort.substring(1, close);
                String after = hostPort.substring(close + 1);
                if (after.startsWith(":")) portText = after.substring(1);
                else if (!after.isEmpty())
                    throw invalid("setUrl", "unexpected text after the host in " + redactedUrl());
            } else {
                int colon = hostPort.lastIndexOf(':');
                h = colon >= 0 ? hostPort.substring(0, colon) : hostPort;
                if (colon >= 0) portText = hostPort.substring(colon + 1);
            }
            if (h.isEmpty()) throw invalid("setUrl", "the host is missing in " + redactedUrl());
            if (portText != null) {
                try {
                    p = Integer.parseInt(portText);
                } catch (NumberFormatException e) {
                    throw invalid("setUrl", "the port must be a number in " + redactedUrl());
                }
                if (p < 1 || p > 65535) throw invalid("setUrl", "the port must be 1 to 65535 in " + redactedUrl());
            }
            return new Object[] {h, p};
        }

        private String decode(String s, String what) {
            try {
                return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw invalid("setUrl", "bad percent-encoding in the " + what + " of " + redactedUrl());
            }
        }

        private static String schemeOf(String u) {
            int i = u.indexOf("://");
            return i >= 0 ? "'" + u.substring(0, i) + "://'" : "no scheme";
        }

        /** The URL with its user info's password part masked, for error messages. */
        private String redactedUrl() {
            String u = url.trim();
            int schemeEnd = u.indexOf("://");
            if (schemeEnd < 0) return "the URL";
            String rest = u.substring(schemeEnd + 3);
            int at = rest.lastIndexOf('@');
            if (at < 0) return u;
            String userInfo = rest.substring(0, at);
            int colon = userInfo.indexOf(':');
            String shown = colon >= 0 ? userInfo.substring(0, colon) + ":" + REDACTED : userInfo;
            return u.substring(0, schemeEnd + 3) + shown + rest.substring(at);
        }
    }
}
