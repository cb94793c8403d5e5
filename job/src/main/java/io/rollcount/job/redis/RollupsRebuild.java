package io.rollcount.job.redis;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.policy.Policies;
import java.io.IOException;
import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
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
 * <p>Every write is guarded, through the job's script ({@link RedisApplyScript}): monotone with the version
 * key (the window's events), so a value already in Redis that is larger, or whose version is at least as new,
 * stays; a window the running job rewrote since the loss keeps the job's value, and running this twice
 * changes nothing. Unique users of closed windows cannot be rebuilt from the topic (it carries their count,
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
        this.kafka = kafka;
        this.topic = topic;
        this.endpoint = endpoint;
        this.keyPrefix = keyPrefix;
        this.policies = policies;
        this.topk = topk;
        this.maxNamespaces = maxNamespaces;
    }

    /** What a rebuild read and wrote. */
    public record Result(
            long records, long windows, long lists, long written, long skipped, long expired, double seconds) {
        @Override
        public String toString() {
            return String.format(
                    "read %,d rollups (%,d windows, %,d top-K lists): %,d keys written, %,d left as Redis had them"
                            + " (as new or newer), %,d expired; %.1f s",
                    records, windows, lists, written, skipped, expired, seconds);
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

    /** Rebuilds the windows that start in {@code [fromMillis, toMillis)}. */
    public Result run(long fromMillis, long toMillis) {
        long t0 = System.nanoTime();
        long now = System.currentTimeMillis();
        Map<String, Window> latest = new HashMap<>();
        long[] closedUpTo = {Long.MIN_VALUE};
        long records = read(fromMillis, toMillis, latest, closedUpTo);
        // 5m windows: the sum of their 1m windows (contract: every 5m window is five 1m windows), for those the
        // job's watermark had passed (a rollup of a window ending at or after theirs was read): a 1m window still
        // open is in no rollup, and a sum of the others would be short
        Map<String, Window> derived = new HashMap<>();
        for (Window w : latest.values()) {
            if (w.res != Resolution.M1) continue;
            long start = Resolution.M5.windowStart(w.start);
            if (start + Resolution.M5.sizeMillis > closedUpTo[0]) continue;
            String id = id(w.counter, Resolution.M5, start);
            if (latest.containsKey(id)) continue; // the topic has 5m windows of its own (--rollups.resolutions 5m)
            Window f = derived.computeIfAbsent(id, k -> new Window(w.counter, Resolution.M5, start));
            f.sum += w.sum;
            f.events += w.events;
            f.revision = 0;
        }
        latest.putAll(derived);
        RedisKeys keys = new RedisKeys(keyPrefix);
        Map<String, List<RedisWrite>> byCounter = new LinkedHashMap<>();
        long expired = 0;
        for (Window w : latest.values()) {
            if (w.start < fromMillis || w.start >= toMillis) continue;
            long at = policies.forNamespace(RedisKeys.namespaceOf(w.counter)).expireAtMillis(w.res, w.start);
            if (at <= now) {
                expired++;
                continue;
            }
            String base = keys.counterBase(w.counter);
            String suffix = RedisKeys.windowSuffix(w.res, w.start);
            byCounter
                    .computeIfAbsent(w.counter, c -> new ArrayList<>())
                    .add(RedisWrite.count(
                            base + suffix, RedisKeys.versionKey(base, suffix), w.sum, w.events, true, w.start, at));
        }
        long lists = topLists(latest.values(), fromMillis, toMillis, now, keys, byCounter);
        long[] as = write(byCounter);
        Result r = new Result(records, latest.size(), lists, as[0], as[1], expired, (System.nanoTime() - t0) / 1e9);
        LOG.info("rebuilt closed windows under key prefix '{}' at {} from {}: {}", keyPrefix, endpoint, topic, r);
        return r;
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
            Map<String, List<RedisWrite>> out) {
        Map<String, List<Window>> byList = new LinkedHashMap<>();
        java.util.Set<String> namespaces = new java.util.HashSet<>();
        for (Window w : windows) {
            if (w.res != Resolution.M1 && w.res != Resolution.H1 && w.res != Resolution.D1) continue;
            if (w.firstSum == null || w.start < fromMillis || w.start >= toMillis) continue;
            String ns = RedisKeys.namespaceOf(w.counter);
            if (policies.forNamespace(ns).topk() <= 0) continue;
            namespaces.add(ns);
            byList.computeIfAbsent(ns + "\n" + w.res.label + "\n" + w.start, k -> new ArrayList<>())
                    .add(w);
            byList.computeIfAbsent(
                            io.rollcount.job.ops.TrendingMerge.ALL + "\n" + w.res.label + "\n" + w.start,
                            k -> new ArrayList<>())
                    .add(w);
        }
        boolean perNamespace = namespaces.size() <= maxNamespaces;
        if (!perNamespace) {
            LOG.warn(
                    "counter-rollups holds {} namespaces, more than --trending.max-namespaces {}: only the {} top-K lists are rebuilt",
                    namespaces.size(),
                    maxNamespaces,
                    io.rollcount.job.ops.TrendingMerge.ALL);
        }
        long lists = 0;
        for (Map.Entry<String, List<Window>> e : byList.entrySet()) {
            String[] f = e.getKey().split("\n");
            String ns = f[0];
            if (!perNamespace && !ns.equals(io.rollcount.job.ops.TrendingMerge.ALL)) continue;
            Resolution r = Resolution.ofLabel(f[1]);
            long start = Long.parseLong(f[2]);
            long expireAt = ns.equals(io.rollcount.job.ops.TrendingMerge.ALL)
                    ? r.expireAtMillis(start)
                    : policies.forNamespace(ns).expireAtMillis(r, start);
            if (expireAt <= now) continue;
            int k = ns.equals(io.rollcount.job.ops.TrendingMerge.ALL)
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
                            expireAt));
            lists++;
        }
        return lists;
    }

    private static String id(String counter, Resolution res, long start) {
        return res.label + ":" + start + ":" + counter;
    }

    /** Reads the topic from its beginning to its end offsets at the start (committed records only). */
    private long read(long fromMillis, long toMillis, Map<String, Window> latest, long[] closedUpTo) {
        Properties p = new Properties();
        p.putAll(kafka);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        p.remove(ConsumerConfig.GROUP_ID_CONFIG);
        JsonFactory json = new JsonFactory();
        long records = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
            if (infos == null || infos.isEmpty()) throw new IllegalStateException("topic " + topic + " does not exist");
            List<TopicPartition> parts = new ArrayList<>();
            for (PartitionInfo i : infos) parts.add(new TopicPartition(i.topic(), i.partition()));
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            // with read_committed: the last stable offsets, before any transaction still open
            Map<TopicPartition, Long> end = consumer.endOffsets(parts, Duration.ofSeconds(30));
            while (!reached(consumer, end)) {
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(500))) {
                    if (rec.offset() >= end.get(new TopicPartition(rec.topic(), rec.partition()))) continue;
                    records++;
                    take(json, rec.value(), fromMillis, toMillis, latest, closedUpTo);
                }
            }
        }
        return records;
    }

    private static boolean reached(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) return false;
        }
        return true;
    }

    /** One rollup record: kept if it is the latest revision of its window so far. A record it cannot read is logged and passed. */
    private void take(
            JsonFactory json,
            byte[] value,
            long fromMillis,
            long toMillis,
            Map<String, Window> latest,
            long[] closedUpTo) {
        String counter = null;
        String res = null;
        long start = Long.MIN_VALUE;
        long sum = 0;
        long events = 0;
        long revision = -1;
        try (JsonParser j = json.createParser(value)) {
            if (j.nextToken() != JsonToken.START_OBJECT) throw new IOException("not a JSON object");
            while (j.nextToken() == JsonToken.FIELD_NAME) {
                String f = j.currentName();
                JsonToken t = j.nextToken();
                switch (f) {
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
            LOG.warn("a counter-rollups record that is not a rollup was passed over: {}", e.getMessage());
            return;
        }
        if (counter == null || res == null || start == Long.MIN_VALUE || revision < 0) {
            LOG.warn("a counter-rollups record without counter, res, start or revision was passed over");
            return;
        }
        Resolution r;
        try {
            r = Resolution.ofLabel(res);
        } catch (IllegalArgumentException e) {
            LOG.warn("a counter-rollups record of resolution '{}' was passed over", res);
            return;
        }
        // the job's watermark passed the end of this window: every window that ends before is closed too
        closedUpTo[0] = Math.max(closedUpTo[0], start + r.sizeMillis);
        // 1m windows just outside the range still feed the 5m windows inside it
        long lo = r == Resolution.M1 && fromMillis > Long.MIN_VALUE + Resolution.M5.sizeMillis
                ? Resolution.M5.windowStart(fromMillis)
                : fromMillis;
        if (start < lo || start >= toMillis) return;
        // only windows whose keys still live are kept (a 1m window as long as its 5m window's keys do), so that
        // memory is bounded by the retention, not by the topic's
        long now = System.currentTimeMillis();
        var policy = policies.forNamespace(RedisKeys.namespaceOf(counter));
        long liveUntil = r == Resolution.M1
                ? Math.max(
                        policy.expireAtMillis(r, start),
                        policy.expireAtMillis(Resolution.M5, Resolution.M5.windowStart(start)))
                : policy.expireAtMillis(r, start);
        if (liveUntil <= now) return;
        String id = id(counter, r, start);
        Window w = latest.get(id);
        if (w == null) latest.put(id, w = new Window(counter, r, start));
        if (revision >= w.revision) {
            w.revision = revision;
            w.sum = sum;
            w.events = events;
        }
        if (revision == 0) w.firstSum = sum;
    }

    /** Guarded writes, per counter, pipelined; returns {written, skipped}. */
    private long[] write(Map<String, List<RedisWrite>> byCounter) {
        long written = 0;
        long skipped = 0;
        try (UnifiedJedis j = endpoint.client()) {
            loadScript(j);
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
                List<RedisApplyScript.Call> slice = calls.subList(from, Math.min(calls.size(), from + CALLS_PER_SYNC));
                List<Response<Object>> replies = new ArrayList<>(slice.size());
                try (AbstractPipeline p = j.pipelined()) {
                    for (RedisApplyScript.Call call : slice)
                        replies.add(p.evalsha(RedisApplyScript.SHA1_BYTES, call.scriptKeys(), call.scriptArgs()));
                    p.sync();
                }
                for (int i = 0; i < slice.size(); i++) {
                    Object r;
                    try {
                        r = replies.get(i).get();
                    } catch (JedisDataException e) {
                        if (e.getMessage() == null || !e.getMessage().startsWith("NOSCRIPT")) throw e;
                        r = j.eval(
                                RedisApplyScript.SOURCE_BYTES,
                                slice.get(i).scriptKeys(),
                                slice.get(i).scriptArgs());
                    }
                    if (r instanceof List<?> l && l.size() >= 3) {
                        written += ((Number) l.get(0)).longValue();
                        skipped += ((Number) l.get(1)).longValue();
                        for (int k = 3; k + 1 < l.size(); k += 2) {
                            LOG.warn("Redis at {} rejected key {}: {}", endpoint, text(l.get(k)), text(l.get(k + 1)));
                        }
                    } else {
                        throw new IllegalStateException(
                                "Redis at " + endpoint + " answered the rollcount script with " + r);
                    }
                }
            }
        }
        return new long[] {written, skipped};
    }

    private static String text(Object o) {
        return o instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : String.valueOf(o);
    }

    private static void loadScript(UnifiedJedis j) {
        if (j instanceof RedisClusterClient cluster) {
            for (Map.Entry<String, ConnectionPool> node :
                    cluster.getClusterNodes().entrySet()) {
                try (Connection c = node.getValue().getResource();
                        Jedis n = new Jedis(c)) {
                    n.scriptLoad(RedisApplyScript.SOURCE);
                } catch (RuntimeException e) {
                    LOG.debug("loading the script on {} failed: {}", node.getKey(), e.toString());
                }
            }
        } else {
            j.scriptLoad(RedisApplyScript.SOURCE);
        }
    }
}
