package io.rollcount.job;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.policy.PoliciesFile;
import java.io.Serializable;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The job's settings: every option of contract section 5, made once from the parsed command line
 * ({@link JobOptions#toSettings}) or from an argument list ({@link #of}, {@link Builder}), checked as they are made
 * and immutable after, so that settings are always valid. The options are the fields, of the names of
 * {@link JobOptions}' fields; what follows from them are the methods. A setting knows whether its option was given
 * ({@link #isGiven}): where it was not, a cluster's own setting may apply ({@link FlinkSettings}). A variant is a copy
 * ({@link #toBuilder}); what a run learns as it starts (the lease token) travels beside them ({@link Launcher}).
 */
public final class JobSettings implements Serializable {
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

    /** The checkpoint interval where neither {@code --checkpoint.interval} nor the cluster sets one. */
    public static final Duration DEFAULT_CHECKPOINT_INTERVAL = Duration.ofSeconds(10);

    /** {@code --source}, else files when {@code --input} is given, else kafka. */
    public final SourceKind source;

    public final String input;
    public final boolean bounded;
    public final String kafkaBootstrap;
    public final String kafkaTopic;
    public final String kafkaTopicRollups;
    public final String kafkaTopicTrending;
    public final String kafkaTopicDlq;
    public final boolean legacyRollups;
    public final String kafkaProperties;
    public final StartingOffsets kafkaStartingOffsets;
    public final String kafkaGroupId;
    public final String kafkaTransactionalIdPrefix;
    public final Duration kafkaTransactionTimeout;
    public final String dlq;
    public final RedisSettings redis;
    public final Duration redisRetryTimeout;
    /** {@code --parallelism}; null where it is not given (the cluster's applies). */
    public final Integer parallelism;
    /** {@code --checkpoint.interval}, or {@link #DEFAULT_CHECKPOINT_INTERVAL} where it is not given ({@link #isGiven}). */
    public final Duration checkpointInterval;

    public final String checkpointDir;
    public final Duration allowedLateness;
    public final Duration outOfOrderness;
    public final Duration idleTimeout;
    public final Duration dedupHorizon;
    public final Duration maxFuture;
    public final Duration flushInterval;
    public final String counterCache;
    public final int topk;
    public final Duration trendingHalfLife;
    public final int trendingMaxNamespaces;
    public final String rollupsResolutions;
    public final String policiesFile;
    public final boolean fresh;

    /** The options given, by name, each with its value as text (null for a flag): what {@link #toBuilder} starts from. */
    private final Map<String, String> given;

    private final long counterCacheBytes;
    private final int rollupResolutionMask;
    /** The namespace policies, read once as the settings are made (the job graph carries them, not the file). */
    private final Policies policies;

    /**
     * The settings of {@code o}, whose options {@code given} were given; fails with an
     * {@link IllegalArgumentException} of one line that names the option at fault.
     */
    JobSettings(JobOptions o, Map<String, String> given) {
        source = o.source != null ? o.source : o.input != null ? SourceKind.files : SourceKind.kafka;
        input = o.input;
        bounded = o.bounded;
        kafkaBootstrap = o.kafkaBootstrap;
        kafkaTopic = o.kafkaTopic;
        kafkaTopicRollups = o.kafkaTopicRollups;
        kafkaTopicTrending = o.kafkaTopicTrending;
        kafkaTopicDlq = o.kafkaTopicDlq;
        legacyRollups = o.legacyRollups;
        kafkaProperties = o.kafkaProperties;
        kafkaStartingOffsets = o.kafkaStartingOffsets;
        kafkaGroupId = o.kafkaGroupId;
        kafkaTransactionalIdPrefix = o.kafkaTransactionalIdPrefix;
        kafkaTransactionTimeout = o.kafkaTransactionTimeout;
        dlq = o.dlq;
        redis = o.toSettings();
        redisRetryTimeout = o.redisRetryTimeout;
        parallelism = o.parallelism;
        checkpointInterval = o.checkpointInterval != null ? o.checkpointInterval : DEFAULT_CHECKPOINT_INTERVAL;
        checkpointDir = o.checkpointDir;
        allowedLateness = o.allowedLateness;
        outOfOrderness = o.outOfOrderness;
        idleTimeout = o.idleTimeout;
        dedupHorizon = o.dedupHorizon;
        maxFuture = o.maxFuture;
        flushInterval = o.flushInterval;
        counterCache = o.counterCache;
        topk = o.topk;
        trendingHalfLife = o.trendingHalfLife;
        trendingMaxNamespaces = o.trendingMaxNamespaces;
        rollupsResolutions = o.rollupsResolutions;
        policiesFile = o.policiesFile;
        fresh = o.fresh;
        this.given = Collections.unmodifiableMap(new LinkedHashMap<>(given));
        SettingsCheck.durations(this);
        counterCacheBytes = SettingsCheck.counterCacheBytes(counterCache);
        SettingsCheck.sourceAndOutputs(this);
        rollupResolutionMask = SettingsCheck.rollupResolutionMask(rollupsResolutions);
        SettingsCheck.listsAndRedis(this);
        policies = loadPolicies(policiesFile, topk, dedupHorizon);
    }

    /**
     * The settings of the command-line arguments {@code args} (as {@code flink run} takes them); a malformed or
     * refused option is an {@link IllegalArgumentException} of one line naming it.
     */
    public static JobSettings of(String... args) {
        return JobOptions.parse(java.util.List.of(args));
    }

    /** A builder of settings from no option given: every option at its default. */
    public static Builder builder() {
        return new Builder(Map.of());
    }

    /** A builder that starts from the options given to these settings, for a variant of them. */
    public Builder toBuilder() {
        return new Builder(given);
    }

    /**
     * Whether {@code option} (e.g. {@code --checkpoint.interval}) was given, on the command line or to a
     * {@link Builder}; where it was not, its setting is its default. An unknown option name fails.
     */
    public boolean isGiven(String option) {
        JobOptions.requireName(option);
        return given.containsKey(option);
    }

    /** Whether {@code --kafka.bootstrap} is set: then rollups and dead letters go to Kafka, else dead letters to {@code --dlq}. */
    public boolean kafkaConfigured() {
        return kafkaBootstrap != null && !kafkaBootstrap.isBlank();
    }

    /**
     * {@code --counter-cache} in bytes, or {@link io.rollcount.job.ops.CountPerCounter#AUTO_CACHE_BYTES} for
     * {@code auto}.
     */
    public long counterCacheBytes() {
        return counterCacheBytes;
    }

    /** The resolutions of {@code --rollups.resolutions}, as a bit set over {@link Resolution#ordinal()}. */
    public int rollupResolutionMask() {
        return rollupResolutionMask;
    }

    /**
     * The namespace policies: those of {@code --policies}, or none (every counter gets the defaults, with
     * {@code --topk} and {@code --dedup-horizon}).
     */
    public Policies policies() {
        return policies;
    }

    /**
     * The policies of {@code file} (null: none) with the defaults {@code topk} and {@code dedupHorizon}; a bad file
     * fails with a {@link io.rollcount.job.policy.PoliciesException} of one line naming the file, the rule and the
     * field.
     */
    public static Policies loadPolicies(String file, int topk, Duration dedupHorizon) {
        long dedup = dedupHorizon.toMillis();
        return file == null ? Policies.none(topk, dedup) : PoliciesFile.load(Path.of(file), topk, dedup);
    }

    /** {@code value} as an option's argument that parses back to it: a {@link Duration} in ISO-8601. */
    static String text(Object value) {
        return value instanceof Duration d ? d.toString() : String.valueOf(value);
    }

    /** The options given, as the command line would give them (secrets such as a password in {@code --redis} left out). */
    @Override
    public String toString() {
        java.util.StringJoiner s = new java.util.StringJoiner(" ", "JobSettings[", "]");
        given.forEach((option, value) ->
                s.add(value == null ? option : option + " " + (option.equals("--redis") ? "<url>" : value)));
        return s.toString();
    }

    /**
     * Settings made from an argument list: those a builder starts from, with options set or removed; {@link #build}
     * parses and checks them as the command line would. An option set is given ({@link JobSettings#isGiven}).
     */
    public static final class Builder {
        private final Map<String, String> args;

        private Builder(Map<String, String> given) {
            this.args = new LinkedHashMap<>(given);
        }

        /**
         * Sets {@code option} (e.g. {@code --topk}) to {@code value}: a {@link Boolean} gives ({@code true}) or
         * removes a flag, a {@link Duration} is written in ISO-8601, anything else as its text; null removes it.
         * An unknown option name fails.
         */
        public Builder set(String option, Object value) {
            JobOptions.requireName(option);
            if (value == null || Boolean.FALSE.equals(value)) {
                args.remove(option);
            } else if (value instanceof Boolean) {
                args.put(option, null);
            } else {
                args.put(option, text(value));
            }
            return this;
        }

        /** The settings of the options set, parsed and checked as the command line's are. */
        public JobSettings build() {
            java.util.List<String> list = new java.util.ArrayList<>();
            args.forEach((option, value) -> {
                list.add(option);
                if (value != null) list.add(value);
            });
            return JobOptions.parse(list);
        }
    }
}
