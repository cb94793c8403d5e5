package io.rollcount.job.policy;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.util.Durations;
import java.io.Serializable;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What the job keeps for the counters of one rule of {@code --policies} (contract section 6), every field
 * resolved: what the rule leaves out has the job's default. Immutable.
 */
public final class NamespacePolicy implements Serializable {
    private static final long serialVersionUID = 1L;

    /** The bit of {@code u:all} in {@link #uniquesMask}, beside the bits of {@link Resolution#ordinal()}. */
    public static final int UNIQUES_ALL = 1 << Resolution.all().length;
    /** Every resolution, a bit per {@link Resolution#ordinal()}. */
    public static final int ALL_RESOLUTIONS = (1 << Resolution.all().length) - 1;
    /** The default uniques: 1h, 1d and all. */
    public static final int DEFAULT_UNIQUES =
            (1 << Resolution.H1.ordinal()) | (1 << Resolution.D1.ordinal()) | UNIQUES_ALL;

    /** The rule's match, or null for the defaults (counters no rule matches). */
    final String match;
    /** The rule's position in the file, from 1; 0 for the defaults. */
    final int position;

    final int resolutionMask;
    private final long[] retentionMillis;
    final int uniquesMask;
    final boolean trending;
    /** Window top-K length; 0: none. */
    final int topk;
    /** The event_id horizon; 0: no deduplication. */
    final long dedupMillis;

    NamespacePolicy(
            String match,
            int position,
            int resolutionMask,
            long[] retentionMillis,
            int uniquesMask,
            boolean trending,
            int topk,
            long dedupMillis) {
        this.match = match;
        this.position = position;
        this.resolutionMask = resolutionMask;
        this.retentionMillis = retentionMillis.clone();
        this.uniquesMask = uniquesMask;
        this.trending = trending;
        this.topk = topk;
        this.dedupMillis = dedupMillis;
    }

    /** The job's defaults: every resolution, the retentions of contract section 3, uniques 1h/1d/all, trending on. */
    static NamespacePolicy defaults(int topk, long dedupMillis) {
        long[] retention = new long[Resolution.all().length];
        for (Resolution r : Resolution.all()) retention[r.ordinal()] = r.ttlMillis;
        return new NamespacePolicy(null, 0, ALL_RESOLUTIONS, retention, DEFAULT_UNIQUES, true, topk, dedupMillis);
    }

    /** Whether window sums of {@code r} are kept and written. */
    public boolean keeps(Resolution r) {
        return (resolutionMask & (1 << r.ordinal())) != 0;
    }

    /** The resolutions kept, a bit per {@link Resolution#ordinal()}. */
    public int resolutionMask() {
        return resolutionMask;
    }

    /** The retention of {@code r}'s window keys after the window's end, ms. */
    public long retentionMillis(Resolution r) {
        return retentionMillis[r.ordinal()];
    }

    /** When the keys of the window of {@code r} that starts at {@code start} expire: its end plus the retention (epoch ms). */
    public long expireAtMillis(Resolution r, long start) {
        return start + r.sizeMillis + retentionMillis[r.ordinal()];
    }

    /** Whether the unique users of {@code r}'s windows are written ({@code u:<res>:<start>}); only 1h and 1d can be. */
    public boolean uniques(Resolution r) {
        return (uniquesMask & (1 << r.ordinal())) != 0;
    }

    /** Whether {@code u:all} is written. */
    public boolean uniquesAll() {
        return (uniquesMask & UNIQUES_ALL) != 0;
    }

    /** Whether any unique-users key is written. */
    public boolean anyUniques() {
        return uniquesMask != 0;
    }

    /** Whether the counters feed trending lists. */
    public boolean trending() {
        return trending;
    }

    /** Window top-K length of the namespace's lists; 0: the counters are in no window top-K list. */
    public int topk() {
        return topk;
    }

    /** Whether events with an event_id are deduplicated. */
    public boolean dedup() {
        return dedupMillis > 0;
    }

    /** The event_id horizon, ms; 0 when {@link #dedup} is off. */
    public long dedupMillis() {
        return dedupMillis;
    }

    /** The rule's match, or null for the defaults. */
    public String match() {
        return match;
    }

    /** One line, every field: {@code ad*: resolutions 1m,1h,1d; retention 1m 2d, ...; uniques off; trending on; topk 100; dedup 7d}. */
    public String describe() {
        List<String> res = new ArrayList<>();
        List<String> retention = new ArrayList<>();
        List<String> uniques = new ArrayList<>();
        for (Resolution r : Resolution.all()) {
            if (keeps(r)) res.add(r.label);
            if (keeps(r) || uniques(r))
                retention.add(r.label + " " + Durations.format(Duration.ofMillis(retentionMillis(r))));
            if (uniques(r)) uniques.add(r.label);
        }
        if (uniquesAll()) uniques.add("all");
        return (match == null ? "(no rule matches: defaults)" : "rule " + position + " '" + match + "'")
                + ": resolutions " + (res.isEmpty() ? "none" : String.join(",", res))
                + "; retention " + (retention.isEmpty() ? "-" : String.join(", ", retention))
                + "; uniques " + (uniques.isEmpty() ? "off" : String.join(",", uniques))
                + "; trending " + (trending ? "on" : "off")
                + "; topk " + (topk == 0 ? "off" : String.valueOf(topk))
                + "; dedup " + (dedupMillis == 0 ? "off" : Durations.format(Duration.ofMillis(dedupMillis)));
    }

    @Override
    public String toString() {
        return describe();
    }
}
