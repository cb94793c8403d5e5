package io.rollcount.job;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.model.TopList;
import io.rollcount.job.model.TrendCandidates;
import io.rollcount.job.model.TrendWeight;
import io.rollcount.job.model.WindowTop;
import io.rollcount.job.ops.ClosedWindowsRebuild;
import io.rollcount.job.ops.CountPerCounter;
import io.rollcount.job.ops.CountPerCounterSettings;
import io.rollcount.job.ops.DropDuplicates;
import io.rollcount.job.ops.LocalWindowTopK;
import io.rollcount.job.ops.LossWatch;
import io.rollcount.job.ops.PreAggregate;
import io.rollcount.job.ops.RouteEvents;
import io.rollcount.job.ops.TrendPerShard;
import io.rollcount.job.ops.TrendingMerge;
import io.rollcount.job.ops.TrendingPolicyFilter;
import io.rollcount.job.ops.ValidEventsWatermarks;
import io.rollcount.job.ops.WindowTopCap;
import io.rollcount.job.ops.WindowTopMerge;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.redis.CounterUpdateWrites;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisLossWatch;
import io.rollcount.job.redis.RedisSink;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.redis.RollupsRebuild;
import io.rollcount.job.redis.TopListWrites;
import java.time.Duration;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The Rollcount pipeline, top to bottom, in one place: {@link #build} from an injected source to injected
 * {@link Outputs}, so that tests and benchmarks run the very graph production runs ({@link JobConnectors#assemble}
 * passes the production sources and sinks). Operator uids and state names are fixed here: savepoints name them.
 */
public final class Pipeline {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(Pipeline.class);

    private Pipeline() {}

    /** How often each trending shard reports its candidates, and how often the merge publishes (processing time). */
    static final long TREND_EMIT_MILLIS = 2_000;

    static final long TREND_PUBLISH_MILLIS = 1_000;

    /**
     * The sinks of the pipeline; tests pass the same real sinks, pointed at their own prefix and topics.
     *
     * @param rollups may be null: no {@code counter-rollups} output (no Kafka)
     * @param deadLetterParallelism parallelism of the dead-letter sink, 0 for the job's (the file sink needs 1)
     */
    public record Outputs(
            Sink<RedisWrite> redis,
            Sink<Event> deadLetters,
            int deadLetterParallelism,
            Sink<Rollup> rollups,
            Sink<TopList> trending,
            Sink<RedisWrite> redisLists) {
        /** Without a {@code counter-trending} output. */
        public Outputs(
                Sink<RedisWrite> redis, Sink<Event> deadLetters, int deadLetterParallelism, Sink<Rollup> rollups) {
            this(redis, deadLetters, deadLetterParallelism, rollups, null);
        }

        /** The sorted sets go to {@code redis} too: to a second writer of it if it is a {@link RedisSink}. */
        public Outputs(
                Sink<RedisWrite> redis,
                Sink<Event> deadLetters,
                int deadLetterParallelism,
                Sink<Rollup> rollups,
                Sink<TopList> trending) {
            this(
                    redis,
                    deadLetters,
                    deadLetterParallelism,
                    rollups,
                    trending,
                    redis instanceof RedisSink r ? r.withoutWatermark() : null);
        }
    }

    /** Builds the whole pipeline, top to bottom, from an injected source to injected sinks. */
    public static void build(
            StreamExecutionEnvironment env, JobSettings settings, Source<Event, ?, ?> source, Outputs outputs) {
        RedisKeys keys = new RedisKeys(settings.redis.keyPrefix());
        // What each namespace keeps (--policies), read at submission: the operators get it in the job graph.
        Policies policies = settings.policies();
        policies.describe().forEach(LOG::info);

        // 1. Parse inside the source; per-partition watermarks over valid events only.
        DataStream<Event> events = events(env, settings, source);

        // 2. Dead letters aside; every other event shuffled by (counter, event_id) to deduplication, which passes
        //    those without an event_id or of a namespace that does not dedup.
        //    An event that can no longer be late goes on without its raw input.
        SingleOutputStreamOperator<Event> routed = events.transform(
                        "route", events.getType(), new RouteEvents(policies, settings.allowedLateness.toMillis()))
                .uid("route");
        DataStream<Event> firstDeliveries = routed.keyBy(DropDuplicates::keyOf, Types.STRING)
                .transform("drop-duplicates", routed.getType(), DropDuplicates.operator(new DropDuplicates(policies)))
                .uid("drop-duplicates");

        // 3. Chained to deduplication (its only input, so an event crosses one shuffle before it is combined): late
        //    events out; the rest combined per (counter, 5 s bucket) before the shuffle by counter.
        SingleOutputStreamOperator<PartialSum> partials = preAggregate(firstDeliveries, settings, policies);

        // 4. One keyed operator per counter: five resolutions and the total, emitted as neutral updates; rollups
        //    of the closed windows of --rollups.resolutions only where there is a counter-rollups output.
        SingleOutputStreamOperator<CounterUpdate> counts = countPerCounter(partials, settings, outputs, policies);
        // The Redis commands of the updates, with the key names of RedisKeys: chained to the keyed operator and
        // to the sink's writer (no shuffle; the immutable update is passed on, not copied).
        DataStream<RedisWrite> countWrites = counts.map(new CounterUpdateWrites(keys))
                .returns(RedisWrite.Info.INSTANCE)
                .name("counts-to-redis")
                .uid("counts-to-redis");

        // 4b. Trending: one decayed sketch per trending shard, merged into the top K per namespace.
        DataStream<TopList> trending = trending(partials, settings, outputs, policies);

        // 4c. Window top-K: a local top K per subtask when the window closes, then one merge per window.
        DataStream<TopList> windowTops = windowTops(counts, settings, policies);
        topListSinks(trending.union(windowTops), countWrites, outputs, keys, policies);

        // 5. Closed windows and their revisions, for consumers.
        if (outputs.rollups() != null) {
            counts.getSideOutput(CountPerCounter.ROLLUPS)
                    .sinkTo(outputs.rollups())
                    .name("rollups")
                    .uid("rollups");
        }

        // 6. Everything not counted, with its reason.
        var deadLetters = routed.getSideOutput(RouteEvents.DEAD_LETTERS)
                .union(partials.getSideOutput(PreAggregate.LATE))
                .union(counts.getSideOutput(CountPerCounter.OVERFLOW))
                .sinkTo(outputs.deadLetters())
                .name("dead-letters")
                .uid("dead-letters");
        if (outputs.deadLetterParallelism() > 0) deadLetters.setParallelism(outputs.deadLetterParallelism());
    }

    /** Step 1: the events, parsed inside the source; per-partition watermarks over valid events only. */
    private static DataStream<Event> events(
            StreamExecutionEnvironment env, JobSettings settings, Source<Event, ?, ?> source) {
        return env.fromSource(
                        source,
                        // No idleness by time alone. A Kafka source decides it itself: only a partition read to
                        // its end, or a reader without partition, is idle. A file split ends: silent for a while
                        // (a large gzip is checked whole before its first line), it still holds the watermark,
                        // which would otherwise jump to that of the subtasks already finished, the end of time.
                        watermarks(settings.outOfOrderness, Duration.ZERO),
                        "events",
                        TypeInformation.of(Event.class))
                .uid(sourceUid(settings));
    }

    /** Step 3: late events out; the rest combined per (counter, 5 s bucket) before the shuffle by counter. */
    private static SingleOutputStreamOperator<PartialSum> preAggregate(
            DataStream<Event> routed, JobSettings settings, Policies policies) {
        long lateness = settings.allowedLateness.toMillis();
        long flushInterval = settings.flushInterval.toMillis();
        return routed.transform(
                        "pre-aggregate",
                        TypeInformation.of(PartialSum.class),
                        new PreAggregate(
                                lateness,
                                20_000,
                                Math.min(200, flushInterval),
                                settings.trendingHalfLife.toMillis(),
                                policies))
                .uid("pre-aggregate");
    }

    /**
     * Step 4: one keyed operator per counter. PartialSum crosses this shuffle by its own serializer
     * (PartialSum.Serializer), as Event and TrendWeight do.
     */
    private static SingleOutputStreamOperator<CounterUpdate> countPerCounter(
            DataStream<PartialSum> partials, JobSettings settings, Outputs outputs, Policies policies) {
        long lateness = settings.allowedLateness.toMillis();
        long flushInterval = settings.flushInterval.toMillis();
        int rollupMask = outputs.rollups() == null ? 0 : settings.rollupResolutionMask();
        return partials.keyBy(p -> p.counter, Types.STRING)
                .transform(
                        "count-per-counter",
                        CounterUpdate.Info.INSTANCE,
                        new CountPerCounter(new CountPerCounterSettings(
                                        lateness,
                                        flushInterval,
                                        settings.counterCacheBytes(),
                                        rollupMask,
                                        policies,
                                        CountPerCounter.DEFAULT_SLICE_MILLIS))
                                .rebuildingAfterLoss(lossWatch(outputs, settings), rollupsRebuild(outputs, settings)))
                .uid("count-per-counter");
    }

    /** Step 4b: trending, one decayed sketch per trending shard, merged into the top K per namespace. */
    private static DataStream<TopList> trending(
            DataStream<PartialSum> partials, JobSettings settings, Outputs outputs, Policies policies) {
        long halfLife = settings.trendingHalfLife.toMillis();
        return partials.filter(new TrendingPolicyFilter(policies))
                .name("trending-policy")
                .uid("trending-policy")
                .map(TrendWeight::of)
                .returns(TrendWeight.class)
                .name("trend-weights")
                .uid("trend-weights")
                .keyBy(p -> TrendPerShard.shardOf(p.counter), Types.INT)
                .transform(
                        "trend-per-shard",
                        TypeInformation.of(TrendCandidates.class),
                        new TrendPerShard(halfLife, settings.topk, TREND_EMIT_MILLIS))
                .uid("trend-per-shard")
                .transform(
                        "trending-merge",
                        TypeInformation.of(TopList.class),
                        new TrendingMerge(settings.topk, halfLife, TREND_PUBLISH_MILLIS, settings.trendingMaxNamespaces)
                                .rebuildingAfterLoss(lossWatch(outputs, settings)))
                .uid("trending-merge")
                .setParallelism(1)
                .setMaxParallelism(1);
    }

    /**
     * Step 4c: window top-K, a local top K per subtask when the window closes, then one merge per window; lists of
     * at most --trending.max-namespaces namespaces (and _all).
     */
    private static DataStream<TopList> windowTops(
            SingleOutputStreamOperator<CounterUpdate> counts, JobSettings settings, Policies policies) {
        return counts.getSideOutput(CountPerCounter.CLOSED_WINDOWS)
                .transform(
                        "local-window-top-k",
                        TypeInformation.of(WindowTop.class),
                        new LocalWindowTopK(settings.topk, policies))
                .uid("local-window-top-k")
                .keyBy(WindowTop::groupKey, Types.STRING)
                .process(new WindowTopMerge(settings.topk, policies))
                .name("window-top-k")
                .uid("window-top-k")
                .transform(
                        "window-top-cap",
                        TypeInformation.of(TopList.class),
                        new WindowTopCap(settings.trendingMaxNamespaces))
                .uid("window-top-cap")
                .setParallelism(1)
                .setMaxParallelism(1);
    }

    /** The sinks of the top lists (Redis, the trending topic) and of the counts' writes (Redis). */
    private static void topListSinks(
            DataStream<TopList> topLists,
            DataStream<RedisWrite> countWrites,
            Outputs outputs,
            RedisKeys keys,
            Policies policies) {
        DataStream<RedisWrite> topWrites = topLists.map(new TopListWrites(keys, policies))
                .name("top-lists-to-redis")
                .uid("top-lists-to-redis")
                .keyBy(w -> w.key, Types.STRING); // one sink subtask per sorted set: its lists arrive in order
        if (outputs.redisLists() != null) {
            // Two sink operators, so the counts' writer stays chained to the keyed operator.
            countWrites.sinkTo(outputs.redis()).name("redis").uid("redis");
            topWrites.sinkTo(outputs.redisLists()).name("redis-lists").uid("redis-lists");
        } else {
            countWrites.union(topWrites).sinkTo(outputs.redis()).name("redis").uid("redis");
        }
        if (outputs.trending() != null) {
            // Keyed by namespace: one producer per namespace, so its lists land in its partition in order.
            topLists.keyBy(t -> t.ns, Types.STRING)
                    .sinkTo(outputs.trending())
                    .name("trending")
                    .uid("trending");
        }
    }

    /**
     * The watermarks of the pipeline's source ({@link ValidEventsWatermarks}): per partition, over valid events
     * only, {@code outOfOrderness} behind a high quantile of recent event times; the benchmarks' references use
     * the same.
     */
    public static org.apache.flink.api.common.eventtime.WatermarkStrategy<Event> watermarks(
            Duration outOfOrderness, Duration idleness) {
        return ValidEventsWatermarks.strategy(outOfOrderness, idleness);
    }

    /**
     * What tells the counts that Redis lost its data, so that they write themselves again: a watch of the
     * prefix's epoch key on the Redis of the counts' sink; none where that sink is not a {@link RedisSink}.
     */
    static LossWatch lossWatch(Outputs outputs, JobSettings settings) {
        return outputs.redis() instanceof RedisSink r
                ? RedisLossRecovery.watch(new RedisLossWatch(r.endpoint(), settings.redis.keyPrefix()))
                : null;
    }

    /** The rebuild of closed windows from {@code counter-rollups} after a loss: where the job writes that topic. */
    static ClosedWindowsRebuild rollupsRebuild(Outputs outputs, JobSettings settings) {
        if (!(outputs.redis() instanceof RedisSink r) || outputs.rollups() == null || !settings.kafkaConfigured())
            return null;
        return RedisLossRecovery.rebuild(new RollupsRebuild(
                        JobConnectors.kafkaProperties(settings),
                        settings.kafkaTopicRollups,
                        r.endpoint(),
                        settings.redis.keyPrefix(),
                        settings.policies(),
                        settings.topk,
                        settings.trendingMaxNamespaces)
                .withLegacyRollups(settings.legacyRollups));
    }

    /**
     * The source's uid: {@code source} for Kafka; for files one per input path, so that a run resumed from
     * the checkpoint of a run over other files reads its own input whole (the file source's state lists the
     * files still to read, not the ones read) while counting on from the restored totals.
     */
    static String sourceUid(JobSettings settings) {
        if (settings.source != JobSettings.SourceKind.files || settings.input == null) return "source";
        String path = java.nio.file.Path.of(settings.input)
                .toAbsolutePath()
                .normalize()
                .toString();
        return "source-files-" + Integer.toHexString(path.hashCode());
    }
}
