package io.rollcount.job;

import io.rollcount.job.kafka.KafkaIO;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.policy.PoliciesFile;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.util.DurationConverter;
import io.rollcount.job.util.Durations;
import java.time.Duration;
import picocli.CommandLine;
import picocli.CommandLine.Option;

/**
 * Every option of the job (contract section 5), the same for {@code flink run job/target/rollcount-job.jar}
 * and {@code ./rollcount run}. Parsed by picocli, durations by {@link DurationConverter}; each option's default
 * is its annotation's {@code defaultValue} alone, which a new instance holds too; validated by {@link #validate()},
 * which names the option at fault. The Redis options are {@link RedisOptions}, shared with the commands that read Redis. Secrets never travel on the command line: {@code --redis} may omit the password and take it
 * from {@code $ROLLCOUNT_REDIS_PASSWORD} or {@code --redis.password-file}.
 */
public class JobOptions extends RedisOptions {
    private static final long serialVersionUID = 1L;

    public enum SourceKind {
        kafka,
        files
    }

    public enum StartingOffsets {
        committed,
        earliest,
        latest
    }

    @Option(
            names = "--source",
            description =
                    "Where increments come from: kafka or files. Default: files when --input is given, else kafka.")
    public SourceKind source;

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
    public StartingOffsets kafkaStartingOffsets;

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

    /** The checkpoint interval where neither {@code --checkpoint.interval} nor the cluster sets one. */
    public static final Duration DEFAULT_CHECKPOINT_INTERVAL = Duration.ofSeconds(10);

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
            description = "How often changed totals and open windows are written (default: ${DEFAULT-VALUE}).")
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

    /** The parsed {@code --policies} file, read once (client side: the job graph carries it, not the file). */
    private Policies policies;

    /**
     * The namespace policies: those of {@code --policies}, read and checked on first use, or none (every
     * counter gets the defaults, with {@code --topk} and {@code --dedup-horizon}). A bad file fails with a
     * {@link io.rollcount.job.policy.PoliciesException} of one line naming the file, the rule and the field.
     */
    public Policies policies() {
        if (policies == null) {
            long dedup = dedupHorizon.toMillis();
            policies = policiesFile == null
                    ? Policies.none(topk, dedup)
                    : PoliciesFile.load(java.nio.file.Path.of(policiesFile), topk, dedup);
        }
        return policies;
    }

    /** {@code --checkpoint.interval}, or {@link #DEFAULT_CHECKPOINT_INTERVAL} where it is not given. */
    public Duration checkpointIntervalOrDefault() {
        return checkpointInterval != null ? checkpointInterval : DEFAULT_CHECKPOINT_INTERVAL;
    }

    /** Whether {@code --kafka.bootstrap} is set: then rollups and dead letters go to Kafka, else dead letters to {@code --dlq}. */
    public boolean kafkaConfigured() {
        return kafkaBootstrap != null && !kafkaBootstrap.isBlank();
    }

    /**
     * The resolutions of {@code --rollups.resolutions}, as a bit set over {@link Resolution#ordinal()}; fails
     * with a message naming the option on an empty list, an unknown label or a label given twice.
     */
    public int rollupResolutionMask() {
        String value = rollupsResolutions == null ? "" : rollupsResolutions.trim();
        String expected = "expected a comma-separated list of 5s, 1m, 5m, 1h, 1d";
        if (value.isEmpty()) throw new IllegalArgumentException("--rollups.resolutions is empty: " + expected);
        int mask = 0;
        for (String part : value.split(",", -1)) {
            String label = part.trim();
            Resolution r = null;
            for (Resolution c : Resolution.all()) if (c.label.equals(label)) r = c;
            if (r == null) {
                throw new IllegalArgumentException(
                        "--rollups.resolutions: unknown resolution '" + label + "' in '" + value + "': " + expected);
            }
            if ((mask & (1 << r.ordinal())) != 0) {
                throw new IllegalArgumentException(
                        "--rollups.resolutions: '" + label + "' is listed twice in '" + value + "'");
            }
            mask |= 1 << r.ordinal();
        }
        return mask;
    }

    /**
     * {@code --counter-cache} in bytes, or {@link io.rollcount.job.ops.CountPerCounter#AUTO_CACHE_BYTES} for
     * {@code auto}; fails with a message naming the option when it is neither a size of at least 1mb nor auto.
     */
    public long counterCacheBytes() {
        String v = counterCache == null ? "auto" : counterCache.strip();
        if (v.equalsIgnoreCase("auto")) return io.rollcount.job.ops.CountPerCounter.AUTO_CACHE_BYTES;
        long bytes;
        try {
            bytes = org.apache.flink.configuration.MemorySize.parse(v).getBytes();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "--counter-cache must be a size such as 64mb or 'auto', not '" + counterCache + "'");
        }
        if (bytes < (1L << 20)) {
            throw new IllegalArgumentException("--counter-cache must be at least 1mb, not '" + counterCache + "'");
        }
        return bytes;
    }

    public SourceKind sourceKind() {
        if (source != null) return source;
        return input != null ? SourceKind.files : SourceKind.kafka;
    }

    /** Fails with a message naming the option when {@code d} is shorter than {@code min}. */
    private static void atLeast(String option, Duration d, Duration min, String why) {
        if (d.compareTo(min) < 0) {
            throw new IllegalArgumentException(
                    option + " must be at least " + Durations.format(min) + why + ", not " + Durations.format(d));
        }
    }

    private static void notBlank(String option, String value) {
        if (value == null || value.isBlank()) throw new IllegalArgumentException(option + " must not be empty");
    }

    /**
     * Checks every option and fails with a message that names the option at fault. Every duration has a
     * minimum, since a zero where none is meant (a half-life of {@code 0s}) fails the job at every restart:
     * zero only where it means something (no lateness, no out-of-orderness, no idleness), never negative.
     */
    public JobOptions validate() {
        atLeast("--allowed-lateness", allowedLateness, Duration.ZERO, "");
        atLeast("--out-of-orderness", outOfOrderness, Duration.ZERO, "");
        atLeast("--idle-timeout", idleTimeout, Duration.ZERO, " (0s: partitions never count as idle)");
        atLeast("--dedup-horizon", dedupHorizon, Duration.ofSeconds(1), "");
        atLeast("--max-future", maxFuture, Duration.ofSeconds(1), "");
        if (checkpointInterval != null)
            atLeast("--checkpoint.interval", checkpointInterval, Duration.ofMillis(10), " (Flink's minimum)");
        atLeast("--trending.half-life", trendingHalfLife, Duration.ofSeconds(1), "");
        atLeast("--redis.retry-timeout", redisRetryTimeout, Duration.ZERO, "");
        atLeast("--flush-interval", flushInterval, Duration.ofMillis(10), "");
        counterCacheBytes();
        atLeast("--kafka.transaction-timeout", kafkaTransactionTimeout, Duration.ofSeconds(1), "");
        if (kafkaTransactionTimeout.compareTo(Duration.ofMinutes(15)) > 0) {
            throw new IllegalArgumentException(
                    "--kafka.transaction-timeout must be at most 15m, the default transaction.max.timeout.ms of a Kafka broker");
        }
        if (sourceKind() == SourceKind.files && (input == null || input.isBlank())) {
            throw new IllegalArgumentException("--input is required with --source files");
        }
        if (sourceKind() == SourceKind.kafka && !kafkaConfigured()) {
            throw new IllegalArgumentException(
                    "--kafka.bootstrap is required with --source kafka (or give --input PATH to read files)");
        }
        notBlank("--kafka.topic.rollups", kafkaTopicRollups);
        notBlank("--kafka.topic.trending", kafkaTopicTrending);
        notBlank("--kafka.topic.dlq", kafkaTopicDlq);
        if (parallelism != null && parallelism < 1)
            throw new IllegalArgumentException("--parallelism must be at least 1");
        if (trendingMaxNamespaces < 1 || trendingMaxNamespaces > 100_000) {
            throw new IllegalArgumentException(
                    "--trending.max-namespaces must be between 1 and 100000, got " + trendingMaxNamespaces);
        }
        rollupResolutionMask();
        if (topk < 1 || topk > 10_000) throw new IllegalArgumentException("--topk must be between 1 and 10000");
        RedisKeys.checkPrefix(redisKeyPrefix);
        String url = redisUrl();
        if (!url.startsWith("redis://") && !url.startsWith("rediss://")) {
            throw new IllegalArgumentException("--redis must be a redis:// or rediss:// URL");
        }
        policies = null; // read (again) with the options as they are now
        policies();
        return this;
    }
}
