package io.rollcount.bench;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.kafka.EventDeserializer;
import io.rollcount.job.model.Event;
import java.io.IOException;
import java.util.Properties;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Kafka mode of {@code bench job}: Rollcount and the textbook job with ours' count outputs (without
 * deduplication, unique users or lists) reading the same events from a Kafka broker in a child JVM, with the CPU
 * per event of the job, Redis and the broker ({@code RESULT job.kafka.zipf}).
 */
final class KafkaBench {

    private final BenchRuns runs;
    private final BenchReport report;
    /** The Kafka mode's {@code --kafka.properties} (both jobs), or null. */
    private final String kafkaProperties;

    KafkaBench(BenchRuns runs, BenchReport report, String kafkaProperties) {
        this.runs = runs;
        this.report = report;
        this.kafkaProperties = kafkaProperties;
    }

    /**
     * Rollcount and the textbook job with ours' count outputs (Redis windows and totals, closed windows to
     * {@code counter-rollups} exactly once) reading the same events from a Kafka broker in a child JVM
     * ({@link BrokerProcess}), whose CPU is read from its process; the job's CPU is this JVM's
     * ({@link JobCpu}) and Redis's from INFO cpu, all over the same span of each run. Each variant runs once
     * over the warm-up's events on a topic of their own before it is measured.
     */
    void run() throws Exception {
        BenchEvents ev = runs.events(Workload.zipf, runs.size.kafkaEvents());
        BenchEvents warm = runs.events(Workload.zipf, runs.size.warmupEvents());
        String topic = "bench-events-" + runs.prefix;
        String warmTopic = "bench-warm-" + runs.prefix;
        try (BrokerProcess broker = BrokerProcess.start(runs.work.resolve("kafka"))) {
            broker.createTopics(JobBench.PARALLELISM, topic);
            broker.createTopics(JobBench.PARALLELISM, warmTopic);
            produce(broker.clientProperties(), warmTopic, warm);
            produce(broker.clientProperties(), topic, ev);
            BenchClock.brokerCpu = broker::cpuNanos;
            // warm-up, not measured: the broker's JVM (fetches, transactions, their JIT) and the Kafka clients in
            // this one; without it a run of this size measures mostly the broker compiling its own code
            kafkaOurs(broker, warmTopic, "-warm", warm);
            runs.cleanRedis();
            kafkaNaive(broker, warmTopic, "-warm", warm);
            runs.cleanRedis();
            BenchRuns.Measured ours = kafkaOurs(broker, topic, "", ev);
            runs.cleanRedis();
            BenchRuns.Measured naive = kafkaNaive(broker, topic, "", ev);
            runs.cleanRedis();
            result(ev, ours, naive);
        } finally {
            BenchClock.brokerCpu = null;
        }
    }

    /** The RESULT line of the Kafka mode: ours and the textbook job, with the CPU of the job, Redis and the broker. */
    private void result(BenchEvents ev, BenchRuns.Measured ours, BenchRuns.Measured naive) {
        long n = ev.count;
        double oursEps = ours.eps(n);
        double naiveEps = naive.eps(n);
        double job = ours.jobMicros(n);
        double redis = ours.redisMicros(n);
        double brokerUs = ours.run().brokerCpuSeconds * 1e6 / n;
        double all = job + redis + brokerUs;
        double naiveAll = naive.jobMicros(n) + naive.redisMicros(n) + naive.run().brokerCpuSeconds * 1e6 / n;
        report.result(
                "job.kafka.zipf",
                "ours_eps",
                BenchReport.eps(oursEps),
                "naive_eps",
                BenchReport.eps(naiveEps),
                "ratio_naive",
                BenchReport.r2(oursEps / naiveEps),
                "events",
                String.valueOf(ev.count),
                "ref",
                "flink-2.2.1-datastream-window-aggregate-same-kafka-source-redis-set-pxat-kafkasink-exactly-once",
                "job_cpu_us_per_event",
                BenchReport.us(job),
                "redis_cpu_us_per_event",
                BenchReport.us(redis),
                "broker_cpu_us_per_event",
                BenchReport.us(brokerUs),
                "all_cpu_us_per_event",
                BenchReport.us(all),
                "cores_per_million_eps",
                BenchReport.r2(all),
                "naive_job_cpu_us_per_event",
                BenchReport.us(naive.jobMicros(n)),
                "naive_redis_cpu_us_per_event",
                BenchReport.us(naive.redisMicros(n)),
                "naive_broker_cpu_us_per_event",
                BenchReport.us(naive.run().brokerCpuSeconds * 1e6 / n),
                "naive_all_cpu_us_per_event",
                BenchReport.us(naiveAll),
                "cpu",
                "job=this-jvm-process-cpu-less-harness-threads;broker=child-jvm-process-cpu;redis=INFO-cpu");
    }

    /** Rollcount reading {@code topic} with everything on, to Redis and to the Kafka outputs; {@code run}: a suffix of its ids. */
    private BenchRuns.Measured kafkaOurs(BrokerProcess broker, String topic, String run, BenchEvents ev)
            throws Exception {
        JobSettings o = kafkaOptions(broker.bootstrap(), topic, runs.prefix + run);
        JobConnectors.ensureOutputTopics(o);
        StreamExecutionEnvironment env = runs.environment(FlinkSettings.configuration(o));
        Pipeline.build(
                env,
                o,
                kafkaSource(o, "ours" + run),
                new Pipeline.Outputs(
                        new StampingSink<>(JobConnectors.redisSink(o)),
                        JobConnectors.deadLetterSink(o),
                        0,
                        JobConnectors.rollupsSink(o),
                        null,
                        JobConnectors.redisSink(o).withoutWatermark()));
        return runs.measured(() -> runs.cluster()
                .run(
                        env,
                        "rollcount-kafka" + run,
                        JobBench.PARALLELISM,
                        true,
                        BenchRuns.timeout(ev.count, 1_000),
                        null));
    }

    /** The textbook job with ours' count outputs in Redis and Kafka, reading {@code topic}. */
    private BenchRuns.Measured kafkaNaive(BrokerProcess broker, String topic, String run, BenchEvents ev)
            throws Exception {
        JobSettings o = kafkaOptions(broker.bootstrap(), topic, runs.prefix + "-textbook" + run);
        StreamExecutionEnvironment env = runs.environment(FlinkSettings.configuration(o));
        int ends = FairReferences.textbook(env, kafkaSource(o, "naive" + run), runs.redisOutputs(o));
        return runs.measured(() ->
                runs.cluster().run(env, "textbook-kafka" + run, ends, true, BenchRuns.timeout(ev.count, 1_000), null));
    }

    private JobSettings kafkaOptions(String bootstrap, String topic, String transactionalIdPrefix) {
        return runs.options().toBuilder()
                .set("--source", JobSettings.SourceKind.kafka)
                .set("--input", null)
                .set("--kafka.bootstrap", bootstrap)
                .set("--kafka.topic", topic)
                .set("--kafka.transactional-id-prefix", transactionalIdPrefix)
                .set("--kafka.properties", kafkaProperties)
                .build();
    }

    /**
     * Flink's Kafka source of {@code o}'s topic from its earliest to its latest offset at start (bounded), with the
     * job's deserializer, noting the first event for the clock; a consumer group of {@code group}'s own.
     */
    static Source<Event, ?, ?> kafkaSource(JobSettings o, String group) {
        return KafkaSource.<Event>builder()
                .setProperties(JobConnectors.kafkaProperties(o))
                .setTopics(o.kafkaTopic)
                .setGroupId(o.kafkaGroupId + "-" + group)
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setBounded(OffsetsInitializer.latest())
                .setDeserializer(new StampingDeserializer(new EventDeserializer(o.maxFuture.toMillis())))
                .build();
    }

    /** The job's own Kafka deserializer, noting the first event for the clock. */
    private static final class StampingDeserializer implements KafkaRecordDeserializationSchema<Event> {
        private static final long serialVersionUID = 1L;
        private final EventDeserializer inner;

        StampingDeserializer(EventDeserializer inner) {
            this.inner = inner;
        }

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Event> out) throws IOException {
            BenchClock.firstEvent();
            inner.deserialize(record, out);
        }

        @Override
        public TypeInformation<Event> getProducedType() {
            return inner.getProducedType();
        }
    }

    /** Every event of {@code ev} to {@code topic}, each part to its own partition, in index order. */
    static void produce(Properties clientProperties, String topic, BenchEvents ev) throws Exception {
        Properties p = new Properties();
        p.putAll(clientProperties);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(256 << 10));
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (long k = 0; k < ev.partSize(); k++) {
                for (int part = 0; part < ev.parallelism; part++) {
                    producer.send(new ProducerRecord<>(topic, part, null, ev.line(part * ev.partSize() + k)));
                }
            }
            producer.flush();
        }
    }
}
