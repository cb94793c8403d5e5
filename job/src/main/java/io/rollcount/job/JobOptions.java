package io.rollcount.job;

import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.util.DurationConverter;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParseResult;

/**
 * The command-line face of the job's options (contract section 5), the same for
 * {@code flink run job/target/rollcount-job.jar} and {@code ./rollcount run}: the fields picocli fills in, durations
 * by {@link DurationConverter}; each option's default is its annotation's {@code defaultValue} alone, which a new
 * instance holds too. The job never reads these fields: {@link #toSettings} makes them, once parsed, the immutable
 * {@link JobSettings} it runs with, checked as they are made. The Redis options are {@link RedisOptions}, shared with
 * the commands that read Redis. Secrets never travel on the command line: {@code --redis} may omit the password and
 * take it from {@code $ROLLCOUNT_REDIS_PASSWORD} or {@code --redis.password-file}.
 */
public class JobOptions extends RedisOptions {

    @Option(
            names = "--source",
            description =
                    "Where increments come from: kafka or files. Default: files when --input is given, else kafka.")
    public JobSettings.SourceKind source;

    @Option(
            names = "--input",
            paramLabel = "PATH",
            description = "A .jsonl or .jsonl.gz file, or a folder of them (--source files).")
    public String input;

    @Option(names = "--bounded", description = "Kafka: stop at the end offsets found at start. Files always end.")
    public boolean bounded;

    @Option(
            names = "--kafka.bootstrap",
            paramLabel = "HOST:PORT",
            description = "Kafka bootstrap servers; when set, rollups, trending and dead letters go to Kafka.")
    public String kafkaBootstrap;

    @Option(
            names = "--kafka.topic",
            defaultValue = "counter-events",
            description = "Input topic (default: ${DEFAULT-VALUE}).")
    public String kafkaTopic;

    @Option(
            names = "--kafka.topic.rollups",
            defaultValue = KafkaIO.ROLLUPS_TOPIC,
            description = "Topic of the closed windows' rollups (default: ${DEFAULT-VALUE}).")
    public String kafkaTopicRollups;

    @Option(
            names = "--kafka.topic.trending",
            defaultValue = KafkaIO.TRENDING_TOPIC,
            description = "Topic of the trending and window top-K lists (default: ${DEFAULT-VALUE}).")
    public String kafkaTopicTrending;

    @Option(
            names = "--kafka.topic.dlq",
            defaultValue = KafkaIO.DEAD_LETTER_TOPIC,
            description = "Topic of the dead letters (default: ${DEFAULT-VALUE}).")
    public String kafkaTopicDlq;

    @Option(
            names = "--legacy-rollups",
            description = "The rebuild after a loss of Redis's data also takes rollups that name no key prefix"
                    + " (written by versions that did not record it), as if they were this prefix's.")
    public boolean legacyRollups;

    @Option(
            names = "--kafka.properties",
            paramLabel = "FILE",
            description =
                    "A properties file of Kafka client settings (SASL, SSL, ...) given to every Kafka client of the job.")
    public String kafkaProperties;

    @Option(
            names = "--kafka.starting-offsets",
            defaultValue = "committed",
            description =
                    "committed, earliest or latest (default: ${DEFAULT-VALUE}; committed falls back to earliest).")
    public JobSettings.StartingOffsets kafkaStartingOffsets;

    @Option(
            names = "--kafka.group-id",
            defaultValue = "rollcount",
            description = "Consumer group id (default: ${DEFAULT-VALUE}).")
    public String kafkaGroupId;

    @Option(
            names = "--kafka.transactional-id-prefix",
            defaultValue = "rollcount",
            description =
                    "Prefix of the transactional ids of the exactly-once Kafka sinks; unique per job on a cluster (default: ${DEFAULT-VALUE}).")
    public String kafkaTransactionalIdPrefix;

    @Option(
            names = "--kafka.transaction-timeout",
            defaultValue = "10m",
            converter = DurationConverter.class,
            description =
                    "Kafka transaction timeout; at most the broker's transaction.max.timeout.ms, 15m by default (default: ${DEFAULT-VALUE}).")
    public Duration kafkaTransactionTimeout;

    @Option(
            names = "--dlq",
            paramLabel = "PATH",
            defaultValue = "rollcount-dlq.jsonl",
            description = "Dead-letter JSON-lines file, used when Kafka is not configured (default: ${DEFAULT-VALUE}).")
    public String dlq;

    @Option(
            names = "--redis.retry-timeout",
            defaultValue = "60s",
            converter = DurationConverter.class,
            description =
                    "How long Redis errors are retried with backoff before the job fails and restarts from its checkpoint (default: ${DEFAULT-VALUE}).")
    public Duration redisRetryTimeout;

    @Option(names = "--parallelism", description = "Parallelism of the job (default: the cluster's).")
    public Integer parallelism;

    @Option(
            names = "--checkpoint.interval",
            converter = DurationConverter.class,
            description = "Checkpoint interval (default: the cluster's execution.checkpointing.interval, else 10s;"
                    + " ./rollcount run: 10s). The exactly-once outputs become visible at each checkpoint.")
    public Duration checkpointInterval;

    @Option(
            names = "--checkpoint.dir",
            paramLabel = "URI",
            description =
                    "Checkpoint storage, e.g. file:///var/rollcount/checkpoints (default: the cluster's; locally a folder under the working directory).")
    public String checkpointDir;

    @Option(
            names = "--allowed-lateness",
            defaultValue = "1m",
            converter = DurationConverter.class,
            description =
                    "How long after a window's end late events still change it; later ones are dead-lettered as 'late' (default: ${DEFAULT-VALUE}).")
    public Duration allowedLateness;

    @Option(
            names = "--out-of-orderness",
            defaultValue = "5s",
            converter = DurationConverter.class,
            description = "Bound of the watermark's out-of-orderness (default: ${DEFAULT-VALUE}).")
    public Duration outOfOrderness;

    @Option(
            names = "--idle-timeout",
            defaultValue = "10s",
            converter = DurationConverter.class,
            description =
                    "A Kafka partition read to its end and without events for this long, or a source subtask without a partition this long, no longer holds the watermark back (default: ${DEFAULT-VALUE}).")
    public Duration idleTimeout;

    @Option(
            names = "--dedup-horizon",
            defaultValue = "24h",
            converter = DurationConverter.class,
            description = "How long (event time) an event_id is remembered per counter (default: ${DEFAULT-VALUE}).")
    public Duration dedupHorizon;

    @Option(
            names = "--max-future",
            defaultValue = "10m",
            converter = DurationConverter.class,
            description =
                    "Events more than this far ahead of the wall clock are dead-lettered (default: ${DEFAULT-VALUE}).")
    public Duration maxFuture;

    @Option(
            names = "--flush-interval",
            defaultValue = "1s",
            converter = DurationConverter.class,
            description =
                    "How often changed totals and open windows, and the unique users seen since, are written (default: ${DEFAULT-VALUE}).")
    public Duration flushInterval;

    @Option(
            names = "--counter-cache",
            paramLabel = "SIZE",
            defaultValue = "auto",
            description =
                    "Heap for the counters in use, per counting subtask, between checkpoints (e.g. 64mb): a counter on the heap costs no RocksDB read or write per event. 'auto': a quarter of the TaskManager's heap per slot, from 16mb to 128mb (default: ${DEFAULT-VALUE}).")
    public String counterCache;

    @Option(
            names = "--topk",
            defaultValue = "100",
            description = "Length of the top-K lists (default: ${DEFAULT-VALUE}).")
    public int topk;

    @Option(
            names = "--trending.half-life",
            defaultValue = "1h",
            converter = DurationConverter.class,
            description = "Half-life of trending scores in event time (default: ${DEFAULT-VALUE}).")
    public Duration trendingHalfLife;

    @Option(
            names = "--trending.max-namespaces",
            defaultValue = "1000",
            description =
                    "At most this many namespaces get trending lists and window top-K lists of their own, the first ones seen; the counters of the others are in the _all lists only (default: ${DEFAULT-VALUE}).")
    public int trendingMaxNamespaces;

    @Option(
            names = "--rollups.resolutions",
            paramLabel = "LIST",
            defaultValue = "1m,1h,1d",
            description =
                    "Which closed windows go to counter-rollups: a comma list of 5s, 1m, 5m, 1h, 1d (default: ${DEFAULT-VALUE}).")
    public String rollupsResolutions;

    @Option(
            names = "--policies",
            paramLabel = "FILE",
            description =
                    "Namespace policies (YAML): per namespace or glob, which resolutions, retention, uniques, trending, top-K and dedup horizon its counters get; read at start, before anything runs (default: every counter gets everything).")
    public String policiesFile;

    @Option(
            names = "--fresh",
            description =
                    "Start empty although the key prefix holds another job's counts: deletes the prefix's keys first, so that totals restart from what this run reads. Without it such a start is refused (exit 2).")
    public boolean fresh;

    /** The options at their defaults (the {@code defaultValue} of each annotation). */
    public JobOptions() {
        new CommandLine(this).parseArgs();
    }

    /** The long name of every option of the job (those of {@link RedisOptions} too). */
    static final Set<String> NAMES = CommandSpec.forAnnotatedObject(new JobOptions()).options().stream()
            .map(OptionSpec::longestName)
            .collect(Collectors.toUnmodifiableSet());

    /**
     * The settings of these options, which {@code parsed} (the parse result of the command these options are
     * part of, e.g. as a mixin) filled in; fails with an {@link IllegalArgumentException} of one line naming the
     * option at fault ({@link JobSettings}).
     */
    public JobSettings toSettings(ParseResult parsed) {
        Map<String, String> given = new LinkedHashMap<>();
        for (OptionSpec option : parsed.matchedOptions()) {
            String name = option.longestName();
            if (!NAMES.contains(name)) continue;
            Object value = option.getValue();
            given.put(name, value instanceof Boolean ? null : JobSettings.text(value));
        }
        return new JobSettings(this, given);
    }

    /** The settings of the job's arguments {@code args}; a malformed option is an {@link IllegalArgumentException}. */
    static JobSettings parse(List<String> args) {
        JobOptions options = new JobOptions();
        ParseResult parsed;
        try {
            parsed = new CommandLine(options).parseArgs(args.toArray(String[]::new));
        } catch (CommandLine.ParameterException e) {
            throw new IllegalArgumentException(e.getMessage());
        }
        return options.toSettings(parsed);
    }

    /** Fails unless {@code option} names an option of the job (e.g. {@code --topk}). */
    static void requireName(String option) {
        if (!NAMES.contains(option)) throw new IllegalArgumentException("no option of the job is named " + option);
    }
}
