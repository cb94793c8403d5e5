package io.rollcount.cli;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.RedisSettings;
import io.rollcount.job.kafka.KafkaClients;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RollupsRebuild;
import java.io.PrintWriter;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Properties;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ./rollcount rebuild-redis}: writes the closed windows of {@code counter-rollups} to Redis again
 * (1m, 1h, 1d and the 5m sums of their 1m windows, latest revision of each, committed records only), for a
 * key prefix and a range of window starts, with the job's guarded writes: a value in Redis that is larger or
 * newer stays, a missing one comes back. Only the key prefix's own records are read ({@code --legacy-rollups}
 * adds those that name none); a topic without a record of the prefix is refused unless {@code --force}, and a
 * topic that does not exist is refused and not created. For a loss of Redis's data while the job was down, or
 * any time on demand; see {@link RollupsRebuild} and "If Redis loses data" in the README.
 */
@Command(
        name = "rebuild-redis",
        mixinStandardHelpOptions = true,
        description =
                "Write the closed windows of counter-rollups (1m, 1h, 1d, and 5m from their 1m windows) and the window "
                        + "top-K lists of 1m, 1h and 1d to Redis again, e.g. after Redis lost its data; never lowers a "
                        + "larger or newer value in Redis.")
final class RebuildRedisCommand implements Callable<Integer> {
    /** The longest retention (1d windows: 400 days) plus the window itself: nothing older is still in Redis. */
    static final Duration OLDEST = Duration.ofDays(401);

    @Spec
    CommandSpec spec;

    @Option(
            names = "--kafka.bootstrap",
            paramLabel = "HOST:PORT",
            description = "Kafka bootstrap servers (or bootstrap.servers in --kafka.properties).")
    String kafkaBootstrap;

    @Option(
            names = "--kafka.properties",
            paramLabel = "FILE",
            description = "A properties file of Kafka client settings (SASL, SSL, ...).")
    String kafkaProperties;

    @Option(
            names = "--kafka.topic.rollups",
            defaultValue = KafkaIO.ROLLUPS_TOPIC,
            description = "The rollups topic (default: ${DEFAULT-VALUE}).")
    String topic = KafkaIO.ROLLUPS_TOPIC;

    @Option(
            names = "--from",
            paramLabel = "TIME",
            description =
                    "Earliest window start: epoch ms or ISO-8601 with offset (default: 401 days ago, the longest retention).")
    String from;

    @Option(
            names = "--to",
            paramLabel = "TIME",
            description = "Windows that start before this: epoch ms or ISO-8601 with offset (default: now).")
    String to;

    @Option(
            names = "--policies",
            paramLabel = "FILE",
            description = "The job's namespace policies (retention of window keys, top-K length per namespace).")
    String policies;

    @Option(
            names = "--topk",
            defaultValue = "100",
            description = "The job's --topk: length of the _all window top-K lists (default: ${DEFAULT-VALUE}).")
    int topk = 100;

    @Option(
            names = "--trending.max-namespaces",
            defaultValue = "1000",
            description = "The job's --trending.max-namespaces: with more namespaces in counter-rollups, only the _all"
                    + " top-K lists are written (default: ${DEFAULT-VALUE}).")
    int maxNamespaces = 1000;

    @Option(
            names = "--legacy-rollups",
            description = "Also take rollups that name no key prefix (written by versions that did not record it) as"
                    + " this prefix's.")
    boolean legacyRollups;

    @Option(
            names = "--force",
            description = "Rebuild even if the topic holds no rollup of this key prefix (with --legacy-rollups: from"
                    + " the records that name none).")
    boolean force;

    @Mixin
    RedisReadOptions redisOptions = new RedisReadOptions();

    @Override
    public Integer call() {
        PrintWriter err = spec.commandLine().getErr();
        long now = System.currentTimeMillis();
        long fromMillis;
        long toMillis;
        Properties kafka;
        RedisEndpoint endpoint;
        io.rollcount.job.policy.Policies rules;
        try {
            if (topk < 1 || topk > 10_000) throw new IllegalArgumentException("--topk must be 1 to 10000");
            if (maxNamespaces < 1 || maxNamespaces > 100_000)
                throw new IllegalArgumentException("--trending.max-namespaces must be 1 to 100000");
            fromMillis = from == null ? now - OLDEST.toMillis() : time("--from", from);
            toMillis = to == null ? now + 1 : time("--to", to);
            if (fromMillis >= toMillis) throw new IllegalArgumentException("--from must be before --to");
            if (topic == null || topic.isBlank())
                throw new IllegalArgumentException("--kafka.topic.rollups must not be empty");
            RedisSettings redis = redisOptions.toSettings().check();
            kafka = KafkaClients.properties(kafkaBootstrap, kafkaProperties);
            endpoint = JobConnectors.redisEndpoint(redis);
            // the dedup horizon is not used here; the policies need one
            rules = JobSettings.loadPolicies(policies, topk, Duration.ofHours(24));
        } catch (IllegalArgumentException e) {
            err.println("rollcount rebuild-redis: " + e.getMessage());
            err.flush();
            return 2;
        }
        redisOptions.client().close(); // one line, not a stack trace, when Redis cannot be reached
        RollupsRebuild rebuild = new RollupsRebuild(
                        kafka, topic, endpoint, redisOptions.redisKeyPrefix, rules, topk, maxNamespaces)
                .withLegacyRollups(legacyRollups);
        RollupsRebuild.Result r;
        try {
            r = (force ? rebuild : rebuild.requiringOwnRollups()).run(fromMillis, toMillis);
        } catch (RollupsRebuild.NoRollupsException | RollupsRebuild.NoTopicException e) {
            err.println("rollcount rebuild-redis: " + e.getMessage());
            err.flush();
            return 2;
        }
        spec.commandLine()
                .getOut()
                .println("rebuild-redis: key prefix '" + redisOptions.redisKeyPrefix + "' at " + endpoint + ": " + r);
        return 0;
    }

    /** Epoch milliseconds, or ISO-8601 with an offset. */
    static long time(String option, String text) {
        String t = text.trim();
        if (t.matches("-?\\d{1,19}")) return Long.parseLong(t);
        try {
            return OffsetDateTime.parse(t, DateTimeFormatter.ISO_OFFSET_DATE_TIME)
                    .toInstant()
                    .toEpochMilli();
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException(option + " '" + text
                    + "' is neither epoch milliseconds nor ISO-8601 with an offset (e.g. 2026-11-30T12:00:00Z)");
        }
    }
}
