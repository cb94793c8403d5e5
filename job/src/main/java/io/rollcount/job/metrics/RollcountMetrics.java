package io.rollcount.job.metrics;

import java.util.concurrent.Future;
import java.util.function.LongSupplier;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.metrics.DescriptiveStatisticsHistogram;

/**
 * Rollcount's own metrics: every one lives in the metric group {@value #GROUP} under its operator's group, so
 * that Flink's Prometheus reporter names it {@code flink_taskmanager_job_task_operator_rollcount_<name>}
 * (dead letters carry their reason as the label {@code reason}). The operators call these registrations
 * from their {@code open()} (or the writer's constructor); the names are what deploy/grafana/rollcount.json
 * queries, so they change only together with the dashboard.
 *
 * <p>Counts that an operator already keeps in an accumulator (the progress line and the end-of-run summary
 * read those) are exposed as a {@link Counter} that reads and adds to the same accumulator, so the operator
 * counts once.
 */
public final class RollcountMetrics {
    private RollcountMetrics() {}

    public static final String GROUP = "rollcount";

    /** Events read from the source (RouteEvents), before anything is dropped or dead-lettered. */
    public static final String EVENTS_READ = "eventsRead";
    /** Events that were counted (accepted by the pre-aggregation: not late, not a duplicate). */
    public static final String EVENTS_COUNTED = "eventsCounted";
    /** Redeliveries of an event_id already counted (DropDuplicates). */
    public static final String EVENTS_DEDUPLICATED = "eventsDeduplicated";
    /** Events later than the allowed lateness (also dead letters with reason {@code late}). */
    public static final String EVENTS_LATE = "eventsLate";
    /** Dead letters; labelled {@code reason}. */
    public static final String DEAD_LETTERS = "deadLetters";

    public static final String REASON = "reason";
    /** Partial sums out of the pre-aggregation: eventsCounted / partialSums is its fold ratio. */
    public static final String PARTIAL_SUMS = "partialSums";
    /** Duration of one batch of Redis writes, request to last reply, in milliseconds (retries included). */
    public static final String REDIS_WRITE_LATENCY = "redisWriteLatencyMs";

    public static final String REDIS_RETRIES = "redisRetries";
    public static final String REDIS_COMMANDS_SENT = "redisCommandsSent";
    public static final String REDIS_KEYS_WRITTEN = "redisKeysWritten";
    /** Distinct keys Redis rejected for good (e.g. WRONGTYPE): not written, reported once each. */
    public static final String REDIS_REJECTED = "redisRejected";
    /** Gauge of a Redis writer: the first key Redis rejected for good, with its error, or null. */
    public static final String REDIS_FIRST_REJECTED = "redisFirstRejected";
    /** Guarded writes, plain writes, keys that left the guard, losses of Redis's data seen: per Redis writer. */
    public static final String REDIS_WRITES_GUARDED = "redisWritesGuarded";

    public static final String REDIS_WRITES_PLAIN = "redisWritesPlain";
    public static final String REDIS_KEYS_CONFIRMED = "redisKeysConfirmed";
    public static final String REDIS_DATA_LOST = "redisDataLost";
    /** Rebuilds after a loss of Redis's data started: a count-per-counter subtask's from its state, and subtask 0's from counter-rollups. */
    public static final String REDIS_REBUILDS = "redisRebuilds";
    /** Rebuilds after a loss of Redis's data finished (those from counter-rollups also when they failed). */
    public static final String REDIS_REBUILDS_FINISHED = "redisRebuildsFinished";
    /** Keys written again by the rebuilds finished. */
    public static final String REDIS_REBUILD_KEYS = "redisRebuildKeys";
    /** Gauge: the longest rebuild finished by the subtask, in milliseconds. */
    public static final String REDIS_REBUILD_LONGEST_MS = "redisRebuildLongestMs";
    /** Writes in the batch Redis is applying now (0 when no batch is in flight). */
    public static final String REDIS_WRITES_IN_FLIGHT = "redisWritesInFlight";
    /** Milliseconds of processing time since the trending lists were last published. */
    public static final String TRENDING_LIST_AGE = "trendingListAgeMs";
    /**
     * Keyed-state reads of count-per-counter: gets of a counter's state or of one of its unique-users sketches
     * (counters found on the operator's heap are not read).
     */
    public static final String COUNTER_STATE_READS = "counterStateReads";
    /**
     * Keyed-state reads of drop-duplicates: an event whose (counter, event_id) its filter of the pairs put could
     * not rule out (a redelivery, an id sharing a slot, or every id while the filter is full or after a restore
     * with more pairs than it holds).
     */
    public static final String DEDUP_STATE_READS = "dedupStateReads";
    /** Counters count-per-counter visited because a window of theirs closed or became final (its due work). */
    public static final String DUE_VISITS = "dueVisits";
    /** Processing time minus the operator's event-time watermark, in milliseconds. */
    public static final String EVENT_TIME_LAG = "eventTimeLagMs";

    /** How many recent samples the latency histogram keeps (its quantiles are over these). */
    static final int HISTOGRAM_WINDOW = 1024;

    /** The {@value #GROUP} group under an operator's (or writer's) metric group. */
    public static MetricGroup group(MetricGroup operator) {
        return operator.addGroup(GROUP);
    }

    /** A new counter {@code name} in the {@value #GROUP} group. */
    public static Counter counter(MetricGroup operator, String name) {
        return group(operator).counter(name, new SimpleCounter());
    }

    /** Exposes an existing counter (e.g. one of the Redis writer's) in the {@value #GROUP} group as well. */
    public static Counter counter(MetricGroup operator, String name, Counter existing) {
        return group(operator).counter(name, existing);
    }

    /** Exposes an accumulator as counter {@code name} in the {@value #GROUP} group; returns the accumulator. */
    public static LongCounter counter(MetricGroup operator, String name, LongCounter accumulator) {
        group(operator).counter(name, new AccumulatorCounter(accumulator));
        return accumulator;
    }

    /** Exposes the accumulator of one dead-letter reason as {@value #DEAD_LETTERS}{reason=...}; returns the accumulator. */
    public static LongCounter deadLetters(MetricGroup operator, String reason, LongCounter accumulator) {
        group(operator).addGroup(REASON, reason).counter(DEAD_LETTERS, new AccumulatorCounter(accumulator));
        return accumulator;
    }

    /** The Redis write latency histogram: quantiles over the last {@value #HISTOGRAM_WINDOW} batches. */
    public static Histogram redisWriteLatency(MetricGroup writer) {
        return group(writer).histogram(REDIS_WRITE_LATENCY, new DescriptiveStatisticsHistogram(HISTOGRAM_WINDOW));
    }

    /** Writes of the batch in flight: {@code writes} while {@code inFlight} is running, else 0. */
    public static void redisWritesInFlight(
            MetricGroup writer, java.util.function.Supplier<Future<?>> inFlight, LongSupplier writes) {
        group(writer).gauge(REDIS_WRITES_IN_FLIGHT, (Gauge<Long>) () -> {
            Future<?> f = inFlight.get();
            return f == null || f.isDone() ? 0L : writes.getAsLong();
        });
    }

    /**
     * Event-time lag: wall clock minus {@code watermark} (epoch ms); NaN before the first watermark
     * ({@code Long.MIN_VALUE}), 0 once the watermark is at or past the wall clock (the end of a bounded input).
     */
    public static void eventTimeLag(MetricGroup operator, LongSupplier watermark) {
        group(operator)
                .gauge(EVENT_TIME_LAG, (Gauge<Double>) () -> lag(System.currentTimeMillis(), watermark.getAsLong()));
    }

    static double lag(long now, long watermark) {
        if (watermark == Long.MIN_VALUE) return Double.NaN;
        return watermark >= now ? 0 : (double) (now - watermark);
    }

    /** Age of the trending lists: wall clock minus {@code lastPublished} (epoch ms of processing time). */
    public static void trendingListAge(MetricGroup operator, LongSupplier lastPublished) {
        group(operator).gauge(TRENDING_LIST_AGE, (Gauge<Long>)
                () -> Math.max(0, System.currentTimeMillis() - lastPublished.getAsLong()));
    }

    /**
     * A counter that is an accumulator: increments add to it, reads read its local (this subtask's) value.
     * The task thread writes, the reporter reads a plain long: a read may be a moment stale, never torn on a
     * 64-bit JVM.
     */
    static final class AccumulatorCounter implements Counter {
        private final LongCounter accumulator;

        AccumulatorCounter(LongCounter accumulator) {
            this.accumulator = accumulator;
        }

        @Override
        public void inc() {
            accumulator.add(1);
        }

        @Override
        public void inc(long n) {
            accumulator.add(n);
        }

        @Override
        public void dec() {
            accumulator.add(-1);
        }

        @Override
        public void dec(long n) {
            accumulator.add(-n);
        }

        @Override
        public long getCount() {
            return accumulator.getLocalValue();
        }
    }
}
