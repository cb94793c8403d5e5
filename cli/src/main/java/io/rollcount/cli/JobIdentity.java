package io.rollcount.cli;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.kafka.KafkaClients;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisNodes;
import java.io.IOException;
import java.io.Reader;
import java.io.StringReader;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;

/**
 * Whose checkpoints a job folder holds: the key prefix, the Redis target and the source. {@code run} resumes
 * a checkpoint automatically only when its job's identity is this run's.
 *
 * <ul>
 *   <li>Redis: a single server by its address as given ({@code host:port/db}); a Redis Cluster by the ids of its
 *       nodes, two clusters being the same when they share a node id. Not by the prefix's epoch key: a loss
 *       recreates it, and a run after a loss resumes its checkpoint to rebuild Redis.
 *   <li>Source: Kafka by the topic and the cluster id of its brokers; files by the kind only, so that a files run
 *       stopped midway resumes over other files.
 * </ul>
 *
 * <p>Kept as a properties file, {@value #FILE}, in the job's folder beside its checkpoints.
 */
record JobIdentity(String prefix, String redis, String source) {
    /** The file beside a job's checkpoints that holds its identity. */
    static final String FILE = "identity";

    private static final String CLUSTER = "cluster ";

    /** This run's identity: asks Redis (a cluster's node ids) and Kafka (the cluster id) once. */
    static JobIdentity of(JobSettings settings) {
        return new JobIdentity(settings.redis.keyPrefix(), redisOf(settings), sourceOf(settings));
    }

    private static String redisOf(JobSettings settings) {
        RedisEndpoint endpoint = JobConnectors.redisEndpoint(settings.redis);
        if (endpoint.cluster()) return CLUSTER + String.join(",", RedisNodes.nodeIds(endpoint));
        return endpoint.seeds().get(0) + "/" + endpoint.database();
    }

    private static String sourceOf(JobSettings settings) {
        if (settings.source != JobSettings.SourceKind.kafka) return settings.source.name();
        String clusterId =
                KafkaClients.clusterId(JobConnectors.kafkaProperties(settings), KafkaClients.DEFAULT_CHECK_TIMEOUT);
        return "kafka topic " + settings.kafkaTopic + " of cluster " + clusterId;
    }

    /** Whether checkpoints of a job of {@code other} identity are this job's to resume. */
    boolean sameJob(JobIdentity other) {
        return prefix.equals(other.prefix) && source.equals(other.source) && sameRedis(redis, other.redis);
    }

    private static boolean sameRedis(String a, String b) {
        if (!a.startsWith(CLUSTER) || !b.startsWith(CLUSTER)) return a.equals(b);
        Set<String> ids = new HashSet<>(List.of(a.substring(CLUSTER.length()).split(",")));
        for (String id : b.substring(CLUSTER.length()).split(",")) if (ids.contains(id)) return true;
        return false;
    }

    /** For messages: {@code Redis 127.0.0.1:6379/0, kafka topic t of cluster c}. */
    String describe() {
        String r = redis.startsWith(CLUSTER)
                ? "the Redis Cluster of node ids " + redis.substring(CLUSTER.length())
                : "Redis " + redis;
        return r + ", " + source;
    }

    /** Writes {@value #FILE} into {@code jobDir}. */
    void writeTo(Path jobDir) throws IOException {
        Properties p = new Properties();
        p.setProperty("prefix", prefix);
        p.setProperty("redis", redis);
        p.setProperty("source", source);
        StringWriter text = new StringWriter();
        p.store(text, "the job whose checkpoints these are");
        Files.createDirectories(jobDir);
        Files.writeString(jobDir.resolve(FILE), text.toString());
    }

    /** The identity kept in {@code jobDir}, or null if it has none (a job of an earlier version) or it is unreadable. */
    static JobIdentity readFrom(Path jobDir) {
        Path f = jobDir.resolve(FILE);
        if (!Files.isRegularFile(f)) return null;
        try (Reader in = new StringReader(Files.readString(f))) {
            Properties p = new Properties();
            p.load(in);
            String prefix = p.getProperty("prefix");
            String redis = p.getProperty("redis");
            String source = p.getProperty("source");
            return prefix == null || redis == null || source == null ? null : new JobIdentity(prefix, redis, source);
        } catch (IOException | UncheckedIOException e) {
            return null;
        }
    }
}
