package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/** {@code --trending.max-namespaces}: default 1000, 1 to 100,000, a refusal that names the option. */
class MaxNamespacesOptionTest {
    private static JobOptions parse(String... args) {
        JobOptions o = new JobOptions();
        new CommandLine(o).parseArgs(args);
        return o;
    }

    @Test
    void defaultsTo1000AndAcceptsTheRange() {
        assertThat(parse("--input", "x").validate().trendingMaxNamespaces).isEqualTo(1000);
        assertThat(parse("--input", "x", "--trending.max-namespaces", "1").validate().trendingMaxNamespaces)
                .isEqualTo(1);
        assertThat(parse("--input", "x", "--trending.max-namespaces", "100000").validate().trendingMaxNamespaces)
                .isEqualTo(100_000);
    }

    @Test
    void refusesValuesOutsideTheRangeNamingTheOption() {
        for (String bad : new String[] {"0", "-5", "100001"}) {
            assertThatThrownBy(() -> parse("--input", "x", "--trending.max-namespaces", bad)
                            .validate())
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("--trending.max-namespaces")
                    .hasMessageContaining(bad);
        }
    }
}
