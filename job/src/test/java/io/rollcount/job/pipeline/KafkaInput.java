package io.rollcount.job.pipeline;

import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A generated stream produced to an input topic, and what the job must make of it, computed here and not
 * by the job: the {@link GroundTruth} of the valid records, and the dead letter of every bad one (by its
 * {@code topic/partition/offset}, known from the producer's acknowledgement).
 *
 * <p>Valid records: {@link EventGenerator} zipf with redeliveries (same {@code event_id}), out of order
 * within the bound, event times ending before the wall clock, keyed by counter id; every 50th record without
 * {@code event_id} also without {@code ts} (its Kafka record timestamp is its event time); decrements on the
 * {@code user:} namespace only, so that the counters of the other namespaces only ever grow. Bad records:
 * every line of {@link EventGenerator#badLines}, the invalid UTF-8 one, a tombstone (null value), and one
 * record an hour ahead of the wall clock ({@code future_ts}), most with a key, one without.
 */
final class KafkaInput {
    /** What the dead-letter topic must hold for one bad record. */
    record DeadLetter(String reason, String payload, String key) {}

    final String topic;
    final GroundTruth truth = new GroundTruth();
    final Map<String, DeadLetter> deadLetters = new HashMap<>();
    final long startTs;
    private final EventGenerator gen;
    private final String[][] badLines;
    private final int badEvery;
    private int badIndex;
    private long index;
    private boolean extrasSent;
    private final List<Pending> pending = new ArrayList<>();

    private record Pending(Future<RecordMetadata> ack, DeadLetter expected) {}

    /**
     * @param total about how many records {@link #produce} will be asked for in all (spreads the bad lines over them)
     */
    KafkaInput(String topic, long seed, int total, long startTs) {
        this(topic, seed, total, startTs, 1_000);
    }

    /** The same, {@code eventsPerSecond} records per second of event time. */
    KafkaInput(String topic, long seed, int total, long startTs, double eventsPerSecond) {
        this.topic = topic;
        this.startTs = startTs;
        this.gen = new EventGenerator(
                seed, EventGenerator.Workload.zipf, 3_000, 500, startTs, eventsPerSecond, 3_000, 0.0);
        this.badLines = EventGenerator.badLines(startTs);
        this.badEvery = Math.max(50, total / (badLines.length + 2));
    }

    /**
     * {@code records} records at {@code eventsPerSecond} whose event times lie in one UTC hour (the current one if the
     * span fits, else the one before) and end over a minute ago, so that every window of them can be checked.
     */
    static KafkaInput withinOneHour(String topic, long seed, int records, double eventsPerSecond) {
        long span = (long) (records * 1000 / eventsPerSecond);
        long now = System.currentTimeMillis();
        long start = now - 90_000 - span;
        if (io.rollcount.job.model.Resolution.H1.windowStart(start)
                != io.rollcount.job.model.Resolution.H1.windowStart(start + span + 10_000)) {
            start = io.rollcount.job.model.Resolution.H1.windowStart(now) - 3_600_000L + 60_000;
        }
        return new KafkaInput(topic, seed, records, start, eventsPerSecond);
    }

    /** Creates the topic (3 partitions) on {@code broker} and writes the next {@code records} records to it. */
    void produceTo(io.rollcount.job.kafka.KafkaBroker broker, int records) throws Exception {
        broker.createTopics(3, topic);
        try (KafkaProducer<byte[], byte[]> p = producer(broker.adminProperties())) {
            produce(p, records);
        }
    }

    /** Event time of a stream of {@code records} records that ends {@code marginMillis} before now. */
    static long startFor(int records, long marginMillis) {
        return System.currentTimeMillis() - marginMillis - records; // 1000 events per second of event time
    }

    static KafkaProducer<byte[], byte[]> producer(Properties client) {
        Properties p = new Properties();
        p.putAll(client);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "10");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(256 * 1024));
        // One request in flight: the first produce to a topic just created may be refused with
        // NOT_LEADER_OR_FOLLOWER (KafkaBroker.createTopics waits for a leader in the metadata, not for the
        // partition to accept writes); with more in flight, later batches of the idempotent producer land
        // first and the retried first batch is refused for ever with OUT_OF_ORDER_SEQUENCE_NUMBER.
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    /** Produces the next {@code n} records (plus the few extra bad ones on the first call) and waits for their acknowledgements. */
    void produce(KafkaProducer<byte[], byte[]> producer, int n) throws Exception {
        if (!extrasSent) {
            extrasSent = true;
            bad(producer, "bad-utf8", EventGenerator.invalidUtf8Line(), "invalid_utf8");
            bad(producer, "tombstone", null, "invalid_json");
            long future = System.currentTimeMillis() + 3_600_000L;
            bad(producer, "future", utf8("{\"counter\":\"post:future:likes\",\"ts\":" + future + "}"), "future_ts");
        }
        for (int i = 0; i < n; i++) {
            index++;
            if (index % badEvery == 17 % badEvery) {
                String[] line = badLines[badIndex % badLines.length];
                // One bad record in five has no key: the dead letter must keep that too.
                bad(producer, badIndex % 5 == 4 ? null : "bad-" + badIndex, utf8(line[0]), line[1]);
                badIndex++;
                continue;
            }
            Generated g = gen.next();
            truth.add(g);
            if (g.eventId() == null && !g.redelivery() && index % 50 == 0) {
                // No ts: the Kafka record timestamp is the event time.
                String line = g.line().replaceFirst(",\"ts\":-?\\d+", "");
                producer.send(new ProducerRecord<>(topic, null, g.ts(), utf8(g.counter()), utf8(line)));
            } else {
                producer.send(new ProducerRecord<>(topic, utf8(g.counter()), utf8(g.line())));
            }
            if (g.counter().startsWith("user:") && index % 3 == 0) {
                long delta = -(1 + index % 3 + (index / 3) % 2);
                String line = "{\"counter\":\"" + g.counter() + "\",\"delta\":" + delta + ",\"ts\":" + g.ts() + "}";
                truth.add(new Generated(line, g.counter(), delta, g.ts(), null, null, false));
                producer.send(new ProducerRecord<>(topic, utf8(g.counter()), utf8(line)));
            }
        }
        producer.flush();
        for (Pending p : pending) {
            RecordMetadata m = p.ack().get();
            deadLetters.put(m.topic() + "/" + m.partition() + "/" + m.offset(), p.expected());
        }
        pending.clear();
    }

    /** Whether every bad line of {@link EventGenerator#badLines} was produced. */
    boolean allBadLinesSent() {
        return badIndex >= badLines.length;
    }

    private void bad(KafkaProducer<byte[], byte[]> producer, String key, byte[] value, String reason) {
        String payload = value == null
                ? null
                : reason.equals("invalid_utf8")
                        ? Base64.getEncoder().encodeToString(value)
                        : new String(value, StandardCharsets.UTF_8);
        pending.add(new Pending(
                producer.send(new ProducerRecord<>(topic, utf8(key), value)), new DeadLetter(reason, payload, key)));
    }

    static byte[] utf8(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }
}
