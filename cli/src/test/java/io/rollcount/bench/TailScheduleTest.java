package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.model.Resolution;
import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

/**
 * The tail scenario's pure parts: its event schedule (events per counter per hour, hours covered, windows of
 * every resolution closing while the events are read), the checkpoint it reports, the Redis room and its
 * RESULT line.
 */
class TailScheduleTest {
    private static final long HOUR = 3_600_000;
    /** 2026-12-04 00:00:00 UTC. */
    private static final long MIDNIGHT = 1_796_342_400_000L;

    @Test
    void anAverageOfTheGivenEventsPerCounterPerHourOverAtLeastTheGivenHours() {
        TailSchedule s = new TailSchedule(20_000, 1.5, 2, 2);
        BenchEvents ev = s.events(1, MIDNIGHT + 17 * 60_000);
        assertThat(ev.workload).isEqualTo(Workload.zipf);
        assertThat(ev.counters).isEqualTo(20_000);
        assertThat(ev.count).isEqualTo(s.events()).isEqualTo(60_004);
        double hours = TailSchedule.hoursCovered(ev);
        assertThat(hours).isGreaterThanOrEqualTo(2.0).isLessThan(2.001);
        assertThat(ev.count / (double) ev.counters / hours).isCloseTo(1.5, within(0.001));
        // event time advances steadily: a tenth of the events per tenth of the span, in each part
        long first = TailSchedule.firstTs(ev);
        assertThat(ev.baseTs(ev.partSize() / 10) - first).isCloseTo(12 * 60_000L, within(1_000L));
        assertThat(ev.baseTs(ev.partSize() + ev.partSize() / 10) - first).isCloseTo(12 * 60_000L, within(1_000L));
        // the last event a minute before the wall clock at the start: none in the future
        assertThat(TailSchedule.lastTs(ev))
                .isLessThanOrEqualTo(MIDNIGHT + 17 * 60_000 - TailSchedule.END_MARGIN_MILLIS);
    }

    @Test
    void largerRatesAndSpansScaleTheEvents() {
        assertThat(new TailSchedule(1_000_000, 1.5, 2, 2).events()).isEqualTo(3_000_004);
        assertThat(new TailSchedule(16_000_000, 1.5, 2, 2).events()).isEqualTo(48_000_004);
        TailSchedule s = new TailSchedule(4_000, 2, 3, 2);
        BenchEvents ev = s.events(1, MIDNIGHT);
        assertThat(s.eventsPerSecond()).isCloseTo(4_000 * 2 / 3600.0, within(1e-9));
        assertThat(TailSchedule.hoursCovered(ev)).isGreaterThanOrEqualTo(3.0);
        assertThat(ev.count / 4_000.0 / TailSchedule.hoursCovered(ev)).isCloseTo(2, within(0.01));
    }

    @Test
    void windowsOfEveryResolutionUpToTheHourCloseWhileTheEventsAreRead() {
        TailSchedule s = new TailSchedule(20_000, 1.5, 2, 2);
        // whatever the minute the run starts at, the first hour's boundary lies inside the span
        for (long minute = 0; minute < 60; minute += 7) {
            BenchEvents ev = s.events(1, MIDNIGHT + 5 * HOUR + minute * 60_000 + 13_000);
            for (Resolution r : List.of(Resolution.S5, Resolution.M1, Resolution.M5, Resolution.H1))
                assertThat(TailSchedule.closesDuringRun(r, ev))
                        .as(r.label + " at minute " + minute)
                        .isTrue();
            long boundary = TailSchedule.firstHourBoundary(ev);
            assertThat(boundary % HOUR).isZero();
            assertThat(boundary).isGreaterThan(TailSchedule.firstTs(ev));
            assertThat(boundary).isLessThanOrEqualTo(TailSchedule.lastTs(ev) - HOUR);
        }
        // a day's window does not close in two hours that do not cross midnight
        BenchEvents morning = s.events(1, MIDNIGHT + 9 * HOUR);
        assertThat(TailSchedule.closesDuringRun(Resolution.D1, morning)).isFalse();
    }

    @Test
    void refusesFewerThanTwoHoursAndNoEvents() {
        assertThatThrownBy(() -> new TailSchedule(20_000, 1.5, 1.5, 2)).hasMessageContaining("--hours");
        assertThatThrownBy(() -> new TailSchedule(20_000, 0, 2, 2)).hasMessageContaining("--events-per-counter-hour");
        assertThatThrownBy(() -> new TailSchedule(999, 1.5, 2, 2)).hasMessageContaining("counters");
    }

    @Test
    void theCheckpointReportedIsTheLongestAfterTheFirstHoursBoundaryCompletedWhileTheEventsWereRead() {
        BenchEvents ev = new TailSchedule(20_000, 1.5, 2, 2).events(1, MIDNIGHT + 30 * 60_000);
        long boundary = TailSchedule.firstHourBoundary(ev);
        TailBench.EventTimeTrack track = new TailBench.EventTimeTrack(ev);
        // wall clock 1,000,000 + k seconds: event time 1 minute per second from the first event
        for (int k = 0; k <= 120; k++) track.record(1_000_000 + k * 1_000L, TailSchedule.firstTs(ev) + k * 60_000L);
        // then the end of input drains: the sources stay at their last event until the sinks see the end
        for (int k = 121; k <= 140; k++) track.record(1_000_000 + k * 1_000L, TailSchedule.firstTs(ev) + 120 * 60_000L);
        assertThat(track.readEndMillis()).isEqualTo(1_120_000L);
        long passed = track.wallTimeAt(boundary);
        assertThat(passed).isBetween(1_000_000L, 1_120_000L);
        List<BenchCluster.Checkpoint> checkpoints = List.of(
                new BenchCluster.Checkpoint(1, passed - 5_000, 9_000, 10, 10, ""), // longest, before the boundary
                new BenchCluster.Checkpoint(2, passed + 1_000, 4_000, 20, 12, ""),
                new BenchCluster.Checkpoint(3, passed + 6_000, 3_000, 30, 11, ""),
                new BenchCluster.Checkpoint(4, 1_130_000, 20_000, 40, 40, ""), // after the end of input
                new BenchCluster.Checkpoint(5, 1_118_000, 15_000, 50, 50, "")); // held by the end of input's drain
        BenchCluster.Checkpoint c = track.longestAfterBoundary(checkpoints);
        assertThat(c.id()).isEqualTo(2);
        assertThat(track.afterHour).isTrue();
        assertThat(track.describe(c)).contains("after the first hour's boundary #2: 4000 ms");
        // none after the boundary: the longest before the end of input, and the output says so
        BenchCluster.Checkpoint early = track.longestAfterBoundary(checkpoints.subList(0, 1));
        assertThat(early.id()).isEqualTo(1);
        assertThat(track.afterHour).isFalse();
        assertThat(track.describe(early)).contains("none after the first hour's boundary");
        // sources held at the boundary: their hold, not the next half-second sample, is when they passed it
        track.allHeldAt(passed - 300);
        BenchCluster.Checkpoint held = track.longestAfterBoundary(
                List.of(new BenchCluster.Checkpoint(6, passed - 200, 5_000, 60, 60, ""), checkpoints.get(2)));
        assertThat(held.id()).isEqualTo(6);
        assertThat(track.afterHour).isTrue();
    }

    @Test
    void theResultLineHasEveryFieldInOrder() {
        TailFigures written =
                new TailFigures(1_000_000, 3_000_004, 41.234, 0.8765, 1.25, 12_345, 98_765_432, 6.5, 812.4, true);
        assertThat(written.resultLine())
                .isEqualTo(
                        "RESULT bench.tail counters=1000000 events=3000004 job_us=41.23 rocksdb_reads_per_event=0.877"
                                + " visits_per_counter_hour=1.250 checkpoint_ms=12345 checkpoint_bytes=98765432 redis_us=6.50"
                                + " redis_bytes_per_counter=812 redis=written");
        TailFigures discarded = new TailFigures(16_000_000, 48_000_004, 90, 2, 1.5, 200_000, 1L << 32, 0, -1, false);
        assertThat(discarded.resultLine())
                .endsWith(" checkpoint_bytes=4294967296 redis_us=-1 redis_bytes_per_counter=-1 redis=discarded");
    }

    @Test
    void redisIsWrittenWhereItsKeysTakeAtMostHalfTheRoom() {
        RedisInfo unlimited = RedisInfo.parse(
                "# Memory\r\nused_memory:1000000000\r\ntotal_system_memory:24000000000\r\nmaxmemory:0\r\n");
        RedisRoom local = RedisRoom.of(unlimited, true, 20_000_000_000L);
        assertThat(local.roomBytes()).isEqualTo(20_000_000_000L);
        assertThat(local.fits(4_000_000, 1_400)).isTrue(); // 5.6 GB of 10 GB
        assertThat(local.fits(16_000_000, 1_400)).isFalse(); // 22.4 GB
        assertThat(local.describe(16_000_000, 1_400)).contains("22.4 GB", "MemAvailable", "discarded");
        assertThat(RedisRoom.of(unlimited, false, 20_000_000_000L).roomBytes()).isEqualTo(23_000_000_000L);
        RedisInfo limited =
                RedisInfo.parse("used_memory:1000000000\ntotal_system_memory:24000000000\nmaxmemory:5000000000\n");
        RedisRoom capped = RedisRoom.of(limited, true, 20_000_000_000L);
        assertThat(capped.roomBytes()).isEqualTo(4_000_000_000L);
        assertThat(capped.fits(1_000_000, 1_500)).isTrue();
        assertThat(capped.fits(4_000_000, 1_500)).isFalse();
    }

    @Test
    void optionsOfTheOtherScenarioAndTooFewHoursAreUsageErrors() {
        CommandLine cli = new CommandLine(new BenchCommand());
        cli.setErr(new java.io.PrintWriter(new java.io.StringWriter()));
        assertThat(cli.execute("growth", "--scenario", "tail", "--target", "1G"))
                .isEqualTo(2);
        assertThat(cli.execute("growth", "--scenario", "tail", "--hours", "1")).isEqualTo(2);
        assertThat(cli.execute("growth", "--events-per-counter-hour", "2")).isEqualTo(2);
    }
}
