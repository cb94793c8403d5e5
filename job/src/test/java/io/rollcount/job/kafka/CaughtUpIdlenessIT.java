package io.rollcount.job.kafka;

import static io.rollcount.job.kafka.KafkaTestSupport.utf8;
import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobSettings;
import io.rollcount.job.model.Event;
import io.rollcount.job.ops.ValidEventsWatermarks;
import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The job's Kafka source ({@link CaughtUpIdlenessSource}) against the in-process broker: after a backlog, a
 * partition read second does not find its events behind the watermark that the partition read first set; and
 * an empty partition still lets the watermark advance.
 */
class CaughtUpIdlenessIT {
    /** A broker of this class's own, started before its {@code @BeforeAll} methods. */
    @RegisterExtension
    static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();

    private static final Duration LATENESS = Duration.ofSeconds(5);

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(KafkaTestSupport::miniCluster);

    private static KafkaProducer<byte[], byte[]> producer() {
        Properties p = KAFKA.broker().adminProperties();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        return new KafkaProducer<>(p);
    }

    private static ProducerRecord<byte[], byte[]> event(String topic, int partition, long ts) {
        return new ProducerRecord<>(
                topic, partition, null, utf8("{\"counter\":\"c" + partition + "\",\"ts\":" + ts + "}"));
    }

    private static JobSettings options(String topic, boolean bounded, Duration idleTimeout) {
        return JobSettings.builder()
                .set("--kafka.bootstrap", KAFKA.broker().bootstrap())
                .set("--kafka.topic", topic)
                .set("--kafka.group-id", "g-" + topic)
                .set("--kafka.starting-offsets", JobSettings.StartingOffsets.earliest)
                .set("--bounded", bounded)
                .set("--idle-timeout", idleTimeout)
                .build();
    }

    /**
     * Counts the events more than {@link #LATENESS} behind the watermark (what the job dead-letters as late), and
     * sleeps a little per event, so that the source is read slowly and periodic watermarks go out while the
     * first partition's backlog is being read.
     */
    static final class LateEvents extends ProcessFunction<Event, Long> {
        @Override
        public void processElement(Event e, Context ctx, Collector<Long> out) throws Exception {
            Thread.sleep(0, 300_000);
            long watermark = ctx.timerService().currentWatermark();
            if (watermark != Long.MIN_VALUE && e.ts < watermark - LATENESS.toMillis()) out.collect(e.ts);
        }
    }

    private static long lateEvents(Source<Event, ?, ?> source) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.getConfig().setAutoWatermarkInterval(50);
        long late = 0;
        try (CloseableIterator<Long> it = env.fromSource(
                        source,
                        ValidEventsWatermarks.strategy(Duration.ofSeconds(1), Duration.ZERO),
                        "kafka",
                        TypeInformation.of(Event.class))
                .process(new LateEvents())
                .executeAndCollect()) {
            while (it.hasNext()) {
                it.next();
                late++;
            }
        }
        return late;
    }

    /**
     * Two partitions, each with 80 s of backlog (events every 20 ms of event time), read slowly by one reader:
     * each partition's output exists before the first record of either, so neither runs the watermark ahead of
     * the other and nothing is late.
     */
    @Test
    void aBacklogOverTwoPartitionsHasNothingLate() throws Exception {
        String topic = "backlog";
        KAFKA.broker().createTopics(2, topic);
        long t0 = System.currentTimeMillis() - Duration.ofMinutes(3).toMillis();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            for (int i = 0; i < 4_000; i++) {
                producer.send(event(topic, 0, t0 + i * 20L));
                producer.send(event(topic, 1, t0 + i * 20L));
            }
            producer.flush();
        }
        assertThat(lateEvents(io.rollcount.job.JobConnectors.kafkaSource(options(topic, true, Duration.ofSeconds(10)))))
                .as("late events")
                .isZero();
    }

    /** An empty partition, read to its end, becomes idle: the watermark follows the other partition. */
    @Test
    void anEmptyPartitionDoesNotStallTheWatermark() throws Exception {
        String topic = "one-empty";
        KAFKA.broker().createTopics(2, topic);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        env.getConfig().setAutoWatermarkInterval(50);
        MAX_WATERMARK.set(Long.MIN_VALUE);
        env.fromSource(
                        io.rollcount.job.JobConnectors.kafkaSource(options(topic, false, Duration.ofSeconds(1))),
                        ValidEventsWatermarks.strategy(Duration.ofSeconds(1), Duration.ZERO),
                        "kafka",
                        TypeInformation.of(Event.class))
                .process(new Watermarks())
                .sinkTo(new org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink<>());
        JobClient job = env.executeAsync("one-empty");
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            long start = System.currentTimeMillis();
            long deadline = start + 30_000;
            // Events on partition 0 only, at the wall clock, until the watermark passes the start.
            while (System.currentTimeMillis() < deadline && maxWatermark() < start) {
                producer.send(event(topic, 0, System.currentTimeMillis()));
                producer.flush();
                Thread.sleep(100);
            }
            assertThat(maxWatermark())
                    .as("the watermark, with partition 1 empty")
                    .isGreaterThanOrEqualTo(start);
        } finally {
            job.cancel().get();
        }
    }

    static final AtomicLong MAX_WATERMARK = new AtomicLong(Long.MIN_VALUE);

    static long maxWatermark() {
        return MAX_WATERMARK.get();
    }

    static final class Watermarks extends ProcessFunction<Event, Long> {
        @Override
        public void processElement(Event e, Context ctx, Collector<Long> out) {
            MAX_WATERMARK.accumulateAndGet(ctx.timerService().currentWatermark(), Math::max);
        }
    }
}
