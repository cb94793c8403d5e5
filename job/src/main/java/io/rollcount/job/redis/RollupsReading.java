package io.rollcount.job.redis;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.Resolution;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The topic side of a {@link RollupsRebuild}: one reading of {@code counter-rollups} from its beginning, with
 * {@code isolation.level=read_committed}, in one or more steps ({@link #readTo}), keeping the latest revision of
 * each window of the rebuild's key prefix whose keys still live; the windows read so far.
 */
final class RollupsReading implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(RollupsRebuild.class);

    private final RollupsRebuild rebuild;
    private final String topic;
    private final String keyPrefix;
    final long fromMillis;
    final long toMillis;
    final KafkaConsumer<byte[], byte[]> consumer;
    final List<TopicPartition> parts = new ArrayList<>();
    final Map<String, Window> latest = new HashMap<>();
    /** The end of the latest window read: the job's watermark passed it, so every window ending before is closed. */
    long closedUpTo = Long.MIN_VALUE;

    final Counts counts = new Counts();
    final JsonFactory json = new JsonFactory();

    RollupsReading(RollupsRebuild rebuild, long fromMillis, long toMillis) {
        this.rebuild = rebuild;
        this.topic = rebuild.topic;
        this.keyPrefix = rebuild.keyPrefix;
        this.fromMillis = fromMillis;
        this.toMillis = toMillis;
        consumer = new KafkaConsumer<>(consumerProperties("read_committed"));
        List<PartitionInfo> infos = consumer.partitionsFor(topic, Duration.ofSeconds(30));
        if (infos == null || infos.isEmpty())
            throw new RollupsRebuild.NoTopicException("topic " + topic + " does not exist");
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
     * Reads on to {@code ends}; returns the ids of the windows changed by what it read. {@code commitWait}: how
     * long to wait for transactions below {@code ends} to be resolved (null: {@code ends} are committed already).
     */
    Set<String> readTo(Map<TopicPartition, Long> ends, Duration commitWait) {
        long deadline = commitWait == null ? Long.MAX_VALUE : System.nanoTime() + commitWait.toNanos();
        Set<String> changed = new HashSet<>();
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
                take(rec, changed);
            }
        }
        return changed;
    }

    @Override
    public void close() {
        consumer.close(Duration.ofSeconds(5));
    }

    /** One window: the latest revision read. */
    static final class Window {
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

    /** Records read, by whose they are. */
    static final class Counts {
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
        p.putAll(rebuild.kafka);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "5000");
        p.remove(ConsumerConfig.GROUP_ID_CONFIG);
        return p;
    }

    /** The id of a window in {@link #latest}. */
    static String id(String counter, Resolution res, long start) {
        return res.label + ":" + start + ":" + counter;
    }

    private static boolean reached(KafkaConsumer<byte[], byte[]> consumer, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (consumer.position(e.getKey()) < e.getValue()) return false;
        }
        return true;
    }

    /**
     * One rollup record: kept if it is of this key prefix (or names none and {@code --legacy-rollups}) and the latest
     * revision of its window so far; its window's id goes into {@code changed}. A record it cannot read is logged
     * and passed.
     */
    private void take(ConsumerRecord<byte[], byte[]> rec, Set<String> changed) {
        org.apache.kafka.common.header.Header header = rec.headers().lastHeader(KafkaIO.PREFIX_HEADER);
        if (header != null && !keyPrefix.equals(new String(header.value(), StandardCharsets.UTF_8))) {
            counts.other++;
            return;
        }
        String prefix = null;
        String counter = null;
        String res = null;
        long start = Long.MIN_VALUE;
        long sum = 0;
        long events = 0;
        long revision = -1;
        try (JsonParser j = json.createParser(rec.value())) {
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
            counts.legacy++;
            if (!rebuild.legacyRollups) return;
        } else if (!prefix.equals(keyPrefix)) {
            counts.other++;
            return;
        } else {
            counts.own++;
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
        keep(counter, r, start, sum, events, revision, changed);
    }

    /** A rollup of this prefix: kept if its window's keys still live and it is the latest revision read. */
    private void keep(
            String counter, Resolution r, long start, long sum, long events, long revision, Set<String> changed) {
        // the job's watermark passed the end of this window: every window that ends before is closed too
        closedUpTo = Math.max(closedUpTo, start + r.sizeMillis);
        // 1m windows just outside the range still feed the 5m windows inside it
        long lo = r == Resolution.M1 && fromMillis > Long.MIN_VALUE + Resolution.M5.sizeMillis
                ? Resolution.M5.windowStart(fromMillis)
                : fromMillis;
        if (start < lo || start >= toMillis) return;
        // only windows whose keys still live are kept (a 1m window as long as its 5m window's keys do), so that
        // memory is bounded by the retention, not by the topic's
        long now = System.currentTimeMillis();
        var policy = rebuild.policies.forNamespace(CounterId.namespaceOf(counter));
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
            changed.add(id);
        }
        if (revision == 0) w.firstSum = sum;
    }
}
