package io.rollcount.job.redis;

import io.rollcount.job.kafka.KafkaClients;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.redis.internal.RedisApplyScript;
import java.io.Serializable;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes the closed windows of {@code counter-rollups} to Redis again, after Redis lost its data: reads the
 * topic from its beginning to its end at the start (with {@code isolation.level=read_committed}: only what
 * the job committed), keeps the latest revision of each window, and writes the sums of every resolution
 * found there (1m, 1h and 1d by default) plus the 5m sums of the 1m windows inside them (5m windows are not
 * in the topic), for the windows that start in {@code [from, to)} and whose keys have not expired yet,
 * with their usual absolute expiry.
 *
 * <p>Only the records of its own key prefix count: the value's {@code prefix} field decides, and a record whose
 * {@value KafkaIO#PREFIX_HEADER} header names another prefix is passed over without being parsed. Records
 * that name no prefix (written by versions that did not record it) are taken only {@link #withLegacyRollups
 * when asked}; otherwise they are counted and reported in one WARN line naming {@code --legacy-rollups}.
 *
 * <p>Every write is guarded, through the job's script ({@link RedisApplyScript}): monotone with the version
 * key (the window's events), so a value already in Redis that is larger, or whose version is at least as new,
 * stays; a window the running job rewrote since the loss keeps the job's value, and running this twice
 * changes nothing. A window whose value key is missing is written whatever its version key says
 * ({@link RedisWrite#restoresMissing}): a value lost on its own (an eviction, a {@code DEL}) comes back.
 *
 * <p>The job's rebuild after a loss {@link #run(long, long, CompletableFuture) goes on reading}: windows that
 * closed before the loss but whose rollups were still in an open transaction when the rebuild started are
 * committed later, and are read and written once the job says that a checkpoint taken after the loss completed. Unique users of closed windows cannot be rebuilt from the topic (it carries their count,
 * not their sketch); nor can closed 5 s windows, unless {@code --rollups.resolutions} lists {@code 5s}.
 *
 * <p>Used by the job (after it sees a loss) and by {@code ./rollcount rebuild-redis}.
 */
public final class RollupsRebuild implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(RollupsRebuild.class);

    final Properties kafka;
    final String topic;
    final RedisEndpoint endpoint;
    final String keyPrefix;
    /** What each namespace keeps (retention, top-K length); the job's {@code --policies}. */
    final Policies policies;
    /** The length of the {@code _all} window top-K lists ({@code --topk}). */
    final int topk;
    /** {@code --trending.max-namespaces}: more namespaces than this, and only the {@code _all} lists are rebuilt. */
    final int maxNamespaces;
    /** Whether records that name no key prefix are taken as this prefix's ({@code --legacy-rollups}). */
    final boolean legacyRollups;
    /** Whether a topic without a record of this prefix is refused ({@link NoRollupsException}) before any write. */
    private final boolean requireOwnRollups;
    /** How long the second reading waits for the transactions it must read to be committed. */
    static final Duration COMMIT_WAIT = Duration.ofMinutes(20);

    /**
     * With the defaults: no policies, top-K lists of 100, at most 1,000 namespaces with lists of their own.
     *
     * @param kafka the Kafka client settings ({@code bootstrap.servers} and any of {@code --kafka.properties})
     */
    public RollupsRebuild(Properties kafka, String topic, RedisEndpoint endpoint, String keyPrefix) {
        this(kafka, topic, endpoint, keyPrefix, Policies.none(100, 86_400_000L), 100, 1_000);
    }

    /**
     * @param policies the job's namespace policies (retention of each window key, length of each namespace's top-K lists)
     * @param topk the length of the {@code _all} lists
     * @param maxNamespaces the job's {@code --trending.max-namespaces}
     */
    public RollupsRebuild(
            Properties kafka,
            String topic,
            RedisEndpoint endpoint,
            String keyPrefix,
            Policies policies,
            int topk,
            int maxNamespaces) {
        this(kafka, topic, endpoint, keyPrefix, policies, topk, maxNamespaces, false, false);
    }

    private RollupsRebuild(
            Properties kafka,
            String topic,
            RedisEndpoint endpoint,
            String keyPrefix,
            Policies policies,
            int topk,
            int maxNamespaces,
            boolean legacyRollups,
            boolean requireOwnRollups) {
        this.kafka = kafka;
        this.topic = topic;
        this.endpoint = endpoint;
        this.keyPrefix = keyPrefix;
        this.policies = policies;
        this.topk = topk;
        this.maxNamespaces = maxNamespaces;
        this.legacyRollups = legacyRollups;
        this.requireOwnRollups = requireOwnRollups;
    }

    /** This rebuild, taking records that name no key prefix as its own where {@code legacy} ({@code --legacy-rollups}). */
    public RollupsRebuild withLegacyRollups(boolean legacy) {
        return new RollupsRebuild(
                kafka, topic, endpoint, keyPrefix, policies, topk, maxNamespaces, legacy, requireOwnRollups);
    }

    /**
     * This rebuild, refusing with a {@link NoRollupsException} before any write a topic that holds no record of its
     * key prefix (a mistyped prefix would otherwise take every record that names none).
     */
    public RollupsRebuild requiringOwnRollups() {
        return new RollupsRebuild(
                kafka, topic, endpoint, keyPrefix, policies, topk, maxNamespaces, legacyRollups, true);
    }

    /** The topic holds no rollup of the key prefix ({@link #requiringOwnRollups}): nothing was written. */
    public static final class NoRollupsException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        NoRollupsException(String message) {
            super(message);
        }
    }

    /** The topic does not exist: nothing was read or written, and the topic was not created. */
    public static final class NoTopicException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;

        NoTopicException(String message) {
            super(message);
        }
    }

    /**
     * What a rebuild read and wrote: {@code records} of its key prefix (and, with {@code --legacy-rollups}, of
     * none), {@code otherPrefixes} records of other key prefixes passed over, {@code legacy} records that name no
     * prefix (taken with {@code --legacy-rollups}, else passed over).
     */
    public record Result(
            long records,
            long otherPrefixes,
            long legacy,
            boolean legacyTaken,
            long windows,
            long lists,
            long written,
            long skipped,
            long expired,
            double seconds) {
        @Override
        public String toString() {
            return String.format(
                    "read %,d rollups (%,d windows, %,d top-K lists): %,d keys written, %,d left as Redis had them"
                            + " (as new or newer), %,d expired; passed over %,d of other key prefixes%s; %.1f s",
                    records,
                    windows,
                    lists,
                    written,
                    skipped,
                    expired,
                    otherPrefixes,
                    legacy == 0
                            ? ""
                            : legacyTaken
                                    ? String.format("; took %,d naming no key prefix (--legacy-rollups)", legacy)
                                    : String.format(
                                            " and %,d naming no key prefix (--legacy-rollups takes them)", legacy),
                    seconds);
        }

        Result plus(Result more) {
            return new Result(
                    records + more.records,
                    otherPrefixes + more.otherPrefixes,
                    legacy + more.legacy,
                    legacyTaken,
                    Math.max(windows, more.windows),
                    Math.max(lists, more.lists),
                    written + more.written,
                    skipped + more.skipped,
                    Math.max(expired, more.expired),
                    seconds + more.seconds);
        }
    }

    /** Rebuilds the windows that start in {@code [fromMillis, toMillis)}: reads the topic to its end at the start. */
    public Result run(long fromMillis, long toMillis) {
        return run(fromMillis, toMillis, null);
    }

    /**
     * Rebuilds the windows that start in {@code [fromMillis, toMillis)}: reads the topic to its committed end at the
     * start and writes what it read; then, if {@code thenToLatest} is given, waits for it, takes the topic's latest
     * offsets at that moment (uncommitted records included), reads on with {@code read_committed} until every
     * partition is read past them (their transactions committed or aborted), and writes the windows read since.
     * The job completes {@code thenToLatest} once a checkpoint taken after the loss has completed: every rollup
     * emitted before the loss is then below the latest offsets.
     */
    public Result run(long fromMillis, long toMillis, CompletableFuture<Void> thenToLatest) {
        if (!KafkaClients.topicExists(kafka, KafkaClients.DEFAULT_CHECK_TIMEOUT, topic)) {
            throw new NoTopicException("topic " + topic + " does not exist at "
                    + kafka.getProperty(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG) + ": nothing to rebuild from");
        }
        try (RollupsReading reading = new RollupsReading(this, fromMillis, toMillis)) {
            Result first = readAndWrite(reading, reading.committedEnds(), null);
            if (thenToLatest == null) return first;
            try {
                thenToLatest.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return first;
            } catch (java.util.concurrent.ExecutionException e) {
                return first;
            }
            return first.plus(readAndWrite(reading, reading.latestEnds(), COMMIT_WAIT));
        }
    }

    /**
     * Reads on to {@code ends} and writes the windows changed by what it read; {@code commitWait}: how long to wait
     * for transactions below {@code ends} to be resolved (null: {@code ends} are committed already, and every window
     * read so far is written).
     */
    private Result readAndWrite(RollupsReading reading, Map<TopicPartition, Long> ends, Duration commitWait) {
        long t0 = System.nanoTime();
        RollupsReading.Counts before = reading.counts.copy();
        Set<String> changed = reading.readTo(ends, commitWait);
        RollupsReading.Counts read = reading.counts.minus(before);
        if (requireOwnRollups && reading.counts.own == 0) {
            throw new NoRollupsException("no rollups of key prefix '" + keyPrefix + "' in topic " + topic + " ("
                    + reading.counts.other + " of other key prefixes, " + reading.counts.legacy
                    + " naming none); check --redis.key-prefix, or give --force");
        }
        if (read.legacy > 0 && !legacyRollups) {
            LOG.warn(
                    "{} holds {} rollups that name no key prefix (written before rollups named theirs): passed over;"
                            + " --legacy-rollups takes them as key prefix '{}''s",
                    topic,
                    read.legacy,
                    keyPrefix);
        }
        RollupsWrites redis = new RollupsWrites(this, reading);
        Map<String, List<RedisWrite>> writes = redis.writes(commitWait == null ? null : changed);
        long[] as = redis.write(writes);
        Result r = new Result(
                read.own + (legacyRollups ? read.legacy : 0),
                read.other,
                read.legacy,
                legacyRollups,
                reading.latest.size(),
                RollupsWrites.lists(writes),
                as[0],
                as[1],
                redis.expired,
                (System.nanoTime() - t0) / 1e9);
        LOG.info("rebuilt closed windows under key prefix '{}' at {} from {}: {}", keyPrefix, endpoint, topic, r);
        return r;
    }
}
