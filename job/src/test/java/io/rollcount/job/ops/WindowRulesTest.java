package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.policy.NamespacePolicy;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.policy.PoliciesFile;
import org.junit.jupiter.api.Test;

/**
 * The window rules as pure functions of a counter's state: when a window closes, when its close shows, when it
 * is final, and when the counter is next due, with every resolution rolled up, with none, and under policies.
 */
class WindowRulesTest {
    private static final long T0 = 1_764_028_800_000L; // a whole day (UTC)
    private static final long LATENESS = 60_000;
    private static final long MIN = 60_000;
    private static final long HOUR = 3_600_000;
    private static final long DAY = 86_400_000;

    private static final NamespacePolicy DEFAULTS = Policies.none(100, DAY).defaults();
    private static final NamespacePolicy NO_TOPK = Policies.none(0, DAY).defaults();
    private static final WindowRules ALL = new WindowRules(LATENESS, CountPerCounter.ALL_RESOLUTIONS);
    private static final WindowRules NONE = new WindowRules(LATENESS, 0);

    /** A counter with one window of each resolution holding {@code t}, as an event at {@code t} leaves it. */
    private static CounterState touchedAt(long t) {
        CounterState s = new CounterState();
        for (Resolution r : Resolution.all()) {
            int i = s.add(r, r.windowStart(t));
            s.sum[i] = 1;
            s.events[i] = 1;
            s.set(i, CounterState.DIRTY);
        }
        s.total = 1;
        s.totalEvents = 1;
        s.totalDirty = true;
        return s;
    }

    private static int slot(CounterState s, Resolution r) {
        for (int i = 0; i < s.size; i++) if (s.resolution(i) == r) return i;
        throw new AssertionError("no " + r + " window");
    }

    @Test
    void aWindowClosesAtItsLastMillisecondOnce() {
        CounterState s = touchedAt(T0 + 1_000);
        int m1 = slot(s, Resolution.M1);
        assertThat(WindowRules.closesBy(s, m1, T0 + MIN - 2)).isFalse();
        assertThat(WindowRules.closesBy(s, m1, T0 + MIN - 1)).isTrue();
        s.set(m1, CounterState.CLOSED);
        assertThat(WindowRules.closesBy(s, m1, Long.MAX_VALUE))
                .as("closed already")
                .isFalse();
    }

    @Test
    void aCloseShowsWhereItRollsUpOrEntersTheWindowTopK() {
        // every resolution rolls up: every close shows
        for (Resolution r : Resolution.all())
            assertThat(ALL.closeShows(r, DEFAULTS)).as(r.label).isTrue();
        // no rollups: the window top-K of 1m, 1h and 1d only
        assertThat(NONE.closeShows(Resolution.S5, DEFAULTS)).isFalse();
        assertThat(NONE.closeShows(Resolution.M1, DEFAULTS)).isTrue();
        assertThat(NONE.closeShows(Resolution.M5, DEFAULTS)).isFalse();
        assertThat(NONE.closeShows(Resolution.H1, DEFAULTS)).isTrue();
        assertThat(NONE.closeShows(Resolution.D1, DEFAULTS)).isTrue();
        // neither: no close shows
        for (Resolution r : Resolution.all())
            assertThat(NONE.closeShows(r, NO_TOPK)).as(r.label).isFalse();
        // a resolution the namespace does not keep shows nothing, even where it would roll up
        NamespacePolicy post = PoliciesFile.parse("t.yaml", "- {match: post, resolutions: [1m]}\n", 100, DAY)
                .forCounter("post:1:likes");
        assertThat(ALL.closeShows(Resolution.M1, post)).isTrue();
        assertThat(ALL.closeShows(Resolution.H1, post)).isFalse();
        assertThat(ALL.rollsUp(Resolution.S5)).isTrue();
        assertThat(new WindowRules(LATENESS, 1 << Resolution.H1.ordinal()).rollsUp(Resolution.M1))
                .isFalse();
    }

    @Test
    void aWindowIsFinalPastItsEndPlusTheLatenessOnceItsCloseThatShowsWasDone() {
        CounterState s = touchedAt(T0 + 1_000);
        int m1 = slot(s, Resolution.M1);
        long end = T0 + MIN;
        assertThat(NONE.isFinal(s, m1, end + LATENESS - 1, DEFAULTS)).isFalse();
        // its close shows (window top-K) and was not done: not final, however late
        assertThat(NONE.isFinal(s, m1, end + LATENESS, DEFAULTS)).isFalse();
        s.set(m1, CounterState.CLOSED);
        assertThat(NONE.isFinal(s, m1, end + LATENESS, DEFAULTS)).isTrue();
        // a 5 s window whose close shows nothing: final without a close
        int s5 = slot(s, Resolution.S5);
        assertThat(NONE.isFinal(s, s5, T0 + 5_000 + LATENESS - 1, DEFAULTS)).isFalse();
        assertThat(NONE.isFinal(s, s5, T0 + 5_000 + LATENESS, DEFAULTS)).isTrue();
        assertThat(ALL.isFinal(s, s5, T0 + 5_000 + LATENESS, DEFAULTS))
                .as("rolled up: its close must be done first")
                .isFalse();
        // final with a change not emitted (a late event's) vs. emitted
        assertThat(NONE.finalWithUnemitted(s, s5, Long.MAX_VALUE - 1, DEFAULTS)).isTrue();
        s.clear(s5, CounterState.DIRTY);
        assertThat(NONE.finalWithUnemitted(s, s5, Long.MAX_VALUE - 1, DEFAULTS)).isFalse();
        s.set(s5, CounterState.REVISE);
        assertThat(NONE.finalWithUnemitted(s, s5, Long.MAX_VALUE - 1, DEFAULTS)).isTrue();
    }

    @Test
    void aCounterIsNextDueAtItsFirstCloseThatShowsOrBeforeItToDropWhatWouldWaitLongerThanAnHour() {
        CounterState s = touchedAt(T0 + 1_000);
        // everything rolls up: the 5 s close first
        assertThat(ALL.nextDue(s, DEFAULTS)).isEqualTo(T0 + 5_000 - 1);
        // no rollups: the 1m close (window top-K) first; the 5 s window's lateness ends after it
        assertThat(NONE.nextDue(s, DEFAULTS)).isEqualTo(T0 + MIN - 1);
        // 1m closed: the 1h close next; the 5 s, 1m and 5m windows become final before it and wait for that visit
        s.set(slot(s, Resolution.M1), CounterState.CLOSED);
        assertThat(NONE.nextDue(s, DEFAULTS)).isEqualTo(T0 + HOUR - 1);
        // without the 1h window the next close (1d) is more than an hour after the first of them is final: a
        // visit of their own first, at the last end of lateness (the 5m window's)
        CounterState noHour = s.copy();
        noHour.remove(slot(noHour, Resolution.H1));
        assertThat(NONE.nextDue(noHour, DEFAULTS)).isEqualTo(T0 + 5 * MIN + LATENESS);
        // those dropped: the 1h close
        s.remove(slot(s, Resolution.S5));
        s.remove(slot(s, Resolution.M1));
        s.remove(slot(s, Resolution.M5));
        assertThat(NONE.nextDue(s, DEFAULTS)).isEqualTo(T0 + HOUR - 1);
        // 1h closed: its end of lateness comes before the 1d close
        s.set(slot(s, Resolution.H1), CounterState.CLOSED);
        assertThat(NONE.nextDue(s, DEFAULTS)).isEqualTo(T0 + HOUR + LATENESS);
        s.remove(slot(s, Resolution.H1));
        assertThat(NONE.nextDue(s, DEFAULTS)).isEqualTo(T0 + DAY - 1);
        // nothing shows any more: the end of the 1d window's lateness, then never
        s.set(slot(s, Resolution.D1), CounterState.CLOSED);
        assertThat(NONE.nextDue(s, DEFAULTS)).isEqualTo(T0 + DAY + LATENESS);
        s.remove(slot(s, Resolution.D1));
        assertThat(NONE.nextDue(s, DEFAULTS)).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void withoutAnyCloseThatShowsACounterIsDueOnceItsLastWindowIsFinal() {
        CounterState s = touchedAt(T0 + 1_000);
        assertThat(NONE.nextDue(s, NO_TOPK)).isEqualTo(T0 + DAY + LATENESS);
    }

    @Test
    void aChangeAfterTheCloseIsARevisionOnlyWhereItRollsUp() {
        CounterState s = touchedAt(T0);
        int h1 = slot(s, Resolution.H1);
        assertThat(ALL.revisesAfterClose(s, h1)).as("open").isFalse();
        s.set(h1, CounterState.CLOSED);
        assertThat(ALL.revisesAfterClose(s, h1)).isTrue();
        assertThat(NONE.revisesAfterClose(s, h1)).isFalse();
    }

    @Test
    void unemittedChangesAreTheTotalsOrAWindowsDirtyOrRevisionFlags() {
        CounterState s = touchedAt(T0);
        assertThat(WindowRules.hasUnemitted(s)).isTrue();
        s.totalDirty = false;
        for (int i = 0; i < s.size; i++) s.clear(i, CounterState.DIRTY);
        assertThat(WindowRules.hasUnemitted(s)).isFalse();
        s.set(slot(s, Resolution.D1), CounterState.REVISE);
        assertThat(WindowRules.hasUnemitted(s)).isTrue();
    }
}
