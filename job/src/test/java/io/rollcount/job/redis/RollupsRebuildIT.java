package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.kafka.KafkaBrokerExtension;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.model.Json;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.support.RecentTime;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.resps.Tuple;

/**
 * {@link RollupsRebuild} on its own: it reads the rollups of its key prefix from a topic of the in-process broker
 * and writes the closed windows back to the real Redis (under a key prefix of the test's own): the latest revision
 * of each window, the 5m windows summed from their 1m windows, the window top-K lists as ranked at each window's
 * close (revision 0), with their usual expiry; it passes over the rollups of another prefix and those that name
 * none, and the windows whose keys have expired.
 */
class RollupsRebuildIT {
    @RegisterExtension
    static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();

    @RegisterExtension
    final RedisTestSupport redis = new RedisTestSupport();

    /** Closed windows: the hour before the current one. */
    private static final long T = RecentTime.HOUR_START - Resolution.H1.sizeMillis;

    private static final long M = Resolution.M1.sizeMillis;

    @Test
    void writesTheClosedWindowsOfItsOwnPrefixBack() throws Exception {
        String topic = "rollups-own";
        KAFKA.broker().createTopics(2, topic);
        String own = redis.prefix;
        String other = redis.prefix + ":other"; // under the test's prefix, so that its cleanup covers it too
        long old = Resolution.M1.windowStart(System.currentTimeMillis()) - 3 * Resolution.D1.sizeMillis;
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            send(producer, topic, own, rollup("post:1", Resolution.M1, T, 5, 5, 0));
            send(producer, topic, own, rollup("post:1", Resolution.M1, T, 7, 8, 1)); // a late event
            send(producer, topic, own, rollup("post:1", Resolution.M1, T + M, 3, 3, 0));
            send(producer, topic, own, rollup("post:2", Resolution.M1, T, 6, 6, 0));
            send(producer, topic, own, rollup("post:1", Resolution.H1, T, 10, 11, 0));
            send(producer, topic, own, rollup("post:1", Resolution.M1, old, 9, 9, 0)); // its 1m key expired
            send(producer, topic, other, rollup("post:1", Resolution.M1, T, 1_000, 1_000, 2));
            send(producer, topic, null, rollup("post:9", Resolution.M1, T, 4, 4, 0)); // names no prefix
        }
        RollupsRebuild rebuild =
                new RollupsRebuild(KAFKA.broker().adminProperties(), topic, RedisEndpoint.parse(redis.url()), own);

        RollupsRebuild.Result r = rebuild.run(Long.MIN_VALUE, Long.MAX_VALUE);

        assertThat(r.records()).isEqualTo(6);
        assertThat(r.otherPrefixes()).isEqualTo(1);
        assertThat(r.legacy()).isEqualTo(1);
        assertThat(r.expired()).isEqualTo(1);
        RedisKeys keys = new RedisKeys(own);
        assertThat(redis.jedis.get(keys.window("post:1", Resolution.M1, T)))
                .as("the latest revision")
                .isEqualTo("7");
        assertThat(redis.jedis.get(keys.window("post:1", Resolution.M1, T + M))).isEqualTo("3");
        assertThat(redis.jedis.get(keys.window("post:2", Resolution.M1, T))).isEqualTo("6");
        assertThat(redis.jedis.get(keys.window("post:1", Resolution.H1, T))).isEqualTo("10");
        assertThat(redis.jedis.get(keys.window("post:1", Resolution.M5, T)))
                .as("its 1m windows summed")
                .isEqualTo("10");
        assertThat(redis.jedis.get(keys.window("post:2", Resolution.M5, T))).isEqualTo("6");
        assertThat(redis.jedis.exists(keys.window("post:1", Resolution.M1, old)))
                .as("an expired window")
                .isFalse();
        assertThat(redis.jedis.exists(keys.window("post:9", Resolution.M1, T)))
                .as("a rollup that names no prefix")
                .isFalse();
        assertThat(redis.keys()).as("nothing of the other prefix").noneMatch(k -> k.startsWith(other + ":"));
        long left = Resolution.M1.expireAtMillis(T) - System.currentTimeMillis();
        assertThat(redis.jedis.pttl(keys.window("post:1", Resolution.M1, T)))
                .as("the window's own expiry")
                .isBetween(left - 60_000, left);
        // ranked by the sums at the window's close (revision 0), for the namespace and across namespaces
        for (String ns : List.of("post", "_all")) {
            assertThat(redis.jedis.zrevrangeWithScores(keys.top(ns, Resolution.M1, T), 0, -1))
                    .as("top list of " + ns)
                    .extracting(Tuple::getElement, Tuple::getScore)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple("post:2", 6.0),
                            org.assertj.core.groups.Tuple.tuple("post:1", 5.0));
        }

        // a second run: a window that the job wrote since with a larger sum keeps it, the rest stays as it is
        redis.jedis.set(keys.window("post:1", Resolution.M1, T), "8");
        List<String> before = redis.keys();
        rebuild.run(Long.MIN_VALUE, Long.MAX_VALUE);
        assertThat(redis.keys()).containsExactlyInAnyOrderElementsOf(before);
        assertThat(redis.jedis.get(keys.window("post:1", Resolution.M1, T))).isEqualTo("8");
        assertThat(redis.jedis.get(keys.window("post:1", Resolution.M5, T))).isEqualTo("10");
        assertThat(redis.jedis.get(keys.window("post:2", Resolution.M1, T))).isEqualTo("6");
    }

    private static Rollup rollup(String counter, Resolution res, long start, long sum, long events, int revision) {
        return new Rollup(counter, res.label, start, start + res.sizeMillis, sum, events, null, revision);
    }

    /** A rollup as the job's rollups sink writes it ({@link KafkaIO#rollups}); {@code prefix} null: as older versions did. */
    private static void send(KafkaProducer<byte[], byte[]> producer, String topic, String prefix, Rollup r)
            throws Exception {
        byte[] value = Json.rollup(prefix, r);
        if (prefix == null)
            value = new String(value, StandardCharsets.UTF_8)
                    .replace("\"prefix\":null,", "")
                    .getBytes(StandardCharsets.UTF_8);
        ProducerRecord<byte[], byte[]> rec =
                new ProducerRecord<>(topic, r.counter.getBytes(StandardCharsets.UTF_8), value);
        if (prefix != null) rec.headers().add(KafkaIO.PREFIX_HEADER, prefix.getBytes(StandardCharsets.UTF_8));
        producer.send(rec).get();
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        Properties p = new Properties();
        p.putAll(KAFKA.broker().adminProperties());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return new KafkaProducer<>(p);
    }
}
