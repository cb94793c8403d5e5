package io.rollcount.job;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.redis.RedisWrite;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** The Rollcount job: {@code flink run job/target/rollcount-job.jar [options]}. */
public final class RollcountJob {

    /** The sinks of the pipeline; tests pass the same real sinks, pointed at their own prefix and topics. */
    public record Outputs(Sink<RedisWrite> redis, Sink<Event> deadLetters, Sink<Rollup> rollups) {}

    /** Builds the whole pipeline, top to bottom, from an injected source to injected sinks. */
    public static void build(StreamExecutionEnvironment env, JobOptions options, Source<Event, ?, ?> source, Outputs outputs) {
        throw new UnsupportedOperationException("being written");
    }

    public static void main(String[] args) throws Exception {}
}
