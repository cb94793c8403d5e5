package io.rollcount.job.kafka;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TopicExistsException;

/**
 * The settings every Kafka client of the job shares, and the checks made before the job starts.
 *
 * <p>{@code --kafka.properties FILE} is read once, where the job is built (the client), and its settings go
 * into the source, every sink and the admin client; {@code --kafka.bootstrap} wins over a
 * {@code bootstrap.servers} in the file. The file may hold secrets ({@code sasl.jaas.config},
 * {@code ssl.*.password}): this class never logs or prints its values, only its keys.
 */
public final class KafkaClients {
    /** How long {@link #ensureTopics} waits for a broker to answer before it fails. */
    public static final Duration DEFAULT_CHECK_TIMEOUT = Duration.ofSeconds(30);

    private KafkaClients() {}

    /**
     * The settings of the properties file {@code propertiesFile} ({@code --kafka.properties}; none when null or
     * blank) plus {@code bootstrap.servers} of {@code bootstrap} ({@code --kafka.bootstrap}), which wins over one
     * in the file; one of the two must give it.
     */
    public static Properties properties(String bootstrap, String propertiesFile) {
        Properties p = new Properties();
        if (propertiesFile != null && !propertiesFile.isBlank()) {
            p.putAll(loadFile(Paths.get(propertiesFile)));
        }
        if (bootstrap == null || bootstrap.isBlank()) {
            if (!p.containsKey(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG)) {
                throw new IllegalArgumentException(
                        "--kafka.bootstrap is required for Kafka (or bootstrap.servers in --kafka.properties)");
            }
        } else {
            p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap.trim());
        }
        return p;
    }

    static Properties loadFile(Path file) {
        Properties p = new Properties();
        try (InputStream in = Files.newInputStream(file)) {
            p.load(in);
        } catch (NoSuchFileException e) {
            throw new IllegalArgumentException("--kafka.properties: no such file " + file);
        } catch (IOException e) {
            throw new IllegalArgumentException("--kafka.properties: cannot read " + file + ": " + e.getMessage());
        }
        return p;
    }

    /**
     * Checks that the brokers of {@code clients} ({@link #properties}: {@code --kafka.bootstrap} with the settings
     * of {@code --kafka.properties}) answer and creates the topics that do not exist yet, with the broker's default
     * partition count and replication factor. Fails with a message that names the setting at fault.
     */
    public static void ensureTopics(Properties clients, Duration timeout, String... topics) {
        withAdmin(clients, timeout, (admin, bootstrap, ms) -> {
            if (topics.length == 0) return null;
            Set<String> existing = admin.listTopics().names().get(ms, TimeUnit.MILLISECONDS);
            List<NewTopic> missing = new ArrayList<>();
            for (String t : topics) {
                if (!existing.contains(t)) missing.add(new NewTopic(t, Optional.empty(), Optional.empty()));
            }
            if (missing.isEmpty()) return null;
            for (Map.Entry<String, ? extends org.apache.kafka.common.KafkaFuture<Void>> f :
                    admin.createTopics(missing).values().entrySet()) {
                try {
                    f.getValue().get(ms, TimeUnit.MILLISECONDS);
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw new IllegalStateException(
                                "--kafka.bootstrap " + bootstrap + ": cannot create topic " + f.getKey()
                                        + " (create it yourself, or grant the job's Kafka user CREATE): "
                                        + rootMessage(e),
                                e);
                    }
                }
            }
            return null;
        });
    }

    /**
     * Whether {@code topic} exists on the brokers of {@code clients}, asked without creating it (a consumer's
     * metadata request may create a topic where the broker allows it). Fails as {@link #ensureTopics} does when
     * the brokers do not answer.
     */
    public static boolean topicExists(Properties clients, Duration timeout, String topic) {
        return withAdmin(
                clients,
                timeout,
                (admin, bootstrap, ms) -> admin.listTopics()
                        .names()
                        .get(ms, TimeUnit.MILLISECONDS)
                        .contains(topic));
    }

    /**
     * The id of the Kafka cluster of {@code clients} ({@code describeCluster().clusterId()}): the same for every
     * broker of one cluster, another for another cluster. Fails as {@link #ensureTopics} does when the brokers do
     * not answer.
     */
    public static String clusterId(Properties clients, Duration timeout) {
        return withAdmin(
                clients,
                timeout,
                (admin, bootstrap, ms) -> admin.describeCluster().clusterId().get(ms, TimeUnit.MILLISECONDS));
    }

    /** What to do with an admin client whose brokers answered. */
    private interface AdminCall<T> {
        T apply(Admin admin, String bootstrap, int timeoutMillis)
                throws ExecutionException, TimeoutException, InterruptedException;
    }

    /** Makes an admin client of {@code clients}, checks that its brokers answer, and runs {@code call} with it. */
    private static <T> T withAdmin(Properties clients, Duration timeout, AdminCall<T> call) {
        Properties p = new Properties();
        p.putAll(clients);
        String bootstrap = p.getProperty(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG);
        int ms = (int) Math.min(Integer.MAX_VALUE, timeout.toMillis());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, String.valueOf(ms));
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, String.valueOf(Math.min(ms, 10_000)));
        p.putIfAbsent(AdminClientConfig.CLIENT_ID_CONFIG, "rollcount-admin");
        Admin admin;
        try {
            admin = Admin.create(p);
        } catch (KafkaException e) {
            throw new IllegalArgumentException(
                    "--kafka.bootstrap " + bootstrap
                            + " (with the settings of --kafka.properties): cannot make a Kafka client: "
                            + rootMessage(e),
                    e);
        }
        try (admin) {
            try {
                admin.describeCluster().clusterId().get(ms, TimeUnit.MILLISECONDS);
            } catch (ExecutionException | TimeoutException e) {
                throw new IllegalStateException(
                        "--kafka.bootstrap " + bootstrap + ": no Kafka broker answered within "
                                + timeout.toSeconds()
                                + " s (is it running and reachable? are the SASL/SSL settings of --kafka.properties right?): "
                                + rootMessage(e),
                        e);
            }
            return call.apply(admin, bootstrap, ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while checking --kafka.bootstrap " + bootstrap, e);
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException(
                    "--kafka.bootstrap " + bootstrap + ": cannot list topics: " + rootMessage(e), e);
        }
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) t = t.getCause();
        String m = t.getMessage();
        return t.getClass().getSimpleName() + (m == null ? "" : ": " + m);
    }
}
