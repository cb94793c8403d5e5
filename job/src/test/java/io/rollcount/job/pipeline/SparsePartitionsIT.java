package io.rollcount.job.pipeline;

import static io.rollcount.job.support.JobAwait.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobOptions;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.kafka.KafkaBrokerExtension;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.pipeline.FailureInjection.Place;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The whole job with fewer input partitions (or files) than source subtasks, on the in-process broker, the
 * real Redis and a MiniCluster: windows close while the job runs. Each Kafka run is unbounded (a bounded run
 * ends every source, and the end of input closes every window however the watermark was held) and checks,
 * mid-run, that {@code <prefix>:meta:watermark} passes the end of a window of the produced events plus the
 * allowed lateness, that the window's top-K list is in Redis, and that every window so closed holds the
 * ground truth ({@link GroundTruth}, computed from the produced records).
 */
class SparsePartitionsIT {
    /** A broker of this class's own, started before its {@code @BeforeAll} methods. */
    @RegisterExtension
    static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();

    @TempDir
    static Path dir;

    private static final int RECORDS = 3_000;
    /** 150 s of event time: the first whole minute of it is final once the watermark passes most of it. */
    private static final double EVENTS_PER_SECOND = 20;

    private static final Duration LATENESS = Duration.ofSeconds(10);
    private static final Duration IDLE_TIMEOUT = Duration.ofSeconds(1);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(60);

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slotsWithManagedMemory(4);

    @Test
    void onePartitionAtParallelismTwo() throws Exception {
        closesWindowsMidRun("sparse-1-of-2", 1, 0, 2);
    }

    @Test
    void onePartitionAtParallelismThree() throws Exception {
        closesWindowsMidRun("sparse-1-of-3", 1, 0, 3);
    }

    /** Each subtask reads one partition; the one whose partition stays empty counts as caught up. */
    @Test
    void fourPartitionsOneEmptyAtParallelismFour() throws Exception {
        closesWindowsMidRun("sparse-4-one-empty", 3, 1, 4);
    }

    /**
     * A partition added while the job runs goes to the subtask that had none (partition discovery): its
     * events behind the job's watermark by more than the allowed lateness are dead-lettered {@code late}, the
     * others counted, and its watermark moves the job's on.
     */
    @Test
    void aPartitionAddedLaterGoesToTheIdleSubtaskAndItsLateEventsAreDeadLettered() throws Exception {
        String topic = "sparse-added";
        KafkaInput in = produce(topic, 1, 0);
        Path clientFile = dir.resolve("discovery.properties");
        Files.writeString(clientFile, "partition.discovery.interval.ms=300\n");
        try (Run run = new Run(topic, clientFile)) {
            JobClient job = run.start(2);
            try {
                long closed = awaitWindowsClosed(run, in, job);
                Map<TopicPartition, Long> deadLettersFrom = KafkaOutputs.endOffsets(
                        KAFKA.broker().adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, "read_committed");
                addPartitions(topic, 2);
                long late = closed - LATENESS.toMillis() - 60_000;
                long fresh = System.currentTimeMillis() - 60_000;
                produceToPartition(topic, 1, "added:late", late, 100);
                produceToPartition(topic, 1, "added:fresh", fresh, 500);
                await(
                        "the added partition's fresh events counted and the watermark past them",
                        CLOSE_TIMEOUT,
                        () -> "40".equals(run.redis.jedis.get(run.redis.prefix + ":{added:fresh}:total"))
                                && watermark(run.redis) > fresh,
                        job);
                await(
                        "the added partition's late events dead-lettered",
                        CLOSE_TIMEOUT,
                        () -> lateFromPartition(topic, 1, deadLettersFrom) == 40,
                        job);
                assertThat(run.redis.jedis.exists(run.redis.prefix + ":{added:late}:total"))
                        .as("late events counted")
                        .isFalse();
            } finally {
                job.cancel().get(60, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * A file run with more subtasks than files: the subtasks without a split are told there are no more and
     * finish (their watermark the end of time), so the one reading the file sets the job's watermark alone.
     * Checked while that reader is held mid-file for longer than {@code --idle-timeout} (as a large gzip, checked
     * whole before its first line, holds it): windows close, and the rest of the file is not late once read.
     */
    @Test
    void oneFileAtParallelismThree() throws Exception {
        try (RedisTestSupport redis = new RedisTestSupport()) {
            Path input = Files.createDirectories(dir.resolve("one-file-" + redis.prefix));
            GroundTruth truth = new GroundTruth();
            long start = writeEvents(input.resolve("events.jsonl"), truth);
            JobSettings o = JobRuns.fileSettings(input, redis, Duration.ofMillis(300), dir).toBuilder()
                    .set("--dlq", dir.resolve("dlq-" + redis.prefix + ".jsonl").toString())
                    .set("--allowed-lateness", LATENESS)
                    .set("--idle-timeout", IDLE_TIMEOUT)
                    .build();
            FailureInjection.reset(Place.NONE, false);
            StreamExecutionEnvironment env = JobRuns.environment(JobRuns.configuration(o, 0), 3);
            // The reader holds after two thirds of the file until released: windows must close before the end.
            Pipeline.build(env, o, gated(JobConnectors.fileSource(o), RECORDS * 2 / 3), JobRuns.fileOutputs(o));
            JobClient job = env.executeAsync("sparse-one-file");
            try {
                long windowEnd = Resolution.M1.windowStart(start) + 60_000;
                await(
                        "the watermark past the first minute plus the lateness, mid-file",
                        CLOSE_TIMEOUT,
                        () -> watermark(redis) >= windowEnd + LATENESS.toMillis()
                                && redis.jedis.exists(topKey(redis, windowEnd - 60_000)),
                        job);
                assertThat(job.getJobStatus().get(30, TimeUnit.SECONDS).isGloballyTerminalState())
                        .isFalse();
                assertClosedWindowsExact(redis, truth, watermark(redis));
                FailureInjection.released = true;
                job.getJobExecutionResult().get(2, TimeUnit.MINUTES);
            } finally {
                if (!job.getJobStatus().get().isGloballyTerminalState())
                    job.cancel().get(60, TimeUnit.SECONDS);
            }
            Path deadLetters = Path.of(o.dlq);
            assertThat(Files.exists(deadLetters) ? Files.readAllLines(deadLetters) : List.<String>of())
                    .as("dead letters (the file holds no bad line: any would be a valid event found late)")
                    .isEmpty();
            RedisTruth.assertEquals(redis, truth);
        }
    }

    // ------------------------------------------------------------------ the Kafka runs

    private void closesWindowsMidRun(String topic, int withEvents, int empty, int parallelism) throws Exception {
        KafkaInput in = produce(topic, withEvents, empty);
        try (Run run = new Run(topic, null)) {
            JobClient job = run.start(parallelism);
            try {
                long wm = awaitWindowsClosed(run, in, job);
                int checked = assertClosedWindowsExact(run.redis, in.truth, wm);
                System.out.printf(
                        "SparsePartitionsIT %s: %d partitions (%d empty) at parallelism %d: watermark %d s past the"
                                + " first event, %d closed window values exact%n",
                        topic, withEvents + empty, empty, parallelism, (wm - in.startTs) / 1000, checked);
            } finally {
                job.cancel().get(60, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * Waits until the watermark in Redis is past the end of the first minute of {@code in} plus the allowed
     * lateness and that minute's top-K list is written; returns the watermark.
     */
    private static long awaitWindowsClosed(Run run, KafkaInput in, JobClient job) throws Exception {
        long windowStart = Resolution.M1.windowStart(in.startTs);
        long due = windowStart + 60_000 + LATENESS.toMillis();
        await(
                "the watermark past the first minute of the events plus the lateness, and its top-K list",
                CLOSE_TIMEOUT,
                () -> watermark(run.redis) >= due && run.redis.jedis.exists(topKey(run.redis, windowStart)),
                job);
        return watermark(run.redis);
    }

    /**
     * Creates {@code topic} with {@code withEvents} partitions, produces {@link #RECORDS} records to them, then
     * adds {@code empty} partitions that stay empty.
     */
    private static KafkaInput produce(String topic, int withEvents, int empty) throws Exception {
        KafkaPipelineIT.createTopic(KAFKA.broker(), withEvents, topic);
        KafkaInput in = KafkaInput.withinOneHour(topic, topic.hashCode(), RECORDS, EVENTS_PER_SECOND);
        try (KafkaProducer<byte[], byte[]> p =
                KafkaInput.producer(KAFKA.broker().adminProperties())) {
            in.produce(p, RECORDS);
        }
        if (empty > 0) addPartitions(topic, withEvents + empty);
        return in;
    }

    /** Raises the partition count of {@code topic} to {@code total} and waits until every partition answers. */
    private static void addPartitions(String topic, int total) throws Exception {
        try (Admin admin = Admin.create(KAFKA.broker().adminProperties())) {
            admin.createPartitions(Map.of(topic, NewPartitions.increaseTo(total)))
                    .all()
                    .get(30, TimeUnit.SECONDS);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (KafkaOutputs.endOffsets(KAFKA.broker().adminProperties(), topic, "read_committed")
                        .size()
                < total) {
            assertThat(System.nanoTime()).as("partitions of " + topic).isLessThan(deadline);
            Thread.sleep(100);
        }
    }

    /** 40 events of {@code counter}, {@code stepMillis} apart from {@code ts}, to partition {@code partition}. */
    private static void produceToPartition(String topic, int partition, String counter, long ts, long stepMillis)
            throws Exception {
        try (KafkaProducer<byte[], byte[]> p =
                KafkaInput.producer(KAFKA.broker().adminProperties())) {
            for (int i = 0; i < 40; i++) {
                String line = "{\"counter\":\"" + counter + "\",\"ts\":" + (ts + i * stepMillis) + "}";
                p.send(new ProducerRecord<>(topic, partition, KafkaInput.utf8(counter), KafkaInput.utf8(line)));
            }
            p.flush();
        }
    }

    /**
     * Committed dead letters {@code late} whose source is partition {@code partition} of {@code topic}, each with its
     * raw input (the line produced, which names its counter).
     */
    private static long lateFromPartition(String topic, int partition, Map<TopicPartition, Long> from) {
        String source = topic + "/" + partition + "/";
        List<ConsumerRecord<byte[], byte[]>> records =
                KafkaOutputs.read(KAFKA.broker().adminProperties(), KafkaIO.DEAD_LETTER_TOPIC, from, "read_committed");
        return records.stream()
                .map(r -> KafkaOutputs.parse(r.value()))
                .filter(v -> "late".equals(v.get("reason"))
                        && String.valueOf(v.get("source")).startsWith(source)
                        && String.valueOf(v.get("payload")).contains("\"added:late\""))
                .count();
    }

    /** The options, Redis prefix and running job of one unbounded Kafka run. */
    private static final class Run implements AutoCloseable {
        final RedisTestSupport redis = new RedisTestSupport();
        final JobSettings options;

        Run(String topic, Path clientProperties) {
            String id = "sparse-" + UUID.randomUUID().toString().substring(0, 8);
            options = JobRuns.kafkaSettings(
                            KAFKA.broker().bootstrap(),
                            topic,
                            id,
                            false,
                            redis.url(),
                            redis.prefix,
                            Duration.ofMillis(300))
                    .toBuilder()
                    .set("--idle-timeout", IDLE_TIMEOUT)
                    .set("--allowed-lateness", LATENESS)
                    .set("--kafka.properties", clientProperties)
                    .build();
            JobConnectors.ensureOutputTopics(options);
        }

        JobClient start(int parallelism) throws Exception {
            StreamExecutionEnvironment env = JobRuns.environment(JobRuns.configuration(options, 0), parallelism);
            Pipeline.build(env, options, JobConnectors.kafkaSource(options), JobRuns.kafkaOutputs(options));
            return env.executeAsync("sparse-" + options.kafkaTopic);
        }

        @Override
        public void close() {
            redis.close();
        }
    }

    // ------------------------------------------------------------------ expected outputs

    private static long watermark(RedisTestSupport redis) {
        String wm = redis.jedis.get(redis.prefix + ":meta:watermark");
        return wm == null ? Long.MIN_VALUE : Long.parseLong(wm);
    }

    private static String topKey(RedisTestSupport redis, long windowStart) {
        return redis.prefix + ":top:_all:1m:" + windowStart / 1000;
    }

    /**
     * Every 5 s and 1 min window sum of the ground truth that the watermark {@code wm} made final (its end plus
     * the allowed lateness at or before it) is in Redis with its true value; returns how many were checked.
     * Looks after two flush intervals: the counting operator writes a changed 5 s window at its next flush
     * (every {@code --flush-interval}), which may come after the watermark that made the window final.
     */
    private static int assertClosedWindowsExact(RedisTestSupport redis, GroundTruth truth, long wm)
            throws InterruptedException {
        Thread.sleep(2 * new JobOptions().flushInterval.toMillis());
        List<String> wrong = new ArrayList<>();
        int checked = 0;
        for (Map.Entry<String, Long> e : truth.redisKeys(redis.prefix).entrySet()) {
            String[] parts = e.getKey().split(":");
            if (parts.length < 2) continue;
            Resolution res = resolutionOf(parts[parts.length - 2]);
            if (res == null || !parts[parts.length - 1].matches("\\d+")) continue;
            long end = Long.parseLong(parts[parts.length - 1]) * 1000 + res.sizeMillis;
            if (end + LATENESS.toMillis() > wm) continue;
            checked++;
            String actual = redis.jedis.get(e.getKey());
            if (!String.valueOf(e.getValue()).equals(actual))
                wrong.add(e.getKey() + ": expected " + e.getValue() + " got " + actual);
        }
        assertThat(checked).as("closed windows").isPositive();
        assertThat(wrong)
                .as("closed windows with a wrong value (of " + checked + ")")
                .isEmpty();
        return checked;
    }

    private static Resolution resolutionOf(String label) {
        return label.equals(Resolution.S5.label) || label.equals(Resolution.M1.label)
                ? Resolution.ofLabel(label)
                : null;
    }

    // ------------------------------------------------------------------ the file run

    /** Writes {@link #RECORDS} events ending 90 s ago to {@code file}; returns the first one's event time. */
    private static long writeEvents(Path file, GroundTruth truth) throws Exception {
        long start = System.currentTimeMillis() - 90_000 - (long) (RECORDS * 1000 / EVENTS_PER_SECOND);
        EventGenerator gen =
                new EventGenerator(11, EventGenerator.Workload.zipf, 3_000, 500, start, EVENTS_PER_SECOND, 3_000, 0);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < RECORDS; i++) {
            Generated g = gen.next();
            truth.add(g);
            sb.append(g.line()).append('\n');
        }
        Files.writeString(file, sb);
        return start;
    }

    private static <S extends SourceSplit, E> Source<Event, S, E> gated(Source<Event, S, E> source, long holdAt) {
        return new GatedSource<>(source, holdAt);
    }
}
