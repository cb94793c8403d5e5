package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** {@link RollcountJob#main} never exits the JVM: a bad option is a {@link RefusedStartException} of one line. */
class RollcountJobMainTest {
    @Test
    void aBadOptionIsARefusedStartOfOneLine() {
        assertThatThrownBy(() -> RollcountJob.main(new String[] {"--no-such-option"}))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessage("Unknown option: '--no-such-option' (--help lists the options)")
                .hasNoCause();
        assertThat(new RefusedStartException("x").getStackTrace()).isEmpty();
    }
}
