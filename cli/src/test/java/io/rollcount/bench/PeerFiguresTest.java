package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The figures and RESULT fields of {@code bench peers}, and the order of its rounds. */
class PeerFiguresTest {
    private static String line(String name, String... fields) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        new BenchReport(new java.io.PrintStream(bytes, true, java.nio.charset.StandardCharsets.UTF_8))
                .result(name, fields);
        return bytes.toString(java.nio.charset.StandardCharsets.UTF_8).strip();
    }

    @Test
    void aVariantIsTheMedianOfItsRunsAndExactOnlyIfEveryRunWas() {
        PeerFigures.Variant v = PeerFigures.Variant.of(List.of(
                new PeerFigures.Run(1000, 20, 6, 1, 300, true),
                new PeerFigures.Run(3000, 10, 8, 3, 100, false),
                new PeerFigures.Run(2000, 30, 7, 2, 200, true)));
        assertThat(v.eps()).isEqualTo(2000);
        assertThat(v.jobUs()).isEqualTo(20);
        assertThat(v.allUs()).isEqualTo(20 + 7 + 2);
        assertThat(v.stateBytesPerCounter()).isEqualTo(200);
        assertThat(v.exact()).isFalse();
        assertThat(line("peers.ours-exact", PeerFigures.variantFields("zipf", 2_000_000, v)))
                .isEqualTo("RESULT peers.ours-exact workload=zipf events=2000000 eps=2000 job_us=20.00 redis_us=7.00"
                        + " broker_us=2.00 all_us=29.00 state_bytes_per_counter=200 values_exact=false");
    }

    @Test
    void theRatiosAreAllInAndJobCpuOverOursExact() {
        PeerFigures.Variant sql = PeerFigures.Variant.of(List.of(new PeerFigures.Run(1, 40, 8, 2, 1, true)));
        PeerFigures.Variant exact = PeerFigures.Variant.of(List.of(new PeerFigures.Run(1, 16, 8, 1, 1, true)));
        PeerFigures.Variant full = PeerFigures.Variant.of(List.of(new PeerFigures.Run(1, 20, 10, 1.5, 1, true)));
        assertThat(line("peers.ratio", PeerFigures.ratioFields("viral", sql, exact, full)))
                .isEqualTo("RESULT peers.ratio workload=viral sql_vs_ours_exact=2.00 ours_full_vs_exact=1.26"
                        + " job_sql_vs_ours_exact=2.50 sql_vs_ours_exact_by_round=2.00"
                        + " ours_full_vs_exact_by_round=1.26");
    }

    /** A slower machine in round two slows both variants of that round: the medians mix rounds, the rounds do not. */
    @Test
    void theRatiosRoundByRoundPairTheRunsOfEachRound() {
        PeerFigures.Variant sql = PeerFigures.Variant.of(
                List.of(new PeerFigures.Run(1, 30, 0, 0, 1, true), new PeerFigures.Run(1, 60, 0, 0, 1, true)));
        PeerFigures.Variant exact = PeerFigures.Variant.of(
                List.of(new PeerFigures.Run(1, 10, 0, 0, 1, true), new PeerFigures.Run(1, 20, 0, 0, 1, true)));
        PeerFigures.Variant full = PeerFigures.Variant.of(
                List.of(new PeerFigures.Run(1, 12, 0, 0, 1, true), new PeerFigures.Run(1, 26, 0, 0, 1, true)));
        assertThat(line("peers.ratio", PeerFigures.ratioFields("zipf", sql, exact, full)))
                .endsWith("sql_vs_ours_exact_by_round=3.00,3.00 ours_full_vs_exact_by_round=1.20,1.30");
    }

    @Test
    void eachRoundRotatesTheOrderOfTheVariants() {
        assertThat(PeersBench.order(0)).containsExactly(PeersBench.Variant.values());
        assertThat(PeersBench.order(1))
                .containsExactly(
                        PeersBench.Variant.OURS_EXACT, PeersBench.Variant.OURS_FULL, PeersBench.Variant.SQL_EXACT);
        assertThat(PeersBench.order(3)).isEqualTo(PeersBench.order(0));
    }
}
