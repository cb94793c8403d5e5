package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.model.Resolution;
import org.junit.jupiter.api.Test;

/** {@code --rollups.resolutions}: default 1m, 1h, 1d; any comma list of the five labels; one clear refusal naming the option. */
class RollupResolutionsOptionTest {
    private static JobSettings parse(String... args) {
        return JobSettingsTest.parse(args);
    }

    private static int mask(Resolution... rs) {
        int m = 0;
        for (Resolution r : rs) m |= 1 << r.ordinal();
        return m;
    }

    @Test
    void defaultsToMinuteHourAndDay() {
        assertThat(parse().rollupResolutionMask()).isEqualTo(mask(Resolution.M1, Resolution.H1, Resolution.D1));
    }

    @Test
    void acceptsAnyListOfTheFiveLabels() {
        assertThat(parse("--rollups.resolutions", "5s,1m,5m,1h,1d").rollupResolutionMask())
                .isEqualTo(mask(Resolution.all()));
        assertThat(parse("--rollups.resolutions", "1d").rollupResolutionMask()).isEqualTo(mask(Resolution.D1));
        assertThat(parse("--rollups.resolutions", " 5m , 5s ").rollupResolutionMask())
                .isEqualTo(mask(Resolution.S5, Resolution.M5));
    }

    @Test
    void refusesBadListsNamingTheOption() {
        for (String bad : new String[] {"", "1w", "1m,,1h", "1m,1m", "1M", "5s;1m"}) {
            assertThatThrownBy(() -> parse("--rollups.resolutions", bad))
                    .as("'" + bad + "'")
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageStartingWith("--rollups.resolutions")
                    .satisfies(e -> assertThat(e.getMessage()).doesNotContain("\n"));
        }
    }
}
