package io.rollcount.job.redis;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.rollcount.job.model.Resolution;
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

    /**
     * @param kafka the Kafka client settings ({@code bootstrap.servers} and any of {@code --kafka.properties})
     */
    public RollupsRebuild(Properties kafka, String topic, RedisEndpoint endpoint, String keyPrefix) {
        this.kafka = kafka;
        this.topic = topic;
        this.endpoint = endpoint;
        this.keyPrefix = keyPrefix;
    }

    /** What a rebuild read and wrote. */
    public record Result(long records, long windows, long written, long skipped, long expired, double seconds) {
        @Override
        public String toString() {
            return String.format(
                    "read %,d rollups (%,d windows): %,d keys written, %,d left as Redis had them (as new or newer),"
                            + " %,d expired; %.1f s",
                    records, windows, written, skipped, expired, seconds);
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
        long records = read(fromMillis, toMillis, latest);
        // 5m windows: the sum of their 1m windows (contract: every 5m window is five 1m windows)
        Map<String, Window> derived = new HashMap<>();
        for (Window w : latest.values()) {
            if (w.res != Resolution.M1) continue;
            long start = Resolution.M5.windowStart(w.start);
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
            long at = w.res.expireAtMillis(w.start);
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
        long[] as = write(byCounter);
        Result r = new Result(records, latest.size(), as[0], as[1], expired, (System.nanoTime() - t0) / 1e9);
        LOG.info("rebuilt closed windows under key prefix '{}' at {} from {}: {}", keyPrefix, endpoint, topic, r);
        return r;
    }

    private static String id(String counter, Resolution res, long start) {
        return res.label + ":" + start + ":" + counter;
    }

    /** Reads the topic from its beginning to its end offsets at the start (committed records only). */
    private long read(long fromMillis, long toMillis, Map<String, Window> latest) {
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
                    take(json, rec.value(), fromMillis, toMillis, latest);
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
    private static void take(
            JsonFactory json, byte[] value, long fromMillis, long toMillis, Map<String, Window> latest) {
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
        // 1m windows just outside the range still feed the 5m windows inside it
        long lo = r == Resolution.M1 && fromMillis > Long.MIN_VALUE + Resolution.M5.sizeMillis
                ? Resolution.M5.windowStart(fromMillis)
                : fromMillis;
        if (start < lo || start >= toMillis) return;
        // only windows whose keys still live are kept (a 1m window as long as its 5m window's keys do), so that
        // memory is bounded by the retention, not by the topic's
        long now = System.currentTimeMillis();
        long liveUntil = r == Resolution.M1
                ? Resolution.M5.expireAtMillis(Resolution.M5.windowStart(start))
                : r.expireAtMillis(start);
        if (liveUntil <= now) return;
        String id = id(counter, r, start);
        Window w = latest.get(id);
        if (w == null) latest.put(id, w = new Window(counter, r, start));
        if (revision >= w.revision) {
            w.revision = revision;
            w.sum = sum;
            w.events = events;
        }
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
