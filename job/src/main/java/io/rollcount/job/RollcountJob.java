package io.rollcount.job;

import io.rollcount.job.files.DeadLetterFileSink;
import io.rollcount.job.files.InputFiles;
import io.rollcount.job.files.JsonLinesFormat;
import io.rollcount.job.files.LocalInputEnumerator;
import io.rollcount.job.files.PathOrderSplitAssigner;
import io.rollcount.job.kafka.CaughtUpIdlenessSource;
import io.rollcount.job.kafka.KafkaClients;
import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
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
import io.rollcount.job.parse.EventParser;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.policy.PoliciesException;
import io.rollcount.job.redis.CounterUpdateWrites;
import io.rollcount.job.redis.InvalidSettingException;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisLossWatch;
import io.rollcount.job.redis.RedisSink;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.redis.RollupsRebuild;
import io.rollcount.job.redis.TopListWrites;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.file.src.FileSource;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetResetStrategy;
import picocli.CommandLine;

/**
 * The Rollcount job: {@code flink run job/target/rollcount-job.jar [options]}, an application cluster (the
 * Flink Kubernetes Operator, {@code deploy/local-cluster/start-application.sh}), or {@code ./rollcount run}
 * on a local MiniCluster. {@link #build} is the whole pipeline, top to bottom; sources and sinks are passed in
 * so that tests run the very same graph on bounded input.
 *
 * <p>{@link #main} never exits the JVM. A start it refuses fails with a {@link RefusedStartException} of one
 * line: {@code flink run} fails the submission with that line as its root cause and sets its exit code.
 *
 * <p>Which starts are checked where: {@link Launcher}, the one start sequence of every way the job starts. With
 * {@code flink run} the client checks the key prefix before it submits. In application mode ({@code execution.target}
 * {@code embedded}) main runs again at every start of a JobManager, also after a failover, while Flink recovers the
 * running job from its HA store and ignores the job graph main builds then. A client-side check there would find
 * the lease held by the very job being recovered and fail the JobManager at every start. So in application mode
 * main leaves the prefix to the writers of the Redis sink: they hold the lease with the token in the job graph, or
 * the token restored from their checkpointed state (an HA recovery, a restore from {@code execution.savepoint.path}
 * or the operator's {@code initialSavepointPath}), take back a lease of their own token, and fail the job with
 * restarts suppressed when another job's token holds it, or when they restore nothing and the prefix's job mark
 * names another job ({@link RedisSink#refusingEarlierJob}: an empty start over an earlier job's counts). A restart
 * before the first checkpoint finds its own token there: the token is in the job graph Flink recovers.
 * {@code --fresh}, which deletes keys at start, is refused there.
 */
public final class RollcountJob {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(RollcountJob.class);

    private RollcountJob() {}

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
            StreamExecutionEnvironment env, JobOptions options, Source<Event, ?, ?> source, Outputs outputs) {
        long lateness = options.allowedLateness.toMillis();
        long flushInterval = options.flushInterval.toMillis();
        RedisKeys keys = new RedisKeys(options.redisKeyPrefix);
        // What each namespace keeps (--policies), read at submission: the operators get it in the job graph.
        Policies policies = options.policies();
        policies.describe().forEach(LOG::info);

        // 1. Parse inside the source; per-partition watermarks over valid events only.
        DataStream<Event> events = env.fromSource(
                        source,
                        // No idleness by time alone. A Kafka source decides it itself: only a partition read to
                        // its end, or a reader without partition, is idle. A file split ends: silent for a while
                        // (a large gzip is checked whole before its first line), it still holds the watermark,
                        // which would otherwise jump to that of the subtasks already finished, the end of time.
                        ValidEventsWatermarks.strategy(options.outOfOrderness, Duration.ZERO),
                        "events",
                        TypeInformation.of(Event.class))
                .uid(sourceUid(options));

        // 2. Dead letters aside; events with an event_id to deduplication, the rest straight on.
        SingleOutputStreamOperator<Event> routed =
                events.process(new RouteEvents(policies)).name("route").uid("route");
        DataStream<Event> firstDeliveries = routed.getSideOutput(RouteEvents.WITH_EVENT_ID)
                .keyBy(DropDuplicates::keyOf, Types.STRING)
                .process(new DropDuplicates(policies))
                .name("drop-duplicates")
                .uid("drop-duplicates");

        // 3. Late events out; the rest combined per (counter, 5 s bucket) before the shuffle by counter.
        SingleOutputStreamOperator<PartialSum> partials = routed.union(firstDeliveries)
                .transform(
                        "pre-aggregate",
                        TypeInformation.of(PartialSum.class),
                        new PreAggregate(
                                lateness,
                                20_000,
                                Math.min(200, flushInterval),
                                options.trendingHalfLife.toMillis(),
                                policies))
                .uid("pre-aggregate");

        // 4. One keyed operator per counter: five resolutions and the total, emitted as neutral updates; rollups
        //    of the closed windows of --rollups.resolutions only where there is a counter-rollups output.
        //    PartialSum crosses this shuffle by its own serializer (PartialSum.Serializer), as Event and
        //    TrendWeight do.
        int rollupMask = outputs.rollups() == null ? 0 : options.rollupResolutionMask();
        SingleOutputStreamOperator<CounterUpdate> counts = partials.keyBy(p -> p.counter, Types.STRING)
                .transform(
                        "count-per-counter",
                        CounterUpdate.Info.INSTANCE,
                        new CountPerCounter(new CountPerCounterSettings(
                                        lateness,
                                        flushInterval,
                                        options.counterCacheBytes(),
                                        rollupMask,
                                        policies,
                                        CountPerCounter.DEFAULT_SLICE_MILLIS))
                                .rebuildingAfterLoss(lossWatch(outputs, options), rollupsRebuild(outputs, options)))
                .uid("count-per-counter");
        // The Redis commands of the updates, with the key names of RedisKeys: chained to the keyed operator and
        // to the sink's writer (no shuffle; the immutable update is passed on, not copied).
        DataStream<RedisWrite> countWrites = counts.map(new CounterUpdateWrites(keys))
                .returns(TypeInformation.of(RedisWrite.class))
                .name("counts-to-redis")
                .uid("counts-to-redis");

        // 4b. Trending: one decayed sketch per trending shard, merged into the top K per namespace.
        long halfLife = options.trendingHalfLife.toMillis();
        DataStream<TopList> trending = partials.filter(new TrendingPolicyFilter(policies))
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
                        new TrendPerShard(halfLife, options.topk, TREND_EMIT_MILLIS))
                .uid("trend-per-shard")
                .transform(
                        "trending-merge",
                        TypeInformation.of(TopList.class),
                        new TrendingMerge(options.topk, halfLife, TREND_PUBLISH_MILLIS, options.trendingMaxNamespaces)
                                .rebuildingAfterLoss(lossWatch(outputs, options)))
                .uid("trending-merge")
                .setParallelism(1)
                .setMaxParallelism(1);

        // 4c. Window top-K: a local top K per subtask when the window closes, then one merge per window; lists of
        //     at most --trending.max-namespaces namespaces (and _all).
        DataStream<TopList> windowTops = counts.getSideOutput(CountPerCounter.CLOSED_WINDOWS)
                .transform(
                        "local-window-top-k",
                        TypeInformation.of(WindowTop.class),
                        new LocalWindowTopK(options.topk, policies))
                .uid("local-window-top-k")
                .keyBy(WindowTop::groupKey, Types.STRING)
                .process(new WindowTopMerge(options.topk, policies))
                .name("window-top-k")
                .uid("window-top-k")
                .transform(
                        "window-top-cap",
                        TypeInformation.of(TopList.class),
                        new WindowTopCap(options.trendingMaxNamespaces))
                .uid("window-top-cap")
                .setParallelism(1)
                .setMaxParallelism(1);
        DataStream<TopList> topLists = trending.union(windowTops);
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

    /**
     * What tells the counts that Redis lost its data, so that they write themselves again: a watch of the
     * prefix's epoch key on the Redis of the counts' sink; none where that sink is not a {@link RedisSink}.
     */
    static LossWatch lossWatch(Outputs outputs, JobOptions options) {
        return outputs.redis() instanceof RedisSink r
                ? RedisLossRecovery.watch(new RedisLossWatch(r.endpoint(), options.redisKeyPrefix))
                : null;
    }

    /** The rebuild of closed windows from {@code counter-rollups} after a loss: where the job writes that topic. */
    static ClosedWindowsRebuild rollupsRebuild(Outputs outputs, JobOptions options) {
        if (!(outputs.redis() instanceof RedisSink r) || outputs.rollups() == null || !options.kafkaConfigured())
            return null;
        return RedisLossRecovery.rebuild(new RollupsRebuild(
                        kafkaProperties(options),
                        options.kafkaTopicRollups,
                        r.endpoint(),
                        options.redisKeyPrefix,
                        options.policies(),
                        options.topk,
                        options.trendingMaxNamespaces)
                .withLegacyRollups(options.legacyRollups));
    }

    /**
     * The source's uid: {@code source} for Kafka; for files one per input path, so that a run resumed from
     * the checkpoint of a run over other files reads its own input whole (the file source's state lists the
     * files still to read, not the ones read) while counting on from the restored totals.
     */
    static String sourceUid(JobOptions options) {
        if (options.sourceKind() != JobOptions.SourceKind.files || options.input == null) return "source";
        String path = java.nio.file.Path.of(options.input)
                .toAbsolutePath()
                .normalize()
                .toString();
        return "source-files-" + Integer.toHexString(path.hashCode());
    }

    /**
     * The file source of {@code --input}: a file or a folder of {@code .jsonl} / {@code .jsonl.gz}; only the
     * files {@link InputFiles} accepts, one split each, handed out in path order.
     */
    public static Source<Event, ?, ?> fileSource(JobOptions options) {
        JsonLinesFormat format = new JsonLinesFormat(new EventParser(0), options.maxFuture.toMillis());
        return FileSource.forBulkFileFormat(format, new Path(options.input))
                .setFileEnumerator(LocalInputEnumerator::new)
                .setSplitAssigner(PathOrderSplitAssigner::new)
                .build();
    }

    /**
     * The job's Flink settings for a run that brings its own Flink (a MiniCluster: {@code ./rollcount run}, the
     * demo, the benchmarks): {@link #ownSettings}, RocksDB with incremental checkpoints, checkpoints every
     * {@code --checkpoint.interval} (10 s where not given), retained on cancellation.
     */
    public static Configuration configuration(JobOptions options) {
        Configuration conf = ownSettings(options);
        conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
        conf.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
        conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, options.checkpointIntervalOrDefault());
        conf.set(
                CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                org.apache.flink.configuration.ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        return conf;
    }

    /**
     * The job's Flink settings on a cluster whose own settings are {@code cluster} (its {@code config.yaml}, the
     * operator's {@code flinkConfiguration}): what a cluster may choose (checkpoint interval, state backend,
     * checkpoint retention, restart strategy, parallelism) stays the cluster's unless the job's option is given;
     * where neither sets a checkpoint interval the job sets 10 s ({@link JobOptions#DEFAULT_CHECKPOINT_INTERVAL}),
     * and where neither sets a state backend, RocksDB with incremental checkpoints. {@link #ownSettings} are the
     * job's in any case. A cluster set to at-least-once checkpoints is refused with an
     * {@link IllegalArgumentException} of one line: the job's outputs are exactly-once only with exactly-once
     * checkpoints.
     */
    public static Configuration configuration(
            JobOptions options, org.apache.flink.configuration.ReadableConfig cluster) {
        if (cluster.getOptional(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE)
                        .orElse(CheckpointingMode.EXACTLY_ONCE)
                == CheckpointingMode.AT_LEAST_ONCE) {
            throw new IllegalArgumentException(
                    "the cluster sets " + CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE.key()
                            + ": AT_LEAST_ONCE; Rollcount's counts and Kafka outputs are exactly-once only with EXACTLY_ONCE"
                            + " checkpoints: set it to EXACTLY_ONCE, or leave it unset, for this job");
        }
        Configuration conf = ownSettings(options);
        if (options.checkpointInterval != null) {
            conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, options.checkpointInterval);
        } else if (cluster.getOptional(CheckpointingOptions.CHECKPOINTING_INTERVAL)
                .isEmpty()) {
            conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, JobOptions.DEFAULT_CHECKPOINT_INTERVAL);
        }
        if (cluster.getOptional(StateBackendOptions.STATE_BACKEND).isEmpty()) {
            conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
            if (cluster.getOptional(CheckpointingOptions.INCREMENTAL_CHECKPOINTS)
                    .isEmpty()) conf.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
        }
        if (cluster.getOptional(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION)
                .isEmpty()) {
            conf.set(
                    CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                    org.apache.flink.configuration.ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        }
        return conf;
    }

    /**
     * What exactness or speed needs, the job's own wherever it runs: exactly-once checkpoints (the Redis guards
     * and the Kafka transactions rely on them), the RocksDB options the growth measurements needed, object reuse
     * (every operator emits objects of its own), no generic types (no Kryo on the hot path), a 200 ms watermark
     * interval; {@code --checkpoint.dir} where given.
     */
    static Configuration ownSettings(JobOptions options) {
        Configuration conf = new Configuration();
        conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.EXACTLY_ONCE);
        if (options.checkpointDir != null) {
            conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
            conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, options.checkpointDir);
        }
        // Deduplication looks up mostly event_ids it has never seen: a Bloom filter answers those without
        // reading SST files once the ids of a day no longer fit in the memtables.
        conf.set(org.apache.flink.state.rocksdb.RocksDBConfigurableOptions.USE_BLOOM_FILTER, true);
        // Partitioned index and filter blocks: with millions of counters a subtask's SST files have index and
        // filter blocks of megabytes, which the block cache Flink sizes from managed memory cannot keep; a get
        // would read and decompress a whole index block for one counter. Partitioned, only the top-level index
        // stays in the cache and a get reads one small partition.
        conf.set(org.apache.flink.state.rocksdb.RocksDBOptions.USE_PARTITIONED_INDEX_FILTERS, true);
        // Every operator emits objects of its own and changes neither its input nor what it emitted, so
        // chained operators may hand records on without Flink copying each one.
        conf.set(PipelineOptions.OBJECT_REUSE, true);
        conf.set(PipelineOptions.GENERIC_TYPES, false);
        conf.set(PipelineOptions.AUTO_WATERMARK_INTERVAL, Duration.ofMillis(200));
        return conf;
    }

    /**
     * Flink's entry point: {@code flink run} runs it on the client, an application cluster on the JobManager
     * at every start of that JobManager. It never exits the JVM: a start it refuses ({@link Launcher}) fails with
     * a {@link RefusedStartException} whose message is the one line that says what to do; {@code --help} prints
     * the usage and returns.
     */
    public static void main(String[] args) throws Exception {
        JobOptions options = parseOptions(args);
        if (options == null) return;
        // the cluster's settings (the client's config.yaml and -D options; on the JobManager in application mode)
        ReadableConfig cluster =
                StreamExecutionEnvironment.getExecutionEnvironment().getConfiguration();
        Launcher launcher =
                Launcher.of(options, Launcher.Place.ofCluster(cluster), "flink run -s <its checkpoint or savepoint>");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(launcher.settings(cluster));
        if (options.parallelism != null) env.setParallelism(options.parallelism);
        launcher.checkStart(env.getConfiguration().get(StateRecoveryOptions.SAVEPOINT_PATH), "flink run -s");
        launcher.assemble(env);
        env.execute("rollcount");
    }

    /**
     * The options of {@code args}, checked; null for {@code --help} (after printing the usage). A bad option
     * is a {@link RefusedStartException} of one line.
     */
    static JobOptions parseOptions(String[] args) {
        JobOptions options = new JobOptions();
        CommandLine cli = new CommandLine(options);
        cli.setCommandName("flink run job/target/rollcount-job.jar");
        cli.getCommandSpec()
                .usageMessage()
                .description(
                        "The Rollcount job: exact multi-resolution counts, uniques and trending into Redis and Kafka.");
        if (java.util.Arrays.asList(args).contains("--help")
                || java.util.Arrays.asList(args).contains("-h")) {
            cli.usage(System.out);
            return null;
        }
        try {
            cli.parseArgs(args);
            options.validate();
        } catch (PoliciesException e) {
            throw new RefusedStartException(e.getMessage());
        } catch (CommandLine.ParameterException | IllegalArgumentException e) {
            throw new RefusedStartException(e.getMessage() + " (--help lists the options)");
        }
        return options;
    }

    /**
     * The production wiring of {@link #build}: sources and sinks made from the options. Fails with an
     * {@link IllegalStateException} of one line when the job cannot start (another job holds {@code --dlq}).
     */
    static void assemble(StreamExecutionEnvironment env, JobOptions options, boolean applicationMode) {
        Source<Event, ?, ?> source = switch (options.sourceKind()) {
            case files -> fileSource(options);
            case kafka -> kafkaSource(options);
        };
        boolean kafka = options.kafkaConfigured();
        if (kafka) ensureOutputTopics(options, applicationMode);
        // Another running job's dead-letter file is refused before this one starts (its writer would be refused
        // anyway); not in application mode, where the job this main recovers may hold it.
        else if (!applicationMode) DeadLetterFileSink.refuseIfLocked(options.dlq);
        // One job per key prefix: the counts' writers hold its lease (the sorted sets' writers need not).
        RedisSink redis = redisSink(options).holdingLease(options.leaseToken);
        // In application mode main does not check the prefix (see the class comment): the writers do.
        if (applicationMode) redis = redis.refusingEarlierJob();
        Outputs outputs = kafka
                ? new Outputs(redis, deadLetterSink(options), 0, rollupsSink(options), trendingSink(options))
                : new Outputs(redis, new DeadLetterFileSink(options.dlq), 1, null);
        build(env, options, source, outputs);
    }

    // ------------------------------------------------ the options mapped to the connectors' builders
    // The connectors (io.rollcount.job.redis, io.rollcount.job.kafka) know nothing of the options: this is the
    // one place that maps them, for the job, its tests and the commands of the command line.

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
    public static RedisEndpoint redisEndpoint(RedisOptions options) {
        return redisEndpoint(options, System.getenv());
    }

    static RedisEndpoint redisEndpoint(RedisOptions options, Map<String, String> env) {
        return namingOptions(() -> {
            RedisEndpoint.Builder b = RedisEndpoint.builder().setCluster(options.redisCluster);
            b.setUrl(options.redisUrl());
            if (options.redisPasswordFile != null && !options.redisPasswordFile.isBlank()) {
                b.setPasswordFile(Paths.get(options.redisPasswordFile));
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
    public static RedisSink redisSink(JobOptions options) {
        return redisSinkBuilder(options).build();
    }

    /**
     * The builder of the job's Redis sink: {@link #redisEndpoint}, {@code --redis.key-prefix},
     * {@code --redis.retry-timeout}; {@value RedisSink#JOB_COUNTERS_PER_CALL} counters per script call, a buffer of
     * {@value RedisSink#JOB_MAX_BUFFERED_KEYS} keys, flush interval at its default (the benchmark sets more).
     */
    public static RedisSink.Builder redisSinkBuilder(JobOptions options) {
        RedisEndpoint endpoint = redisEndpoint(options);
        return namingOptions(() -> RedisSink.builder()
                .setEndpoint(endpoint)
                .setKeyPrefix(options.redisKeyPrefix)
                .setAllowedLateness(options.allowedLateness)
                .setRetryTimeout(options.redisRetryTimeout)
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
    public static Properties kafkaProperties(JobOptions options) {
        return KafkaClients.properties(options.kafkaBootstrap, options.kafkaProperties);
    }

    /**
     * The job's Kafka source: {@link #plainKafkaSource} with each partition holding the watermark until it is read
     * and idle ({@code --idle-timeout}) only when read to its end ({@link CaughtUpIdlenessSource}).
     */
    public static CaughtUpIdlenessSource kafkaSource(JobOptions options) {
        Properties clients = kafkaProperties(options);
        clients.put(ConsumerConfig.GROUP_ID_CONFIG, options.kafkaGroupId);
        return new CaughtUpIdlenessSource(plainKafkaSource(options), clients, options.idleTimeout);
    }

    /** Flink's Kafka source of {@code --kafka.topic}, {@code --kafka.group-id}, {@code --kafka.starting-offsets}, {@code --bounded}, {@code --max-future}. */
    public static KafkaSource<Event> plainKafkaSource(JobOptions options) {
        return KafkaIO.source(
                kafkaProperties(options),
                options.kafkaTopic,
                options.kafkaGroupId,
                startingOffsets(options.kafkaStartingOffsets),
                options.maxFuture,
                options.bounded);
    }

    /** {@code committed} falls back to the earliest offset for a partition the group has not committed. */
    @SuppressWarnings("deprecation") // OffsetResetStrategy is what the connector's API takes
    static OffsetsInitializer startingOffsets(JobOptions.StartingOffsets s) {
        return switch (s == null ? JobOptions.StartingOffsets.committed : s) {
            case committed -> OffsetsInitializer.committedOffsets(OffsetResetStrategy.EARLIEST);
            case earliest -> OffsetsInitializer.earliest();
            case latest -> OffsetsInitializer.latest();
        };
    }

    /** The producer settings of the job's Kafka sinks: {@link #kafkaProperties} and {@code --kafka.transaction-timeout}. */
    public static Properties kafkaProducerProperties(JobOptions options) {
        return KafkaIO.producerProperties(kafkaProperties(options), options.kafkaTransactionTimeout);
    }

    /**
     * The rollups sink: topic {@code --kafka.topic.rollups}, each record naming {@code --redis.key-prefix},
     * transactional ids of {@code --kafka.transactional-id-prefix}.
     */
    public static KafkaSink<Rollup> rollupsSink(JobOptions options) {
        return KafkaIO.rollups(
                kafkaProducerProperties(options),
                options.kafkaTransactionalIdPrefix,
                options.kafkaTopicRollups,
                options.redisKeyPrefix);
    }

    /** The dead-letter sink: topic {@code --kafka.topic.dlq}, transactional ids of {@code --kafka.transactional-id-prefix}. */
    public static KafkaSink<Event> deadLetterSink(JobOptions options) {
        return KafkaIO.deadLetters(
                kafkaProducerProperties(options), options.kafkaTransactionalIdPrefix, options.kafkaTopicDlq);
    }

    /**
     * The lists' sink: topic {@code --kafka.topic.trending}, each record naming {@code --redis.key-prefix},
     * transactional ids of {@code --kafka.transactional-id-prefix}.
     */
    public static KafkaSink<TopList> trendingSink(JobOptions options) {
        String prefix = options.redisKeyPrefix;
        return KafkaIO.trending(
                kafkaProducerProperties(options),
                options.kafkaTransactionalIdPrefix,
                options.kafkaTopicTrending,
                prefix,
                t -> t.ns,
                t -> Json.topList(prefix, t));
    }

    /**
     * {@link #ensureOutputTopics(JobOptions)}; in application mode a broker that does not answer is a warning:
     * this main may run for a JobManager failover, whose recovered job is better left to retry than failed.
     */
    static void ensureOutputTopics(JobOptions options, boolean applicationMode) {
        try {
            ensureOutputTopics(options);
        } catch (IllegalStateException e) {
            if (!applicationMode) throw e;
            LOG.warn("application mode: the job's output topics were not checked: {}", e.getMessage());
        }
    }

    /**
     * Checks the brokers of the options and creates the job's output topics ({@code --kafka.topic.rollups},
     * {@code --kafka.topic.trending}, {@code --kafka.topic.dlq}) that are missing ({@link KafkaIO#ensureOutputTopics}).
     */
    public static void ensureOutputTopics(JobOptions options) {
        KafkaIO.ensureOutputTopics(
                kafkaProperties(options), options.kafkaTopicRollups, options.kafkaTopicTrending, options.kafkaTopicDlq);
    }
}
