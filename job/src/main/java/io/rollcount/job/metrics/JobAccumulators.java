package io.rollcount.job.metrics;

/**
 * The names of the job's Flink accumulators: what a finished or running job reports through
 * {@code JobClient.getAccumulators()} and {@code JobExecutionResult}, read by the progress line and summary of
 * {@code ./rollcount run}, the demo and the benchmarks. The operators that count them add to them; the same
 * counts are also metrics ({@link RollcountMetrics}).
 */
public final class JobAccumulators {
    private JobAccumulators() {}

    /** Events read from the source, valid or not. */
    public static final String EVENTS_READ = "events.read";
    /** Bytes of the events read. */
    public static final String BYTES_READ = "bytes.read";
    /** Events counted: read, valid, not late and (with an {@code event_id}) first deliveries. */
    public static final String COUNTED = "events.counted";
    /** Redeliveries of an {@code event_id} already counted. */
    public static final String DUPLICATES = "events.duplicates";
    /** Dead letters by reason: {@code dlq.<reason>}, e.g. {@code dlq.invalid_json}, {@code dlq.late}. */
    public static final String DEAD_LETTERS_PREFIX = "dlq.";
    /** Losses of Redis's data the job saw (counted once, by subtask 0 of the counts). */
    public static final String REDIS_LOSSES = "redis.rebuild.losses";
    /** Counters written again from the job's state after a loss. */
    public static final String REDIS_REBUILT_COUNTERS = "redis.rebuild.counters";
    /** Keys of closed windows and top-K lists written again from {@code counter-rollups} after a loss. */
    public static final String REDIS_REBUILT_ROLLUP_KEYS = "redis.rebuild.rollup-keys";

    /** The accumulator of dead letters of {@code reason}. */
    public static String deadLetters(String reason) {
        return DEAD_LETTERS_PREFIX + reason;
    }
}
