package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import picocli.CommandLine;

/**
 * Issue 18 item 10: every duration option has a minimum, checked before the job starts, and the message
 * names the option ({@code --trending.half-life 0s} once passed and crash-looped the job).
 */
class JobOptionsTest {

    /** The job's options of {@code --input events.jsonl} and {@code args}, parsed, not validated. */
    static JobOptions parse(String... args) {
        JobOptions o = new JobOptions();
        String[] all = new String[args.length + 2];
        all[0] = "--input";
        all[1] = "events.jsonl";
        System.arraycopy(args, 0, all, 2, args.length);
        new CommandLine(o).parseArgs(all);
        return o;
    }

    @ParameterizedTest(name = "{0} {1}")
    @CsvSource(
            delimiter = '|',
            quoteCharacter = '"',
            value = {
                "--trending.half-life | 0s | --trending.half-life must be at least 1s, not 0s",
                "--trending.half-life | 999ms | --trending.half-life must be at least 1s, not 999ms",
                "--trending.half-life | PT-1H | --trending.half-life must be at least 1s, not -1h",
                "--dedup-horizon | 0s | --dedup-horizon must be at least 1s, not 0s",
                "--max-future | 0s | --max-future must be at least 1s, not 0s",
                "--checkpoint.interval | 0ms | --checkpoint.interval must be at least 10ms (Flink's minimum), not 0s",
                "--flush-interval | 0s | --flush-interval must be at least 10ms, not 0s",
                "--kafka.transaction-timeout | 0s | --kafka.transaction-timeout must be at least 1s, not 0s",
                "--allowed-lateness | PT-1S | --allowed-lateness must be at least 0s, not -1s",
                "--out-of-orderness | PT-5S | --out-of-orderness must be at least 0s, not -5s",
                "--idle-timeout | PT-1S | --idle-timeout must be at least 0s (0s: partitions never count as idle), not -1s",
                "--redis.retry-timeout | PT-1S | --redis.retry-timeout must be at least 0s, not -1s",
            })
    void aDurationBelowItsMinimumIsRefusedNamingTheOption(String option, String value, String message) {
        JobOptions o = parse(option, value);
        assertThatThrownBy(o::validate)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
    }

    @Test
    void theDefaultsAndTheSmallestAllowedValuesPass() {
        parse().validate();
        JobOptions o = parse(
                "--trending.half-life",
                "1s",
                "--dedup-horizon",
                "1s",
                "--max-future",
                "1s",
                "--checkpoint.interval",
                "10ms",
                "--flush-interval",
                "10ms",
                "--allowed-lateness",
                "0s",
                "--out-of-orderness",
                "0s",
                "--idle-timeout",
                "0s",
                "--redis.retry-timeout",
                "0s",
                "--kafka.transaction-timeout",
                "1s");
        assertThat(o.validate()).isSameAs(o);
        assertThatThrownBy(() -> parse("--trending.half-life", "soon"))
                .isInstanceOf(CommandLine.ParameterException.class)
                .hasMessage(
                        "Invalid value for option '--trending.half-life': 'soon' is not a duration: use for example 500ms, 5s, 1m, 1h, 1d");
    }

    @Test
    void aNewInstanceHoldsTheDefaultsOfTheAnnotations() {
        JobOptions o = new JobOptions();
        assertThat(o.checkpointInterval)
                .as("not given: the cluster's, else 10 s")
                .isNull();
        assertThat(o.checkpointIntervalOrDefault()).isEqualTo(java.time.Duration.ofSeconds(10));
        assertThat(o.trendingHalfLife).isEqualTo(java.time.Duration.ofHours(1));
        assertThat(o.kafkaTransactionTimeout).isEqualTo(java.time.Duration.ofMinutes(10));
        assertThat(o.kafkaTopic).isEqualTo("counter-events");
        assertThat(o.redisKeyPrefix).isEqualTo("rc");
        assertThat(o.kafkaStartingOffsets).isEqualTo(JobOptions.StartingOffsets.committed);
        assertThat(o.topk).isEqualTo(100);
        assertThat(o.rollupsResolutions).isEqualTo("1m,1h,1d");
        assertThat(o.dlq).isEqualTo("rollcount-dlq.jsonl");
    }

    @Test
    void theKeyPrefixRuleHasOneMessage() {
        for (String bad : new String[] {"", " ", "a{b", "a}b"}) {
            assertThatThrownBy(() -> parse("--redis.key-prefix", bad).validate())
                    .hasMessage("--redis.key-prefix must be non-empty and free of '{' and '}'");
        }
    }

    @Test
    void counterCacheIsAutoByDefaultOrASizeOfAtLeastOneMebibyte() {
        assertThat(parse().validate().counterCacheBytes())
                .isEqualTo(io.rollcount.job.ops.CountPerCounter.AUTO_CACHE_BYTES);
        assertThat(parse("--counter-cache", "AUTO").validate().counterCacheBytes())
                .isEqualTo(io.rollcount.job.ops.CountPerCounter.AUTO_CACHE_BYTES);
        assertThat(parse("--counter-cache", "64mb").validate().counterCacheBytes())
                .isEqualTo(64L << 20);
        assertThat(parse("--counter-cache", "1g").validate().counterCacheBytes())
                .isEqualTo(1L << 30);
        assertThatThrownBy(() -> parse("--counter-cache", "lots").validate())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--counter-cache must be a size such as 64mb or 'auto', not 'lots'");
        assertThatThrownBy(() -> parse("--counter-cache", "512kb").validate())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--counter-cache must be at least 1mb, not '512kb'");
        assertThatThrownBy(() -> parse("--counter-cache", "0").validate())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--counter-cache must be at least 1mb, not '0'");
    }
}
