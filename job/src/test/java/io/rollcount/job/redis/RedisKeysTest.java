package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Resolution;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The key names of the contract's Redis layout, spelled out literally here, and the patterns that find them. */
class RedisKeysTest {
    private final RedisKeys keys = new RedisKeys("rc");
    private static final long START = 1_764_000_000_000L;

    @Test
    void namesEveryKeyOfTheLayout() {
        assertThat(keys.total("post:1:likes")).isEqualTo("rc:{post:1:likes}:total");
        assertThat(keys.window("post:1:likes", Resolution.M1, START)).isEqualTo("rc:{post:1:likes}:1m:1764000000");
        assertThat(keys.uniques("post:1:likes", Resolution.H1, START)).isEqualTo("rc:{post:1:likes}:u:1h:1764000000");
        assertThat(keys.uniquesAll("post:1:likes")).isEqualTo("rc:{post:1:likes}:u:all");
        assertThat(keys.top("post", Resolution.D1, START)).isEqualTo("rc:top:post:1d:1764000000");
        assertThat(keys.topHead("post", Resolution.D1)).isEqualTo("rc:top:post:1d:");
        assertThat(keys.trending("_all")).isEqualTo("rc:trending:_all");
        assertThat(keys.watermark()).isEqualTo("rc:meta:watermark");
        assertThat(keys.lease()).isEqualTo("rc:_lease");
        assertThat(keys.job()).isEqualTo("rc:_job:{rc:_lease}");
        assertThat(keys.jobBefore()).isEqualTo("rc:_job");
        assertThat(keys.mark()).isEqualTo("rc:_mark");
        assertThat(keys.lineage()).isEqualTo("rc:_lineage");
        assertThat(keys.layoutHeads()).containsExactly("rc:{", "rc:top:", "rc:trending:", "rc:meta:", "rc:_");
    }

    @Test
    void readsTheCounterOfACounterKeyAndNothingElse() {
        assertThat(keys.counterOf("rc:{post:1:likes}:total")).isEqualTo("post:1:likes");
        assertThat(keys.counterOf("rc:{a}:_v:5s:1764000000")).isEqualTo("a");
        assertThat(keys.counterOf("rc:top:post:1d:1764000000")).isNull();
        assertThat(keys.counterOf("rc:{unclosed")).isNull();
        assertThat(keys.counterOf("other:{a}:total")).isNull();
    }

    @Test
    void aCountIsATotalOrAWindowSum() {
        assertThat(List.of("rc:{a}:total", "rc:{a}:5s:1764000000", "rc:{a}:1d:-86400"))
                .allMatch(keys::isCount);
        assertThat(List.of(
                        "rc:{a}:u:all",
                        "rc:{a}:u:1h:1764000000",
                        "rc:{a}:_v:1m:1764000000",
                        "rc:{a}:_v:total",
                        "rc:{a}:7m:1764000000",
                        "rc:top:a:1h:1764000000",
                        "rc:meta:watermark",
                        "rc:{a}:1m:x"))
                .noneMatch(keys::isCount);
    }

    @Test
    void patternsMatchTheirKeysLiterallyWhateverThePrefix() {
        assertThat(keys.everyKeyPattern()).isEqualTo("rc:*");
        assertThat(keys.counterKeysPattern()).isEqualTo("rc:\\{*");
        assertThat(keys.topPattern("post", Resolution.H1)).isEqualTo("rc:top:post:1h:*");
        assertThat(new RedisKeys("a*b[1]").everyKeyPattern()).isEqualTo("a\\*b\\[1\\]:*");
    }
}
