package io.rollcount.job;

import io.rollcount.job.files.DeadLetterFileSink;
import io.rollcount.job.files.InputFiles;
import io.rollcount.job.files.JsonLinesFormat;
import io.rollcount.job.files.LocalInputEnumerator;
import io.rollcount.job.files.PathOrderSplitAssigner;
import io.rollcount.job.kafka.CaughtUpIdlenessSource;
import io.rollcount.job.kafka.KafkaClients;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.model.TopList;
import io.rollcount.job.parse.EventParser;
import io.rollcount.job.redis.InvalidSettingException;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisSink;
import java.nio.file.Paths;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;

/**
 * The settings mapped to the connectors' builders: the one place that maps them, for the job, its tests and the
 * commands of the command line. The connectors ({@code io.rollcount.job.redis}, {@code io.rollcount.job.kafka},
 * {@code io.rollcount.job.files}) know nothing of the settings. {@link #assemble} is the production wiring of
 * {@link Pipeline#build}.
 */
public final class JobConnectors {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(JobConnectors.class);

    private JobConnectors() {}

    /**
     * The file source of {@code --input}: a file or a folder of {@code .jsonl} / {@code .jsonl.gz}; only the
     * files {@link InputFiles} accepts, one split each, handed out in path order.
     */
    public static Source<Event, ?, ?> fileSource(JobSettings settings) {
        JsonLinesFormat format = new JsonLinesFormat(new EventParser(0), settings.maxFuture.toMillis());
        return FileSource.forBulkFileFormat(format, new Path(settings.input))
                .setFileEnumerator(LocalInputEnumerator::new)
                .setSplitAssigner(PathOrderSplitAssigner::new)
                .build();
    }

    /**
     * The production wiring of {@link Pipeline#build}: sources and sinks made from the settings. Fails with an
     * {@link IllegalStateException} of one line when the job cannot start (another job holds {@code --dlq}).
     */
    static void assemble(
            StreamExecutionEnvironment env, JobSettings settings, boolean applicationMode, String leaseToken) {
        Source<Event, ?, ?> source = switch (settings.source) {
            case files -> fileSource(settings);
            case kafka -> kafkaSource(settings);
        };
        boolean kafka = settings.kafkaConfigured();
        if (kafka) ensureOutputTopics(settings, applicationMode);
        // Another running job's dead-letter file is refused before this one starts (its writer would be refused
        // anyway); not in application mode, where the job this main recovers may hold it.
        else if (!applicationMode) DeadLetterFileSink.refuseIfLocked(settings.dlq);
        // One job per key prefix: the counts' writers hold its lease (the sorted sets' writers need not).
        RedisSink redis = redisSink(settings).holdingLease(leaseToken);
        // In application mode main does not check the prefix (see RollcountJob): the writers do.
        if (applicationMode) redis = redis.refusingEarlierJob();
        Pipeline.Outputs outputs = kafka
                ? new Pipeline.Outputs(
                        redis, deadLetterSink(settings), 0, rollupsSink(settings), trendingSink(settings))
                : new Pipeline.Outputs(redis, new DeadLetterFileSink(settings.dlq), 1, null);
        Pipeline.build(env, settings, source, outputs);
    }

    /** The setters of the Redis builders and the options (or environment variables) that set them, for messages. */
    static final Map<String, String> REDIS_SETTING_OPTIONS = Map.of(
            "setUrl", "--redis",
            "setEndpoint", "--redis",
            "setCluster", "--redis.cluster",
            "setPasswordFile", "--redis.password-file",
            "setFallbackPassword", "$" + RedisEndpoint.PASSWORD_ENV,
            "setCaCertificatePem", "$" + RedisEndpoint.CA_ENV,
            "setKeyPrefix", "--redis.key-prefix",
            "setAllowedLateness", "--allowed-lateness",
            "setRetryTimeout", "--redis.retry-timeout");

    /**
     * The endpoint of {@code --redis} (or {@code $ROLLCOUNT_REDIS}, default {@code redis://127.0.0.1:6379}) and
     * {@code --redis.cluster}, with the password of {@code --redis.password-file} or
     * {@code $ROLLCOUNT_REDIS_PASSWORD} where the URL has none, and the TLS CA certificate of
     * {@code $ROLLCOUNT_REDIS_CA} if that is set. A refused setting is an {@link IllegalArgumentException} naming
     * the option, e.g. {@code --redis: the port must be a number in redis://h:port}.
     */
    public static RedisEndpoint redisEndpoint(RedisSettings redis) {
        return redisEndpoint(redis, System.getenv());
    }

    static RedisEndpoint redisEndpoint(RedisSettings redis, Map<String, String> env) {
        return namingOptions(() -> {
            RedisEndpoint.Builder b = RedisEndpoint.builder().setCluster(redis.cluster());
            b.setUrl(redis.url());
            if (redis.passwordFile() != null && !redis.passwordFile().isBlank()) {
                b.setPasswordFile(Paths.get(redis.passwordFile()));
            }
            String envPassword = env.get(RedisEndpoint.PASSWORD_ENV);
            if (envPassword != null && !envPassword.isEmpty()) b.setFallbackPassword(envPassword);
            String ca = env.get(RedisEndpoint.CA_ENV);
            if (ca != null && !ca.isBlank()) b.setCaCertificatePem(Paths.get(ca));
            return b.build();
        });
    }

    /**
     * The job's Redis sink: {@link #redisSinkBuilder} built.
     */
    public static RedisSink redisSink(JobSettings settings) {
        return redisSinkBuilder(settings).build();
    }

    /**
     * The builder of the job's Redis sink: {@link #redisEndpoint}, {@code --redis.key-prefix},
     * {@code --redis.retry-timeout}; {@value RedisSink#JOB_COUNTERS_PER_CALL} counters per script call, a buffer of
     * {@value RedisSink#JOB_MAX_BUFFERED_KEYS} keys, flush interval at its default (the benchmark sets more).
     */
    public static RedisSink.Builder redisSinkBuilder(JobSettings settings) {
        RedisEndpoint endpoint = redisEndpoint(settings.redis);
        return namingOptions(() -> RedisSink.builder()
                .setEndpoint(endpoint)
                .setKeyPrefix(settings.redis.keyPrefix())
                .setAllowedLateness(settings.allowedLateness)
                .setRetryTimeout(settings.redisRetryTimeout)
                .setCountersPerCall(RedisSink.JOB_COUNTERS_PER_CALL)
                .setMaxBufferedKeys(RedisSink.JOB_MAX_BUFFERED_KEYS));
    }

    /** {@code make()}, a setting it refuses named by its option ({@link #REDIS_SETTING_OPTIONS}). */
    private static <T> T namingOptions(Supplier<T> make) {
        try {
            return make.get();
        } catch (InvalidSettingException e) {
            // no cause: the command line prints a message with its causes, and this one says all
            throw new IllegalArgumentException(e.messageNaming(REDIS_SETTING_OPTIONS));
        }
    }

    /** The settings of every Kafka client of the job: {@code --kafka.properties} and {@code --kafka.bootstrap}. */
    public static Properties kafkaProperties(JobSettings settings) {
        return KafkaClients.properties(settings.kafkaBootstrap, settings.kafkaProperties);
    }

    /**
     * The job's Kafka source: {@link #plainKafkaSource} with each partition holding the watermark until it is read
     * and idle ({@code --idle-timeout}) only when read to its end ({@link CaughtUpIdlenessSource}).
     */
    public static CaughtUpIdlenessSource kafkaSource(JobSettings settings) {
        Properties clients = kafkaProperties(settings);
        clients.put(ConsumerConfig.GROUP_ID_CONFIG, settings.kafkaGroupId);
        return new CaughtUpIdlenessSource(plainKafkaSource(settings), clients, settings.idleTimeout);
    }

    /** Flink's Kafka source of {@code --kafka.topic}, {@code --kafka.group-id}, {@code --kafka.starting-offsets}, {@code --bounded}, {@code --max-future}. */
    public static KafkaSource<Event> plainKafkaSource(JobSettings settings) {
        return KafkaIO.source(
                kafkaProperties(settings),
                settings.kafkaTopic,
                settings.kafkaGroupId,
                startingOffsets(settings.kafkaStartingOffsets),
                settings.maxFuture,
                settings.bounded);
    }

    /** {@code committed} falls back to the earliest offset for a partition the group has not committed. */
    @SuppressWarnings("deprecation") // OffsetResetStrategy is what the connector's API takes
    static OffsetsInitializer startingOffsets(JobSettings.StartingOffsets s) {
        return switch (s == null ? JobSettings.StartingOffsets.committed : s) {
            case committed -> OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST);
            case earliest -> OffsetsInitializer.earliest();
            case latest -> OffsetsInitializer.latest();
        };
    }

    /** The producer settings of the job's Kafka sinks: {@link #kafkaProperties} and {@code --kafka.transaction-timeout}. */
    public static Properties kafkaProducerProperties(JobSettings settings) {
        return KafkaIO.producerProperties(kafkaProperties(settings), settings.kafkaTransactionTimeout);
    }

    /**
     * The rollups sink: topic {@code --kafka.topic.rollups}, each record naming {@code --redis.key-prefix},
     * transactional ids of {@code --kafka.transactional-id-prefix}.
     */
    public static KafkaSink<Rollup> rollupsSink(JobSettings settings) {
        return KafkaIO.rollups(
                kafkaProducerProperties(settings),
                settings.kafkaTransactionalIdPrefix,
                settings.kafkaTopicRollups,
                settings.redis.keyPrefix());
    }

    /** The dead-letter sink: topic {@code --kafka.topic.dlq}, transactional ids of {@code --kafka.transactional-id-prefix}. */
    public static KafkaSink<Event> deadLetterSink(JobSettings settings) {
        return KafkaIO.deadLetters(
                kafkaProducerProperties(settings), settings.kafkaTransactionalIdPrefix, settings.kafkaTopicDlq);
    }

    /**
     * The lists' sink: topic {@code --kafka.topic.trending}, each record naming {@code --redis.key-prefix},
     * transactional ids of {@code --kafka.transactional-id-prefix}.
     */
    public static KafkaSink<TopList> trendingSink(JobSettings settings) {
        String prefix = settings.redis.keyPrefix();
        return KafkaIO.trending(
                kafkaProducerProperties(settings),
                settings.kafkaTransactionalIdPrefix,
                settings.kafkaTopicTrending,
                prefix,
                t -> t.ns,
                t -> Json.topList(prefix, t));
    }

    /**
     * {@link #ensureOutputTopics(JobSettings)}; in application mode a broker that does not answer is a warning:
     * this main may run for a JobManager failover, whose recovered job is better left to retry than failed.
     */
    static void ensureOutputTopics(JobSettings settings, boolean applicationMode) {
        try {
            ensureOutputTopics(settings);
        } catch (IllegalStateException e) {
            if (!applicationMode) throw e;
            LOG.warn("application mode: the job's output topics were not checked: {}", e.getMessage());
        }
    }

    /**
     * Checks the brokers of the settings and creates the job's output topics ({@code --kafka.topic.rollups},
     * {@code --kafka.topic.trending}, {@code --kafka.topic.dlq}) that are missing ({@link KafkaIO#ensureOutputTopics}).
     */
    public static void ensureOutputTopics(JobSettings settings) {
        KafkaIO.ensureOutputTopics(
                kafkaProperties(settings),
                settings.kafkaTopicRollups,
                settings.kafkaTopicTrending,
                settings.kafkaTopicDlq);
    }
}
