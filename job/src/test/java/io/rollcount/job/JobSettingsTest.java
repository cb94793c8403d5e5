package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * {@link JobSettings}: made once from an argument list and checked as they are made, so that every duration option
 * has its minimum before the job starts and the message names the option ({@code --trending.half-life 0s} once
 * passed and crash-looped the job); immutable, a variant is a copy; each knows which options were given.
 */
class JobSettingsTest {

    /** The job's settings of {@code --input events.jsonl} and {@code args}. */
    static JobSettings parse(String... args) {
        String[] all = new String[args.length + 2];
        all[0] = "--input";
        all[1] = "events.jsonl";
        System.arraycopy(args, 0, all, 2, args.length);
        return JobSettings.of(all);
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
        assertThatThrownBy(() -> parse(option, value))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(message);
    }

    @Test
    void theDefaultsAndTheSmallestAllowedValuesPass() {
        parse();
        JobSettings o = parse(
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
        assertThat(o.checkpointInterval).isEqualTo(java.time.Duration.ofMillis(10));
        assertThatThrownBy(() -> parse("--trending.half-life", "soon"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(
                        "Invalid value for option '--trending.half-life': 'soon' is not a duration: use for example 500ms, 5s, 1m, 1h, 1d");
    }

    @Test
    void aNewInstanceHoldsTheDefaultsOfTheAnnotations() {
        JobOptions options = new JobOptions();
        assertThat(options.checkpointInterval)
                .as("not given: the cluster's, else 10 s")
                .isNull();
        assertThat(options.trendingHalfLife).isEqualTo(java.time.Duration.ofHours(1));
        JobSettings o = parse();
        assertThat(o.isGiven("--checkpoint.interval")).isFalse();
        assertThat(o.checkpointInterval).isEqualTo(java.time.Duration.ofSeconds(10));
        assertThat(o.trendingHalfLife).isEqualTo(java.time.Duration.ofHours(1));
        assertThat(o.kafkaTransactionTimeout).isEqualTo(java.time.Duration.ofMinutes(10));
        assertThat(o.kafkaTopic).isEqualTo("counter-events");
        assertThat(o.redis.keyPrefix()).isEqualTo("rc");
        assertThat(o.kafkaStartingOffsets).isEqualTo(JobSettings.StartingOffsets.committed);
        assertThat(o.topk).isEqualTo(100);
        assertThat(o.rollupsResolutions).isEqualTo("1m,1h,1d");
        assertThat(o.dlq).isEqualTo("rollcount-dlq.jsonl");
    }

    @Test
    void theKeyPrefixRuleHasOneMessage() {
        for (String bad : new String[] {"", " ", "a{b", "a}b"}) {
            assertThatThrownBy(() -> parse("--redis.key-prefix", bad))
                    .hasMessage("--redis.key-prefix must be non-empty and free of '{' and '}'");
        }
    }

    @Test
    void counterCacheIsAutoByDefaultOrASizeOfAtLeastOneMebibyte() {
        assertThat(parse().counterCacheBytes()).isEqualTo(io.rollcount.job.ops.CountPerCounter.AUTO_CACHE_BYTES);
        assertThat(parse("--counter-cache", "AUTO").counterCacheBytes())
                .isEqualTo(io.rollcount.job.ops.CountPerCounter.AUTO_CACHE_BYTES);
        assertThat(parse("--counter-cache", "64mb").counterCacheBytes()).isEqualTo(64L << 20);
        assertThat(parse("--counter-cache", "1g").counterCacheBytes()).isEqualTo(1L << 30);
        assertThatThrownBy(() -> parse("--counter-cache", "lots"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--counter-cache must be a size such as 64mb or 'auto', not 'lots'");
        assertThatThrownBy(() -> parse("--counter-cache", "512kb"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--counter-cache must be at least 1mb, not '512kb'");
        assertThatThrownBy(() -> parse("--counter-cache", "0"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--counter-cache must be at least 1mb, not '0'");
    }

    @Test
    void madeFromAnArgumentListTheyKnowWhichOptionsWereGiven() {
        JobSettings s = JobSettings.of("--input", "in.jsonl", "--topk", "100", "--fresh");
        assertThat(s.source).isEqualTo(JobSettings.SourceKind.files);
        assertThat(s.input).isEqualTo("in.jsonl");
        assertThat(s.fresh).isTrue();
        assertThat(s.isGiven("--input")).isTrue();
        assertThat(s.isGiven("--fresh")).isTrue();
        assertThat(s.isGiven("--topk")).as("given, though at its default").isTrue();
        assertThat(s.isGiven("--trending.half-life")).as("defaulted").isFalse();
        assertThat(s.isGiven("--redis.key-prefix"))
                .as("defaulted, an option of RedisOptions")
                .isFalse();
        assertThat(s.trendingHalfLife).isEqualTo(java.time.Duration.ofHours(1));
        assertThatThrownBy(() -> s.isGiven("--no-such-option"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("no option of the job is named --no-such-option");
    }

    @Test
    void theCommandLinesParseResultTellsWhatWasGiven() {
        JobOptions options = new JobOptions();
        JobSettings s = options.toSettings(new picocli.CommandLine(options)
                .parseArgs("--input", "in.jsonl", "--checkpoint.interval", "3s", "--redis.key-prefix", "p"));
        assertThat(s.isGiven("--checkpoint.interval")).isTrue();
        assertThat(s.checkpointInterval).isEqualTo(java.time.Duration.ofSeconds(3));
        assertThat(s.isGiven("--redis.key-prefix")).isTrue();
        assertThat(s.redis.keyPrefix()).isEqualTo("p");
        assertThat(s.isGiven("--parallelism")).isFalse();
        assertThat(s.parallelism).isNull();
    }

    /** A command that takes the job's options as a mixin, beside one of its own (as {@code ./rollcount run} does). */
    @picocli.CommandLine.Command(name = "run")
    static final class RunLike {
        @picocli.CommandLine.Mixin
        JobOptions options = new JobOptions();

        @picocli.CommandLine.Option(names = "--resume")
        String resume;
    }

    @Test
    void asAMixinTheCommandsOwnOptionsAreNotTheJobs() {
        RunLike run = new RunLike();
        picocli.CommandLine.ParseResult parsed = new picocli.CommandLine(run)
                .parseArgs("--resume", "chk-3", "--input", "in.jsonl", "--checkpoint.interval", "4s");
        JobSettings s = run.options.toSettings(parsed);
        assertThat(run.resume).isEqualTo("chk-3");
        assertThat(s.isGiven("--checkpoint.interval")).isTrue();
        assertThat(s.checkpointInterval).isEqualTo(java.time.Duration.ofSeconds(4));
        assertThat(s.toString()).isEqualTo("JobSettings[--input in.jsonl --checkpoint.interval PT4S]");
        assertThatThrownBy(() -> s.isGiven("--resume")).isInstanceOf(IllegalArgumentException.class);
        assertThat(s.toBuilder().build().checkpointInterval).isEqualTo(java.time.Duration.ofSeconds(4));
    }

    @Test
    void aVariantIsACopyAndTheOriginalStaysAsItWas() {
        JobSettings original = JobSettings.of("--input", "in.jsonl", "--checkpoint.interval", "2s", "--fresh");
        JobSettings variant = original.toBuilder()
                .set("--topk", 7)
                .set("--allowed-lateness", java.time.Duration.ofMillis(1500))
                .set("--fresh", false)
                .set("--bounded", true)
                .build();
        assertThat(variant).isNotSameAs(original);
        assertThat(original.toBuilder().set("--input", "-").build().input)
                .as("a value that begins with a dash")
                .isEqualTo("-");
        assertThat(variant.topk).isEqualTo(7);
        assertThat(variant.allowedLateness).isEqualTo(java.time.Duration.ofMillis(1500));
        assertThat(variant.fresh).isFalse();
        assertThat(variant.isGiven("--fresh")).isFalse();
        assertThat(variant.bounded).isTrue();
        assertThat(variant.isGiven("--topk")).isTrue();
        assertThat(variant.input).as("kept from the original").isEqualTo("in.jsonl");
        assertThat(variant.isGiven("--checkpoint.interval")).isTrue();
        assertThat(variant.checkpointInterval).isEqualTo(java.time.Duration.ofSeconds(2));
        assertThat(original.topk).isEqualTo(100);
        assertThat(original.isGiven("--topk")).isFalse();
        assertThat(original.allowedLateness).isEqualTo(java.time.Duration.ofMinutes(1));
        assertThat(original.fresh).isTrue();
        assertThat(original.bounded).isFalse();
        assertThat(JobSettings.class).isFinal();
        for (java.lang.reflect.Field f : JobSettings.class.getDeclaredFields()) {
            if (java.lang.reflect.Modifier.isStatic(f.getModifiers())) continue;
            assertThat(java.lang.reflect.Modifier.isFinal(f.getModifiers()))
                    .as(f.getName() + " is final")
                    .isTrue();
        }
    }

    @Test
    void aCopyIsCheckedAsItIsMadeNamingTheOption() {
        JobSettings valid = parse();
        assertThatThrownBy(() -> valid.toBuilder().set("--topk", 0).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--topk must be between 1 and 10000");
        assertThatThrownBy(() -> valid.toBuilder().set("--input", null).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--kafka.bootstrap is required with --source kafka (or give --input PATH to read files)");
        assertThatThrownBy(() -> valid.toBuilder().set("--topk", "many").build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Invalid value for option '--topk': 'many' is not an int");
        assertThatThrownBy(() -> JobSettings.builder().set("--top-k", 5))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("no option of the job is named --top-k");
    }

    @Test
    void theyTravelWithTheJobGraphAndSayNoPassword() throws Exception {
        JobSettings s = parse("--redis", "redis://writer:secret@h:1", "--topk", "5");
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        try (java.io.ObjectOutputStream out = new java.io.ObjectOutputStream(bytes)) {
            out.writeObject(s);
        }
        JobSettings back;
        try (java.io.ObjectInputStream in =
                new java.io.ObjectInputStream(new java.io.ByteArrayInputStream(bytes.toByteArray()))) {
            back = (JobSettings) in.readObject();
        }
        assertThat(back.topk).isEqualTo(5);
        assertThat(back.isGiven("--topk")).isTrue();
        assertThat(back.redis).isEqualTo(s.redis);
        assertThat(s.toString()).contains("--topk 5").doesNotContain("secret");
    }
}
