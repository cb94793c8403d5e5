package io.rollcount.job.ops;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.policy.NamespacePolicy;
import java.io.Serializable;

/**
 * When a counter's windows show, close, become final and when the counter is next due, as pure functions of
 * its {@link CounterState}, its namespace's policy, the watermark, the allowed lateness and the resolutions
 * that roll up. {@link CountPerCounter} acts on them; nothing here changes a state.
 *
 * <ul>
 *   <li>A window <b>closes</b> when the watermark reaches its last millisecond ({@link #closesBy}).</li>
 *   <li>Its close <b>shows</b> outside the operator when its resolution is kept and the close makes a rollup
 *       or a window top-K entry ({@link #closeShows}); only then is the close a due time. Closing a 5 s or 5 m
 *       window by default changes nothing but a flag (its value was written while it was open).</li>
 *   <li>It is <b>final</b> when the watermark is past its end plus the allowed lateness and its close, if it
 *       shows, was done ({@link #isFinal}): no partial sum can come for it any more (upstream applies the
 *       lateness against a watermark never behind the operator's), and its state goes at the counter's next
 *       visit or new window.</li>
 *   <li>The counter is next <b>due</b> at the earliest close that shows ({@link #nextDue}). Windows that
 *       become final before it wait for that visit if it comes within {@link #DROP_WAIT_MILLIS} of the first
 *       of them becoming final; otherwise the counter is due before it, at the last of their ends of
 *       lateness, so that one visit drops them all. A counter touched once is visited at its 1m close, at its
 *       1h close (which drops its 5 s, 1m and 5m windows), at the end of its 1h window's lateness, and at its
 *       1d close and end of lateness.</li>
 * </ul>
 */
final class WindowRules implements Serializable {
    private static final long serialVersionUID = 1L;

    /**
     * The longest a final window waits in the counter's state for the visit of a close that shows, rather
     * than making a visit of its own: an hour, so the 5 s, 1m and 5m windows of an hour go at its 1h close.
     */
    static final long DROP_WAIT_MILLIS = 3_600_000;

    private final long latenessMillis;
    /** The resolutions whose closed windows and revisions roll up: a bit per {@link Resolution#ordinal()}. */
    private final int rollupMask;

    WindowRules(long latenessMillis, int rollupMask) {
        this.latenessMillis = latenessMillis;
        this.rollupMask = rollupMask;
    }

    /** Whether closed windows of {@code r}, and their revisions, go to the rollups. */
    boolean rollsUp(Resolution r) {
        return (rollupMask & (1 << r.ordinal())) != 0;
    }

    /** Whether a closed window of {@code r} goes to the window top-K of the counter's namespace. */
    static boolean topkOf(Resolution r, NamespacePolicy policy) {
        return (r == Resolution.M1 || r == Resolution.H1 || r == Resolution.D1) && policy.topk() > 0;
    }

    /** Whether closing a window of {@code r} shows outside the operator (a rollup, a window top-K entry). */
    boolean closeShows(Resolution r, NamespacePolicy policy) {
        return policy.keeps(r) && (rollsUp(r) || topkOf(r, policy));
    }

    /** Whether window {@code i}, not closed yet, closes by {@code watermark} (it reached the window's last ms). */
    static boolean closesBy(CounterState s, int i, long watermark) {
        return !s.has(i, CounterState.CLOSED) && watermark >= s.end(i) - 1;
    }

    /** Whether window {@code i} is past its end plus the lateness, and its close, if it shows, was done. */
    boolean isFinal(CounterState s, int i, long watermark, NamespacePolicy policy) {
        return watermark >= s.end(i) + latenessMillis
                && (s.has(i, CounterState.CLOSED) || !closeShows(s.resolution(i), policy));
    }

    /** Whether a window change of {@code r} after its close makes a new revision of its rollup. */
    boolean revisesAfterClose(CounterState s, int i) {
        return s.has(i, CounterState.CLOSED) && rollsUp(s.resolution(i));
    }

    /**
     * The counter's next due time (see the class comment); Long.MAX_VALUE without windows. A window final
     * before that visit leaves at the counter's next new window if that comes first.
     */
    long nextDue(CounterState s, NamespacePolicy policy) {
        long close = Long.MAX_VALUE;
        for (int i = 0; i < s.size; i++) {
            if (!s.has(i, CounterState.CLOSED) && closeShows(s.resolution(i), policy)) {
                close = Math.min(close, s.end(i) - 1);
            }
        }
        long firstDrop = Long.MAX_VALUE;
        long lastDrop = Long.MIN_VALUE;
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.CLOSED) || !closeShows(s.resolution(i), policy)) {
                long at = s.end(i) + latenessMillis;
                if (at <= close) {
                    firstDrop = Math.min(firstDrop, at);
                    lastDrop = Math.max(lastDrop, at);
                }
            }
        }
        if (lastDrop == Long.MIN_VALUE) return close;
        return close != Long.MAX_VALUE && close - firstDrop <= DROP_WAIT_MILLIS ? close : lastDrop;
    }

    /** Whether the counter has a change not emitted yet: its total, or a window changed or due a revision. */
    static boolean hasUnemitted(CounterState s) {
        if (s.totalDirty) return true;
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.DIRTY) || s.has(i, CounterState.REVISE)) return true;
        }
        return false;
    }

    /** Whether window {@code i} is final by {@code watermark} with a change not emitted yet (a late event's). */
    boolean finalWithUnemitted(CounterState s, int i, long watermark, NamespacePolicy policy) {
        return isFinal(s, i, watermark, policy) && (s.has(i, CounterState.DIRTY) || s.has(i, CounterState.REVISE));
    }
}
