package io.rollcount.job.redis;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.rollcount.job.kafka.KafkaClients;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.redis.internal.RedisApplyScript;
import io.rollcount.job.redis.internal.RedisErrors;
import io.rollcount.job.redis.internal.RedisScript;
import java.io.IOException;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;

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
    /** Script calls per pipeline round trip. */
    private static final int CALLS_PER_SYNC = 500;
    /** Counters per script call on a single server (a Redis Cluster takes one: a call must touch one slot). */
    private static final int COUNTERS_PER_CALL = 64;

    private final Properties kafka;
    private final String topic;
    private final RedisEndpoint endpoint;
    private final String keyPrefix;
    /** What each namespace keeps (retention, top-K length); the job's {@code --policies}. */
    private final Policies policies;
    /** The length of the {@code _all} window top-K lists ({@code --topk}). */
    private final int topk;
    /** {@code --trending.max-namespaces}: more namespaces than this, and only the {@code _all} lists are rebuilt. */
    private final int maxNamespaces;
    /** Whether records that name no key prefix are taken as this prefix's ({@code --legacy-rollups}). */
    private final boolean legacyRollups;
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

    /** One window: the latest revision read. */
    private static final class Window {
        final String counter;
        final Resolution res;
        final long start;
        long sum;
        long events;
        long revision = -1;
        /** The sum of revision 0, the one the window top-K lists ranked when the window closed; null if not read. */
        Long firstSum;

        Window(String counter, Resolution res, long start) {
            this.counter = counter;
            this.res = res;
            this.start = start;
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
        try (Reading reading = new Reading(fromMillis, toMillis)) {
            Result first = reading.readTo(reading.committedEnds(), null);
            if (thenToLatest == null) return first;
            try {
                thenToLatest.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return first;
            } catch (java.util.concurrent.ExecutionException e) {
                return first;
            }
            return first.plus(reading.readTo(reading.latestEnds(), COMMIT_WAIT));
        }
    }

    /** One reading of the topic, from its beginning, in one or more steps ({@link #readTo}); the windows read so far. */
    private final class Reading implements AutoCloseable {
        final long fromMillis;
        final long toMillis;
        final KafkaConsumer<byte[], byte[]> consumer;
        final List<TopicPartition> parts = new ArrayList<>();
        final Map<String, Window> latest = new HashMap<>();
        final long[] closedUpTo = {Long.MIN_VALUE};
        final Counts counts = new Counts();
        final JsonFactory json = new JsonFactory();
        /** Windows passed over at the last write because their keys have expired. */
        long expired;

        Reading(long fromMillis, long toMillis) {
            this.fromMillis = fromMillis;
            this.toMillis = toMillis;
            consumer = new KafkaConsumer<>(consumerProperties("read_committed"));
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
            if (infos == null || infos.isEmpty()) throw new NoTopicException("topic " + topic + " does not exist");
            for (PartitionInfo i : infos) parts.add(new TopicPartition(i.topic(), i.partition()));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
        }

        /** The last stable offsets: before any transaction still open. */
        Map<TopicPartition, Long> committedEnds() {
            return consumer.endOffsets(parts, Duration.ofSeconds(30));
        }

        /** The end of every partition, records of open transactions included. */
        Map<TopicPartition, Long> latestEnds() {
            try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProperties("read_uncommitted"))) {
                return c.endOffsets(parts, Duration.ofSeconds(30));
            }
        }

        /**
         * Reads on to {@code ends} and writes the windows changed by what it read; {@code commitWait}: how long to
         * wait for transactions below {@code ends} to be resolved (null: {@code ends} are committed already).
         */
        Result readTo(Map<TopicPartition, Long> ends, Duration commitWait) {
            long t0 = System.nanoTime();
            long deadline = commitWait == null ? Long.MAX_VALUE : t0 + commitWait.toNanos();
            Counts before = counts.copy();
            java.util.Set<String> changed = new java.util.HashSet<>();
            while (!reached(consumer, ends)) {
                if (System.nanoTime() - deadline > 0) {
                    LOG.warn(
                            "{} was not committed up to {} within {}: closed windows of key prefix '{}' after the loss may be"
                                    + " missing in Redis; run ./rollcount rebuild-redis",
                            topic,
                            ends,
                            commitWait,
                            keyPrefix);
                    break;
                }
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(500))) {
                    Long end = ends.get(new TopicPartition(rec.topic(), rec.partition()));
                    if (end != null && rec.offset() >= end && commitWait == null) continue;
                    take(rec, this, changed);
                }
            }
            Counts read = counts.minus(before);
            if (requireOwnRollups && counts.own == 0) {
                throw new NoRollupsException("no rollups of key prefix '" + keyPrefix + "' in topic " + topic
                        + " (" + counts.other + " of other key prefixes, " + counts.legacy
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
            Map<String, List<RedisWrite>> writes = writes(this, commitWait == null ? null : changed);
            long[] as = write(writes);
            Result r = new Result(
                    read.own + (legacyRollups ? read.legacy : 0),
                    read.other,
                    read.legacy,
                    legacyRollups,
                    latest.size(),
                    lists(writes),
                    as[0],
                    as[1],
                    expired,
                    (System.nanoTime() - t0) / 1e9);
            LOG.info("rebuilt closed windows under key prefix '{}' at {} from {}: {}", keyPrefix, endpoint, topic, r);
            return r;
        }

        @Override
        public void close() {
            consumer.close(Duration.ofSeconds(5));
        }
    }

    /** Records read, by whose they are. */
    private static final class Counts {
        long own;
        long other;
        long legacy;

        Counts copy() {
            Counts c = new Counts();
            c.own = own;
            c.other = other;
            c.legacy = legacy;
            return c;
        }

        Counts minus(Counts before) {
            Counts c = new Counts();
            c.own = own - before.own;
            c.other = other - before.other;
            c.legacy = legacy - before.legacy;
            return c;
        }
    }

    private Properties consumerProperties(String isolation) {
        Properties p = new Properties();
        p.putAll(kafka);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        p.remove(ConsumerConfig.GROUP_ID_CONFIG);
        return p;
    }

    /** How many top-K lists among the writes (their groups' names start with a NUL). */
    private static long lists(Map<String, List<RedisWrite>> writes) {
        return writes.keySet().stream().filter(k -> k.startsWith("\0")).count();
    }

    /**
     * The guarded writes of the windows read (with the 5m windows derived from their 1m windows), grouped per
     * counter and per top-K list; only those whose window is in {@code changed} (a derived 5m window: one of its
     * 1m windows; a list: one of its windows), unless {@code changed} is null.
     */
    private Map<String, List<RedisWrite>> writes(Reading reading, java.util.Set<String> changed) {
        Map<String, Window> latest = new HashMap<>(reading.latest);
        long now = System.currentTimeMillis();
        // 5m windows: the sum of their 1m windows (contract: every 5m window is five 1m windows), for those the
        // job's watermark had passed (a rollup of a window ending at or after theirs was read): a 1m window still
        // open is in no rollup, and a sum of the others would be short
        Map<String, Window> derived = new HashMap<>();
        java.util.Set<String> changedDerived = new java.util.HashSet<>();
        for (Window w : latest.values()) {
            if (w.res != Resolution.M1) continue;
            long start = Resolution.M5.windowStart(w.start);
            if (start + Resolution.M5.sizeMillis > reading.closedUpTo[0]) continue;
            String id = id(w.counter, Resolution.M5, start);
            if (latest.containsKey(id)) continue; // the topic has 5m windows of its own (--rollups.resolutions 5m)
            Window f = derived.computeIfAbsent(id, k -> new Window(w.counter, Resolution.M5, start));
            f.sum += w.sum;
            f.events += w.events;
            f.revision = 0;
            if (changed != null && changed.contains(id(w.counter, w.res, w.start))) changedDerived.add(id);
        }
        latest.putAll(derived);
        if (changed != null) changed.addAll(changedDerived);
        RedisKeys keys = new RedisKeys(keyPrefix);
        Map<String, List<RedisWrite>> byCounter = new LinkedHashMap<>();
        long expired = 0;
        for (Map.Entry<String, Window> e : latest.entrySet()) {
            Window w = e.getValue();
            if (w.start < reading.fromMillis || w.start >= reading.toMillis) continue;
            long at = policies.forNamespace(CounterId.namespaceOf(w.counter)).expireAtMillis(w.res, w.start);
            if (at <= now) {
                expired++;
                continue;
            }
            if (changed != null && !changed.contains(e.getKey())) continue;
            String base = keys.counterBase(w.counter);
            String suffix = RedisKeys.windowSuffix(w.res, w.start);
            byCounter
                    .computeIfAbsent(w.counter, c -> new ArrayList<>())
                    .add(RedisWrite.count(
                                    base + suffix,
                                    RedisKeys.versionKey(base, suffix),
                                    w.sum,
                                    w.events,
                                    true,
                                    w.start,
                                    at)
                            .restoringMissing());
        }
        reading.expired = expired;
        topLists(latest.values(), reading.fromMillis, reading.toMillis, now, keys, byCounter, changed);
        return byCounter;
    }

    /**
     * The window top-K lists ({@code P:top:<ns>:<res>:<start>}, 1m, 1h and 1d: the resolutions the job ranks) as
     * the job wrote them when each window closed: the top {@code k} counters of the namespace by the window's
     * sum at its close (revision 0), best first, ties by counter id; {@code k} the namespace policy's top-K
     * (none: no list, and not in {@code _all} either), {@code --topk} for {@code _all}. Versioned with the
     * watermark the job's list reflects (the window's last millisecond), so a list the job wrote since stays.
     * With more namespaces than {@code --trending.max-namespaces} (which ones the job listed depends on the
     * order it first saw them), only the {@code _all} lists. Returns how many lists; their writes go into
     * {@code out}, one group per list.
     */
    private long topLists(
            java.util.Collection<Window> windows,
            long fromMillis,
            long toMillis,
            long now,
            RedisKeys keys,
            Map<String, List<RedisWrite>> out,
            java.util.Set<String> changed) {
        Map<String, List<Window>> byList = new LinkedHashMap<>();
        java.util.Set<String> changedLists = new java.util.HashSet<>();
        java.util.Set<String> namespaces = new java.util.HashSet<>();
        for (Window w : windows) {
            if (w.res != Resolution.M1 && w.res != Resolution.H1 && w.res != Resolution.D1) continue;
            if (w.firstSum == null || w.start < fromMillis || w.start >= toMillis) continue;
            String ns = CounterId.namespaceOf(w.counter);
            if (policies.forNamespace(ns).topk() <= 0) continue;
            namespaces.add(ns);
            byList.computeIfAbsent(ns + "\n" + w.res.label + "\n" + w.start, k -> new ArrayList<>())
                    .add(w);
            byList.computeIfAbsent(
                            CounterId.ALL_NAMESPACES + "\n" + w.res.label + "\n" + w.start, k -> new ArrayList<>())
                    .add(w);
            if (changed != null && changed.contains(id(w.counter, w.res, w.start))) {
                changedLists.add(ns + "\n" + w.res.label + "\n" + w.start);
                changedLists.add(CounterId.ALL_NAMESPACES + "\n" + w.res.label + "\n" + w.start);
            }
        }
        boolean perNamespace = namespaces.size() <= maxNamespaces;
        if (!perNamespace) {
            LOG.warn(
                    "counter-rollups holds {} namespaces, more than --trending.max-namespaces {}: only the {} top-K lists are rebuilt",
                    namespaces.size(),
                    maxNamespaces,
                    CounterId.ALL_NAMESPACES);
        }
        long lists = 0;
        for (Map.Entry<String, List<Window>> e : byList.entrySet()) {
            if (changed != null && !changedLists.contains(e.getKey())) continue;
            String[] f = e.getKey().split("\n");
            String ns = f[0];
            if (!perNamespace && !ns.equals(CounterId.ALL_NAMESPACES)) continue;
            Resolution r = Resolution.ofLabel(f[1]);
            long start = Long.parseLong(f[2]);
            long expireAt = ns.equals(CounterId.ALL_NAMESPACES)
                    ? r.expireAtMillis(start)
                    : policies.forNamespace(ns).expireAtMillis(r, start);
            if (expireAt <= now) continue;
            int k = ns.equals(CounterId.ALL_NAMESPACES)
                    ? topk
                    : policies.forNamespace(ns).topk();
            List<Window> ws = e.getValue();
            ws.sort(java.util.Comparator.<Window>comparingLong(w -> -w.firstSum).thenComparing(w -> w.counter));
            int n = Math.min(k, ws.size());
            String[] members = new String[n];
            double[] scores = new double[n];
            for (int i = 0; i < n; i++) {
                members[i] = ws.get(i).counter;
                scores[i] = ws.get(i).firstSum;
            }
            String key = keys.top(ns, r, start);
            out.computeIfAbsent("\0" + key, x -> new ArrayList<>())
                    .add(RedisWrite.zset(
                                    key,
                                    keys.versionOfGlobal(key),
                                    start + r.sizeMillis - 1,
                                    members,
                                    scores,
                                    start,
                                    expireAt)
                            .restoringMissing());
            lists++;
        }
        return lists;
    }

    private static String id(String counter, Resolution res, long start) {
        return res.label + ":" + start + ":" + counter;
    }

    private static boolean reached(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) return false;
        }
        return true;
    }

    /**
     * One rollup record: kept if it is of this key prefix (or names none and {@link #legacyRollups}) and the latest
     * revision of its window so far; its window's id goes into {@code changed}. A record it cannot read is logged
     * and passed.
     */
    private void take(ConsumerRecord<byte[], byte[]> rec, Reading reading, java.util.Set<String> changed) {
        org.apache.kafka.common.header.Header header = rec.headers().lastHeader(KafkaIO.PREFIX_HEADER);
        if (header != null && !keyPrefix.equals(new String(header.value(), StandardCharsets.UTF_8))) {
            reading.counts.other++;
            return;
        }
        String prefix = null;
        String counter = null;
        String res = null;
        long start = Long.MIN_VALUE;
        long sum = 0;
        long events = 0;
        long revision = -1;
        try (JsonParser j = reading.json.createParser(rec.value())) {
            if (j.nextToken() != JsonToken.START_OBJECT) throw new IOException("not a JSON object");
            while (j.nextToken() == JsonToken.FIELD_NAME) {
                String f = j.currentName();
                JsonToken t = j.nextToken();
                switch (f) {
                    case "prefix" -> prefix = j.getText();
                    case "counter" -> counter = j.getText();
                    case "res" -> res = j.getText();
                    case "start" -> start = j.getLongValue();
                    case "sum" -> sum = j.getLongValue();
                    case "events" -> events = j.getLongValue();
                    case "revision" -> revision = j.getLongValue();
                    default -> {
                        if (t == JsonToken.START_OBJECT || t == JsonToken.START_ARRAY) j.skipChildren();
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("a {} record that is not a rollup was passed over: {}", topic, e.getMessage());
            return;
        }
        if (prefix == null) {
            reading.counts.legacy++;
            if (!legacyRollups) return;
        } else if (!prefix.equals(keyPrefix)) {
            reading.counts.other++;
            return;
        } else {
            reading.counts.own++;
        }
        if (counter == null || res == null || start == Long.MIN_VALUE || revision < 0) {
            LOG.warn("a {} record without counter, res, start or revision was passed over", topic);
            return;
        }
        Resolution r;
        try {
            r = Resolution.ofLabel(res);
        } catch (IllegalArgumentException e) {
            LOG.warn("a {} record of resolution '{}' was passed over", topic, res);
            return;
        }
        keep(reading, counter, r, start, sum, events, revision, changed);
    }

    /** A rollup of this prefix: kept if its window's keys still live and it is the latest revision read. */
    private void keep(
            Reading reading,
            String counter,
            Resolution r,
            long start,
            long sum,
            long events,
            long revision,
            java.util.Set<String> changed) {
        // the job's watermark passed the end of this window: every window that ends before is closed too
        reading.closedUpTo[0] = Math.max(reading.closedUpTo[0], start + r.sizeMillis);
        // 1m windows just outside the range still feed the 5m windows inside it
        long lo = r == Resolution.M1 && reading.fromMillis > Long.MIN_VALUE + Resolution.M5.sizeMillis
                ? Resolution.M5.windowStart(reading.fromMillis)
                : reading.fromMillis;
        if (start < lo || start >= reading.toMillis) return;
        // only windows whose keys still live are kept (a 1m window as long as its 5m window's keys do), so that
        // memory is bounded by the retention, not by the topic's
        long now = System.currentTimeMillis();
        var policy = policies.forNamespace(CounterId.namespaceOf(counter));
        long liveUntil = r == Resolution.M1
                ? Math.max(
                        policy.expireAtMillis(r, start),
                        policy.expireAtMillis(Resolution.M5, Resolution.M5.windowStart(start)))
                : policy.expireAtMillis(r, start);
        if (liveUntil <= now) return;
        String id = id(counter, r, start);
        Window w = reading.latest.get(id);
        if (w == null) reading.latest.put(id, w = new Window(counter, r, start));
        if (revision >= w.revision) {
            w.revision = revision;
            w.sum = sum;
            w.events = events;
            changed.add(id);
        }
        if (revision == 0) w.firstSum = sum;
    }

    /** Guarded writes, per counter, pipelined; returns {written, skipped}. */
    private long[] write(Map<String, List<RedisWrite>> byCounter) {
        long[] counts = new long[2];
        try (UnifiedJedis j = endpoint.client()) {
            RedisApplyScript.SCRIPT.loadOn(j);
            int perCall = endpoint.cluster() ? 1 : COUNTERS_PER_CALL;
            List<RedisApplyScript.Call> calls = new ArrayList<>();
            RedisApplyScript.Call c = null;
            int inCall = 0;
            for (List<RedisWrite> ws : byCounter.values()) {
                if (c == null || inCall >= perCall) {
                    c = new RedisApplyScript.Call();
                    calls.add(c);
                    inCall = 0;
                }
                for (RedisWrite w : ws) c.add(w);
                inCall++;
            }
            for (int from = 0; from < calls.size(); from += CALLS_PER_SYNC) {
                writeCalls(j, calls.subList(from, Math.min(calls.size(), from + CALLS_PER_SYNC)), counts);
            }
        }
        return counts;
    }

    /** One round trip of script calls (and one more for those a node answered NOSCRIPT to); adds to {written, skipped}. */
    private void writeCalls(UnifiedJedis j, List<RedisApplyScript.Call> slice, long[] counts) {
        List<Response<Object>> replies = new ArrayList<>(slice.size());
        try (AbstractPipeline p = j.pipelined()) {
            for (RedisApplyScript.Call call : slice) replies.add(RedisApplyScript.SCRIPT.evalsha(p, call));
            p.sync();
        }
        List<RedisApplyScript.Call> again = new ArrayList<>();
        for (int i = 0; i < slice.size(); i++) {
            try {
                count(slice.get(i), replies.get(i).get(), counts);
            } catch (JedisDataException e) {
                if (!RedisErrors.isNoScript(e)) throw e;
                again.add(slice.get(i));
            }
        }
        if (again.isEmpty()) return;
        List<Response<Object>> evals = RedisApplyScript.SCRIPT.evalAgain(j, again);
        for (int i = 0; i < again.size(); i++) count(again.get(i), evals.get(i).get(), counts);
    }

    private void count(RedisApplyScript.Call call, Object result, long[] counts) {
        RedisScript.ApplyReply reply = RedisScript.ApplyReply.decode(result, call.firstKey, endpoint);
        counts[0] += reply.applied();
        counts[1] += reply.skipped();
        List<String> rejected = reply.rejected();
        for (int k = 0; k + 1 < rejected.size(); k += 2) {
            LOG.warn("Redis at {} rejected key {}: {}", endpoint, rejected.get(k), rejected.get(k + 1));
        }
    }
}
