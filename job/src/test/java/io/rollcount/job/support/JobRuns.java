package io.rollcount.job.support;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.files.DeadLetterFileSink;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.redis.RedisWrite;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The job as the pipeline tests run it on a MiniCluster, reading files or a Kafka topic and writing to Redis:
 * its settings, its environment with a bounded number of restarts (a failing job restarts forever by default),
 * and its real sinks (dead letters to the file {@code --dlq}, or to Kafka with the rollups).
 */
public final class JobRuns {
    private JobRuns() {}

    /**
     * Settings of a job reading {@code input}, writing under {@code prefix} of {@code redisUrl}, checkpointing
     * every {@code checkpointInterval}, its dead letters in {@code dir/dlq.jsonl}; {@link JobSettings#toBuilder}
     * makes a variant.
     */
    public static JobSettings fileSettings(
            Path input, String redisUrl, String prefix, Duration checkpointInterval, Path dir) {
        return JobSettings.builder()
                .set("--input", input)
                .set("--redis", redisUrl)
                .set("--redis.key-prefix", prefix)
                .set("--checkpoint.interval", checkpointInterval)
                .set("--dlq", dir.resolve("dlq.jsonl"))
                .build();
    }

    /** {@link #fileSettings} on the Redis and key prefix of {@code redis}. */
    public static JobSettings fileSettings(Path input, RedisTestSupport redis, Duration checkpointInterval, Path dir) {
        return fileSettings(input, redis.url(), redis.prefix, checkpointInterval, dir);
    }

    /**
     * Settings of a job reading {@code topic} of the broker at {@code bootstrap} from its earliest offsets, as
     * consumer group and transactional-id prefix {@code id}, up to the end offsets found at start if
     * {@code bounded}, writing under {@code prefix} of {@code redisUrl}, checkpointing every
     * {@code checkpointInterval}; {@link JobSettings#toBuilder} makes a variant.
     */
    public static JobSettings kafkaSettings(
            String bootstrap,
            String topic,
            String id,
            boolean bounded,
            String redisUrl,
            String prefix,
            Duration checkpointInterval) {
        return JobSettings.builder()
                .set("--source", JobSettings.SourceKind.kafka)
                .set("--kafka.bootstrap", bootstrap)
                .set("--kafka.topic", topic)
                .set("--kafka.group-id", id)
                .set("--kafka.starting-offsets", JobSettings.StartingOffsets.earliest)
                .set("--kafka.transactional-id-prefix", id)
                .set("--bounded", bounded)
                .set("--redis", redisUrl)
                .set("--redis.key-prefix", prefix)
                .set("--checkpoint.interval", checkpointInterval)
                .build();
    }

    /**
     * The job's configuration of {@code o} ({@link FlinkSettings#configuration}) with at most {@code restarts}
     * restarts {@code delay} apart; 0: none, a failure fails the run.
     */
    public static Configuration configuration(JobSettings o, int restarts, Duration delay) {
        Configuration conf = FlinkSettings.configuration(o);
        if (restarts == 0) {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        } else {
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
            conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, restarts);
            conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, delay);
        }
        return conf;
    }

    /** {@link #configuration} with restarts 200 ms apart. */
    public static Configuration configuration(JobSettings o, int restarts) {
        return configuration(o, restarts, Duration.ofMillis(200));
    }

    /** An environment of {@code conf} with {@code parallelism}. */
    public static StreamExecutionEnvironment environment(Configuration conf, int parallelism) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        return env;
    }

    /**
     * An environment of {@code o} with {@code parallelism}, at most {@code restarts} restarts 200 ms apart, started
     * from {@code savepoint} unless it is null.
     */
    public static StreamExecutionEnvironment environment(
            JobSettings o, int parallelism, int restarts, String savepoint) {
        Configuration conf = configuration(o, restarts);
        if (savepoint != null) conf.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        return environment(conf, parallelism);
    }

    /** The file job's sinks: the Redis sink of {@code o} ({@link JobConnectors#redisSink}), dead letters to {@code o.dlq}. */
    public static Pipeline.Outputs fileOutputs(JobSettings o) {
        return fileOutputs(JobConnectors.redisSink(o), o);
    }

    /** The file job's sinks with {@code redis} for the counts' sink, dead letters to {@code o.dlq}. */
    public static Pipeline.Outputs fileOutputs(Sink<RedisWrite> redis, JobSettings o) {
        return new Pipeline.Outputs(redis, new DeadLetterFileSink(o.dlq), 1, null);
    }

    /** Builds the whole job reading the files of {@code o} into {@code env}, with {@link #fileOutputs}. */
    public static void buildFromFiles(StreamExecutionEnvironment env, JobSettings o) {
        Pipeline.build(env, o, JobConnectors.fileSource(o), fileOutputs(o));
    }

    /**
     * The sinks of a job with Kafka (as {@code JobConnectors.assemble} makes them, without a trending topic): the
     * Redis sink of {@code o}, dead letters and rollups to Kafka, the sorted sets through a second Redis sink.
     */
    public static Pipeline.Outputs kafkaOutputs(JobSettings o) {
        return kafkaOutputs(JobConnectors.redisSink(o), JobConnectors.rollupsSink(o), o);
    }

    /** {@link #kafkaOutputs} with {@code redis} for the counts' sink and {@code rollups} for the rollups'. */
    public static Pipeline.Outputs kafkaOutputs(Sink<RedisWrite> redis, Sink<Rollup> rollups, JobSettings o) {
        return new Pipeline.Outputs(
                redis,
                JobConnectors.deadLetterSink(o),
                0,
                rollups,
                null,
                JobConnectors.redisSink(o).withoutWatermark());
    }
}
