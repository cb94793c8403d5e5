package io.rollcount.job.kafka;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.Time;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * A single-node Kafka broker in KRaft mode (one combined broker + controller), run in this JVM from Kafka's
 * own server classes ({@link KafkaRaftServer}), for {@code ./rollcount kafka}, the demo and the tests.
 *
 * <p>The client listener is on a fixed loopback port ({@code 0}: a free one, chosen once and kept for the
 * life of this object) and the data lives in a fixed folder, formatted on first use only. So
 * {@link #stop()} then {@link #start()} (or a new broker on the same port and folder) brings the same
 * topics, records, committed offsets and transactions back.
 *
 * <p>Settings: the internal topics ({@code __consumer_offsets}, {@code __transaction_state}) have
 * replication factor 1 and min ISR 1, as a single node needs, or transactions and consumer groups hang;
 * {@code transaction.max.timeout.ms} is left at Kafka's default (15 min), so that the job's own
 * transaction timeout is proven against a broker with default settings. The controller quorum is static
 * ({@code controller.quorum.voters}) so that the controller port may change between restarts.
 *
 * <p>From a test: {@code try (KafkaBroker b = new KafkaBroker(0, dir).start()) { b.bootstrap(); ... }}.
 * From the command line: {@link #runForeground(int, Path)} or {@link #main(String[])}.
 */
public final class KafkaBroker implements AutoCloseable {
    private static final String HOST = "127.0.0.1";
    private static final int NODE_ID = 1;

    private final Path dir;
    private final Map<String, String> overrides;
    private final SecurityProtocol clientProtocol;
    private final String saslMechanism;
    private final Map<String, String> scramUsers;
    private int port;
    private int internalPort;
    private KafkaRaftServer server;

    /** A plain (PLAINTEXT) broker on {@code 127.0.0.1:port} ({@code 0}: a free port) with its data in {@code dir}. */
    public KafkaBroker(int port, Path dir) {
        this(builder().port(port).dir(dir));
    }

    private KafkaBroker(Builder b) {
        if (b.dir == null) throw new IllegalArgumentException("KafkaBroker: a data folder is required");
        if (b.port < 0 || b.port > 65535)
            throw new IllegalArgumentException("KafkaBroker: port " + b.port + " is out of range");
        this.dir = b.dir.toAbsolutePath();
        this.port = b.port;
        this.overrides = new LinkedHashMap<>(b.overrides);
        this.clientProtocol = b.protocol;
        this.saslMechanism = b.saslMechanism;
        this.scramUsers = new LinkedHashMap<>(b.scramUsers);
    }

    public static Builder builder() {
        return new Builder();
    }

    /** Options of a broker; the defaults are a PLAINTEXT listener on a free port. */
    public static final class Builder {
        private int port;
        private Path dir;
        private final Map<String, String> overrides = new LinkedHashMap<>();
        private SecurityProtocol protocol = SecurityProtocol.PLAINTEXT;
        private String saslMechanism;
        private final Map<String, String> scramUsers = new LinkedHashMap<>();

        public Builder port(int port) {
            this.port = port;
            return this;
        }

        public Builder dir(Path dir) {
            this.dir = dir;
            return this;
        }
        /** Any broker setting, applied last (for the client listener use the prefix {@code listener.name.client.}). */
        public Builder config(String key, String value) {
            overrides.put(key, value);
            return this;
        }

        /**
         * Clients must authenticate with SASL/SCRAM-SHA-256 on the client listener ({@code ssl}: over TLS,
         * SASL_SSL, else SASL_PLAINTEXT). The broker itself and {@link #adminProperties()} use an internal
         * PLAINTEXT loopback listener, so that users are created without a chicken-and-egg problem.
         */
        public Builder scram(boolean ssl) {
            this.protocol = ssl ? SecurityProtocol.SASL_SSL : SecurityProtocol.SASL_PLAINTEXT;
            this.saslMechanism = "SCRAM-SHA-256";
            return this;
        }

        /** A SCRAM-SHA-256 user created at every start (idempotent). */
        public Builder scramUser(String user, String password) {
            scramUsers.put(user, password);
            return this;
        }

        /** TLS on the client listener with this PKCS12 key store (use with {@link #scram(boolean)} true, or alone for SSL). */
        public Builder sslKeyStore(Path keyStore, String password) {
            if (protocol == SecurityProtocol.PLAINTEXT) protocol = SecurityProtocol.SSL;
            overrides.put(
                    "listener.name.client.ssl.keystore.location",
                    keyStore.toAbsolutePath().toString());
            overrides.put("listener.name.client.ssl.keystore.type", "PKCS12");
            overrides.put("listener.name.client.ssl.keystore.password", password);
            overrides.put("listener.name.client.ssl.key.password", password);
            return this;
        }

        public KafkaBroker build() {
            return new KafkaBroker(this);
        }
    }

    /** Formats the data folder if it is new, starts the broker and returns once clients can use it. */
    public synchronized KafkaBroker start() throws Exception {
        if (server != null) return this;
        Files.createDirectories(dir);
        if (port == 0) port = freePort();
        else checkFree(port);
        internalPort = clientProtocol == SecurityProtocol.PLAINTEXT ? 0 : freePort();
        Properties props = serverProperties(freePort());
        Path config = dir.resolve("server.properties");
        try (OutputStream out = Files.newOutputStream(config)) {
            props.store(out, "Written by io.rollcount.job.kafka.KafkaBroker at each start; the data is in " + logDir());
        }
        if (!Files.exists(logDir().resolve("meta.properties"))) format(config);

        KafkaRaftServer s = new KafkaRaftServer(KafkaConfig.fromProps(props, false), Time.SYSTEM);
        try {
            s.startup();
        } catch (RuntimeException e) {
            try {
                s.shutdown();
                s.awaitShutdown();
            } catch (RuntimeException ignored) {
            }
            throw new IllegalStateException(
                    "the Kafka broker did not start on " + HOST + ":" + port + " with data in " + dir + ": " + e, e);
        }
        server = s;
        try {
            awaitReady(Duration.ofSeconds(60));
            createScramUsers();
        } catch (Exception e) {
            stop();
            throw e;
        }
        return this;
    }

    /** Stops the broker cleanly (logs flushed); the data folder is kept, and {@link #start()} may follow. */
    public synchronized void stop() {
        KafkaRaftServer s = server;
        server = null;
        if (s != null) {
            s.shutdown();
            s.awaitShutdown();
        }
    }

    @Override
    public void close() {
        stop();
    }

    public synchronized boolean isRunning() {
        return server != null;
    }

    /** {@code 127.0.0.1:port} of the client listener. */
    public String bootstrap() {
        if (port == 0) throw new IllegalStateException("the broker has not started yet: its port is not chosen");
        return HOST + ":" + port;
    }

    public int port() {
        return port;
    }

    public Path dir() {
        return dir;
    }

    /** Security protocol of the client listener. */
    public SecurityProtocol clientProtocol() {
        return clientProtocol;
    }

    /**
     * Client settings of the broker's own operator connection (the plain listener, or the internal loopback
     * listener of a secured broker): for tests and tools that set up topics and read outputs.
     */
    public Properties adminProperties() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, internalPort == 0 ? bootstrap() : HOST + ":" + internalPort);
        return p;
    }

    /** Creates the topics that do not exist yet, with {@code partitions} partitions and replication factor 1. */
    public void createTopics(int partitions, String... topics) throws ExecutionException, InterruptedException {
        try (Admin admin = Admin.create(adminProperties())) {
            List<NewTopic> list = new ArrayList<>();
            for (String t : topics) list.add(new NewTopic(t, partitions, (short) 1));
            for (var f : admin.createTopics(list).values().values()) {
                try {
                    f.get(60, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) throw e;
                } catch (java.util.concurrent.TimeoutException e) {
                    throw new IllegalStateException("creating topics " + List.of(topics) + " took over 60 s", e);
                }
            }
            // Wait until the metadata of every new partition is visible to clients.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                boolean ready;
                try {
                    var described = admin.describeTopics(List.of(topics))
                            .allTopicNames()
                            .get(30, TimeUnit.SECONDS);
                    ready = described.values().stream()
                            .allMatch(d -> d.partitions().stream()
                                    .allMatch(pi ->
                                            pi.leader() != null && !pi.leader().isEmpty()));
                } catch (ExecutionException e) {
                    // just created: the broker that answers may not know the topic yet
                    if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException))
                        throw e;
                    ready = false;
                }
                if (ready) break;
                if (System.nanoTime() > deadline)
                    throw new IllegalStateException("topics " + List.of(topics) + " have no leader after 30 s");
                Thread.sleep(50);
            }
        } catch (java.util.concurrent.TimeoutException e) {
            throw new IllegalStateException("describing topics " + List.of(topics) + " took over 30 s", e);
        }
    }

    private Path logDir() {
        return dir.resolve("data");
    }

    private Properties serverProperties(int controllerPort) {
        Properties p = new Properties();
        p.put("process.roles", "broker,controller");
        p.put("node.id", String.valueOf(NODE_ID));
        p.put("controller.quorum.voters", NODE_ID + "@" + HOST + ":" + controllerPort);
        p.put("controller.listener.names", "CONTROLLER");
        if (clientProtocol == SecurityProtocol.PLAINTEXT) {
            p.put("listeners", "CLIENT://" + HOST + ":" + port + ",CONTROLLER://" + HOST + ":" + controllerPort);
            p.put("advertised.listeners", "CLIENT://" + HOST + ":" + port);
            p.put("listener.security.protocol.map", "CLIENT:PLAINTEXT,CONTROLLER:PLAINTEXT");
            p.put("inter.broker.listener.name", "CLIENT");
        } else {
            p.put(
                    "listeners",
                    "CLIENT://" + HOST + ":" + port + ",INTERNAL://" + HOST + ":" + internalPort + ",CONTROLLER://"
                            + HOST + ":" + controllerPort);
            p.put("advertised.listeners", "CLIENT://" + HOST + ":" + port + ",INTERNAL://" + HOST + ":" + internalPort);
            p.put(
                    "listener.security.protocol.map",
                    "CLIENT:" + clientProtocol.name + ",INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT");
            p.put("inter.broker.listener.name", "INTERNAL");
            if (saslMechanism != null) {
                p.put("sasl.enabled.mechanisms", saslMechanism);
                p.put("listener.name.client.sasl.enabled.mechanisms", saslMechanism);
                p.put(
                        "listener.name.client." + saslMechanism.toLowerCase() + ".sasl.jaas.config",
                        "org.apache.kafka.common.security.scram.ScramLoginModule required;");
            }
        }
        p.put("log.dirs", logDir().toString());
        // A single node: every internal topic has one replica, and one in-sync replica is enough.
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "5");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("transaction.state.log.num.partitions", "5");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("default.replication.factor", "1");
        p.put("min.insync.replicas", "1");
        p.put("num.partitions", "1");
        p.put("group.initial.rebalance.delay.ms", "0");
        // transaction.max.timeout.ms stays at Kafka's default (15 min) on purpose: see the class comment.
        p.putAll(overrides);
        return p;
    }

    private void format(Path config) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int rc;
        try (PrintStream ps = new PrintStream(out, true, StandardCharsets.UTF_8)) {
            rc = StorageTool.execute(
                    new String[] {
                        "format",
                        "--config",
                        config.toString(),
                        "--cluster-id",
                        Uuid.randomUuid().toString()
                    },
                    ps);
        } catch (RuntimeException e) {
            throw new IllegalStateException(
                    "formatting the Kafka data folder " + logDir() + " failed: " + e.getMessage(), e);
        }
        if (rc != 0) {
            throw new IllegalStateException("formatting the Kafka data folder " + logDir() + " failed: "
                    + out.toString(StandardCharsets.UTF_8).trim());
        }
    }

    private void awaitReady(Duration timeout) throws Exception {
        Properties p = adminProperties();
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        long deadline = System.nanoTime() + timeout.toNanos();
        Exception last = null;
        try (Admin admin = Admin.create(p)) {
            while (System.nanoTime() < deadline) {
                try {
                    if (!admin.describeCluster()
                            .nodes()
                            .get(10, TimeUnit.SECONDS)
                            .isEmpty()) {
                        // The broker is registered and unfenced once it may lead a partition: list topics works then.
                        admin.listTopics().names().get(10, TimeUnit.SECONDS);
                        return;
                    }
                } catch (ExecutionException | java.util.concurrent.TimeoutException e) {
                    last = e;
                }
                Thread.sleep(100);
            }
        }
        throw new IllegalStateException(
                "the Kafka broker on " + bootstrap() + " was not ready after " + timeout.toSeconds() + " s", last);
    }

    private void createScramUsers() throws Exception {
        if (scramUsers.isEmpty()) return;
        try (Admin admin = Admin.create(adminProperties())) {
            List<org.apache.kafka.clients.admin.UserScramCredentialAlteration> list = new ArrayList<>();
            for (var u : scramUsers.entrySet()) {
                list.add(new UserScramCredentialUpsertion(
                        u.getKey(), new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), u.getValue()));
            }
            admin.alterUserScramCredentials(list).all().get(30, TimeUnit.SECONDS);
            // The broker's credential cache follows the metadata log: wait until every user is described.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (!admin.describeUserScramCredentials(List.copyOf(scramUsers.keySet()))
                    .all()
                    .get(10, TimeUnit.SECONDS)
                    .keySet()
                    .containsAll(scramUsers.keySet())) {
                if (System.nanoTime() > deadline) throw new IllegalStateException("SCRAM users not visible after 30 s");
                Thread.sleep(50);
            }
        }
    }

    private static void checkFree(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByName(HOST), port));
        } catch (IOException e) {
            throw new IllegalStateException(
                    "port " + port + " on " + HOST + " is in use (another broker?): choose another with --port");
        }
    }

    private static int freePort() {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getByName(HOST), 0));
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException("no free loopback port", e);
        }
    }

    /**
     * {@code ./rollcount kafka}: starts a broker on {@code 127.0.0.1:port} with its data in {@code dir}, prints
     * the bootstrap address, and runs until the JVM is asked to stop (Ctrl-C), then stops the broker cleanly.
     * Does not return normally.
     */
    public static void runForeground(int port, Path dir) throws Exception {
        KafkaBroker broker = new KafkaBroker(port, dir);
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hook = new Thread(
                () -> {
                    System.out.println("rollcount kafka: stopping ...");
                    try {
                        broker.close();
                    } finally {
                        stopped.countDown();
                    }
                    System.out.println("rollcount kafka: stopped; the data stays in " + broker.dir());
                },
                "rollcount-kafka-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            broker.start();
        } catch (Exception e) {
            Runtime.getRuntime().removeShutdownHook(hook);
            broker.close();
            throw e;
        }
        System.out.println(
                "rollcount kafka: a single-node Kafka " + org.apache.kafka.common.utils.AppInfoParser.getVersion()
                        + " broker (KRaft) is ready at " + broker.bootstrap());
        System.out.println("rollcount kafka: data in " + broker.dir() + "; Ctrl-C stops it");
        System.out.println("bootstrap=" + broker.bootstrap());
        System.out.flush();
        stopped.await();
    }

    /** {@code ./rollcount kafka [--port 9092] [--dir D]}. */
    @Command(
            name = "kafka",
            mixinStandardHelpOptions = true,
            description =
                    "Runs a single-node Kafka broker (KRaft, broker and controller in one) in the foreground until Ctrl-C.")
    public static final class Cli implements Callable<Integer> {
        @Option(
                names = "--port",
                defaultValue = "9092",
                description = "Client port on 127.0.0.1 (default: ${DEFAULT-VALUE}).")
        int port = 9092;

        @Option(
                names = "--dir",
                defaultValue = ".rollcount/kafka",
                paramLabel = "DIR",
                description =
                        "Data folder, formatted on first use and kept across restarts (default: ${DEFAULT-VALUE}).")
        String dir = ".rollcount/kafka";

        @Override
        public Integer call() throws Exception {
            try {
                runForeground(port, Paths.get(dir));
                return 0;
            } catch (Exception e) {
                System.err.println("rollcount kafka: " + e.getMessage());
                return 1;
            }
        }
    }

    public static void main(String[] args) {
        System.exit(new CommandLine(new Cli()).execute(args));
    }
}
