package io.rollcount.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class FaultScheduleTest {
    private static Map<Fault, Integer> counts(List<Fault.Slot> s) {
        Map<Fault, Integer> m = new EnumMap<>(Fault.class);
        for (Fault.Slot slot : s) for (Fault f : slot.faults()) m.merge(f, 1, Integer::sum);
        return m;
    }

    @Test
    void twentyMinutesHoldEveryKindTwiceOneSlotEveryOneToThreeMinutesAndOnlyCompatiblePairs() {
        for (long seed = 1; seed <= 50; seed++) {
            List<Fault.Slot> s = Fault.schedule(seed, 1_200_000, 45_000, 60_000, 180_000, 60_000, 2);
            assertThat(counts(s))
                    .as("seed " + seed)
                    .hasSize(Fault.values().length)
                    .allSatisfy((f, n) -> assertThat(n).isGreaterThanOrEqualTo(2));
            for (int i = 0; i < s.size(); i++) {
                Fault.Slot slot = s.get(i);
                assertThat(slot.atMillis()).isBetween(45_000L, 1_140_000L);
                if (i > 0) assertThat(slot.atMillis() - s.get(i - 1).atMillis()).isBetween(60_000L, 180_000L);
                assertThat(slot.faults()).hasSizeBetween(1, 2);
                if (slot.faults().size() == 2)
                    assertThat(Fault.compatible(
                                    slot.faults().get(0), slot.faults().get(1)))
                            .as(slot.toString())
                            .isTrue();
                for (int k = 0; k < slot.faults().size(); k++) {
                    double secs = slot.seconds().get(k);
                    switch (slot.faults().get(k)) {
                        case REDIS_STOP -> assertThat(secs).isBetween(5.0, 40.0);
                        case REDIS_STALL -> assertThat(secs).isBetween(2.0, 10.0);
                        default -> {}
                    }
                }
            }
        }
    }

    @Test
    void theSameSeedGivesTheSameScheduleAndTheCiSizeHasEveryKind() {
        assertThat(Fault.schedule(17, 300_000, 45_000, 20_000, 35_000, 30_000, 1))
                .isEqualTo(Fault.schedule(17, 300_000, 45_000, 20_000, 35_000, 30_000, 1));
        assertThat(counts(Fault.schedule(17, 300_000, 45_000, 20_000, 35_000, 30_000, 1)))
                .hasSize(Fault.values().length);
        assertThat(Fault.compatible(Fault.JM_KILL, Fault.SAVEPOINT_RESCALE)).isFalse();
        assertThat(Fault.compatible(Fault.SAVEPOINT_RESCALE, Fault.REDIS_STOP)).isFalse();
    }

    @Test
    void tooShortARunIsRefused() {
        assertThatThrownBy(() -> Fault.schedule(1, 120_000, 45_000, 60_000, 180_000, 60_000, 2))
                .hasMessageContaining("do not fit");
    }

    @Test
    void badOptionsAreOneLineAndExitTwo() {
        for (String[] args : List.of(
                new String[] {"--duration", "soon"}, new String[] {"--duration", "1m"}, new String[] {"--rate", "0"})) {
            StringWriter err = new StringWriter();
            CommandLine cli = new CommandLine(new ChaosCommand());
            cli.setErr(new PrintWriter(err));
            assertThat(cli.execute(args)).as(String.join(" ", args)).isEqualTo(2);
            assertThat(err.toString().lines().findFirst().orElse("")).contains("--");
        }
        assertThat(ChaosCommand.parseDuration("20m").toSeconds()).isEqualTo(1200);
        assertThat(ChaosCommand.parseDuration("90s").toSeconds()).isEqualTo(90);
    }
}
