package io.rollcount.job.redis;

import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.net.ssl.SSLParameters;
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

    private RedisEndpoint(Builder b, RedisUrl u, String password) {
        this.cluster = b.cluster;
        this.seedHosts = u.seedHosts.toArray(String[]::new);
        this.seedPorts = u.seedPorts.stream().mapToInt(Integer::intValue).toArray();
        this.host = seedHosts[0];
        this.port = seedPorts[0];
        this.database = u.database;
        this.user = u.user;
        this.password = password;
        this.tls = u.tls;
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
        new RedisClusterMode(this, seedHosts, seedPorts).check();
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
            config.ssl(true)
                    .sslSocketFactory(RedisTls.socketFactory(caCertificatePem, this))
                    .sslParameters(params);
        }
        return config.build();
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
        private String filePassword;
        private String fallbackPassword;
        private byte[] caCertificatePem;
        private boolean verifyHostname = true;
        private int connectTimeoutMillis = 2_000;
        private int socketTimeoutMillis = 10_000;
        private boolean cluster;

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
            RedisUrl.parse(url.trim(), cluster, true);
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
            RedisUrl u = RedisUrl.parse(url.trim(), cluster, false);
            if (u.password != null && filePassword != null) {
                throw invalid(
                        "setPasswordFile", "the {setUrl} URL carries a password already; give it in one place only");
            }
            String password = u.password != null
                    ? u.password
                    : filePassword != null
                            ? filePassword
                            : (fallbackPassword != null && !fallbackPassword.isEmpty() ? fallbackPassword : null);
            return new RedisEndpoint(this, u, password);
        }
    }
}
