package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** {@code --trending.max-namespaces}: default 1000, 1 to 100,000, a refusal that names the option. */
class MaxNamespacesOptionTest {
    private static JobSettings parse(String... args) {
        return JobSettings.of(args);
    }

    @Test
    void defaultsTo1000AndAcceptsTheRange() {
        assertThat(parse("--input", "x").trendingMaxNamespaces).isEqualTo(1000);
        assertThat(parse("--input", "x", "--trending.max-namespaces", "1").trendingMaxNamespaces)
                .isEqualTo(1);
        assertThat(parse("--input", "x", "--trending.max-namespaces", "100000").trendingMaxNamespaces)
                .isEqualTo(100_000);
    }

    @Test
    void refusesValuesOutsideTheRangeNamingTheOption() {
        for (String bad : new String[] {"0", "-5", "100001"}) {
            assertThatThrownBy(() -> parse("--input", "x", "--trending.max-namespaces", bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("--trending.max-namespaces")
                    .hasMessageContaining(bad);
        }
    }
}
