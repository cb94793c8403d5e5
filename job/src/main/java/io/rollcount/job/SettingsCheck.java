package io.rollcount.job;

import io.rollcount.job.JobSettings.SourceKind;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.util.Durations;
import java.time.Duration;

/**
 * The checks of {@link JobSettings} as they are made, each failing with an {@link IllegalArgumentException} of one
 * line that names the option at fault. Every duration has a minimum, since a zero where none is meant (a half-life
 * of {@code 0s}) fails the job at every restart: zero only where it means something (no lateness, no
 * out-of-orderness, no idleness), never negative.
 */
final class SettingsCheck {
    private SettingsCheck() {}

    static void durations(JobSettings s) {
        atLeast("--allowed-lateness", s.allowedLateness, Duration.ZERO, "");
        atLeast("--out-of-orderness", s.outOfOrderness, Duration.ZERO, "");
        atLeast("--idle-timeout", s.idleTimeout, Duration.ZERO, " (0s: partitions never count as idle)");
        atLeast("--dedup-horizon", s.dedupHorizon, Duration.ofSeconds(1), "");
        atLeast("--max-future", s.maxFuture, Duration.ofSeconds(1), "");
        atLeast("--checkpoint.interval", s.checkpointInterval, Duration.ofMillis(10), " (Flink's minimum)");
        atLeast("--trending.half-life", s.trendingHalfLife, Duration.ofSeconds(1), "");
        atLeast("--redis.retry-timeout", s.redisRetryTimeout, Duration.ZERO, "");
        atLeast("--flush-interval", s.flushInterval, Duration.ofMillis(10), "");
    }

    /** The Kafka transactions, the source and the output topics. */
    static void sourceAndOutputs(JobSettings s) {
        atLeast("--kafka.transaction-timeout", s.kafkaTransactionTimeout, Duration.ofSeconds(1), "");
        if (s.kafkaTransactionTimeout.compareTo(Duration.ofMinutes(15)) > 0) {
            throw new IllegalArgumentException(
                    "--kafka.transaction-timeout must be at most 15m, the default transaction.max.timeout.ms of a Kafka broker");
        }
        if (s.source == SourceKind.files && (s.input == null || s.input.isBlank())) {
            throw new IllegalArgumentException("--input is required with --source files");
        }
        if (s.source == SourceKind.kafka && !s.kafkaConfigured()) {
            throw new IllegalArgumentException(
                    "--kafka.bootstrap is required with --source kafka (or give --input PATH to read files)");
        }
        notBlank("--kafka.topic.rollups", s.kafkaTopicRollups);
        notBlank("--kafka.topic.trending", s.kafkaTopicTrending);
        notBlank("--kafka.topic.dlq", s.kafkaTopicDlq);
        if (s.parallelism != null && s.parallelism < 1)
            throw new IllegalArgumentException("--parallelism must be at least 1");
        if (s.trendingMaxNamespaces < 1 || s.trendingMaxNamespaces > 100_000) {
            throw new IllegalArgumentException(
                    "--trending.max-namespaces must be between 1 and 100000, got " + s.trendingMaxNamespaces);
        }
    }

    /** The lists' length and Redis. */
    static void listsAndRedis(JobSettings s) {
        if (s.topk < 1 || s.topk > 10_000) throw new IllegalArgumentException("--topk must be between 1 and 10000");
        s.redis.check();
    }

    /**
     * The resolutions of {@code --rollups.resolutions}, as a bit set over {@link Resolution#ordinal()}; fails on an
     * empty list, an unknown label or a label given twice.
     */
    static int rollupResolutionMask(String rollupsResolutions) {
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
     * {@code auto}; fails when it is neither a size of at least 1mb nor auto.
     */
    static long counterCacheBytes(String counterCache) {
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
}
