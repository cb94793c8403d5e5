package io.rollcount.chaos;

import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.model.Resolution;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The expected results of the stream a cluster test produced, computed independently of the job: every
 * valid record counts once per (counter, event_id); totals and window sums (Redis), and per window the
 * sum and number of counted events (the {@code counter-rollups} records).
 */
public final class ClusterTruth {
    /** A window of a counter: {@code res} label and start in epoch ms. */
    public record Window(String counter, String res, long start) {}

    public final Map<String, Map<String, Long>> byCounter = new HashMap<>();
    public final Map<Window, long[]> windows = new HashMap<>();
    public final Set<String> negativeCounters = new HashSet<>();
    /** The distinct users of every counter, for its {@code u:all} HyperLogLog. */
    public final Map<String, Set<String>> users = new HashMap<>();

    private final Set<String> seenIds = new HashSet<>();
    public long produced;
    public long counted;
    public long duplicates;

    public synchronized void add(Generated g) {
        produced++;
        if (g.eventId() != null && !seenIds.add(g.counter() + "\u0000" + g.eventId())) {
            duplicates++;
            return;
        }
        counted++;
        if (g.delta() < 0) negativeCounters.add(g.counter());
        if (g.user() != null)
            users.computeIfAbsent(g.counter(), c -> new HashSet<>()).add(g.user());
        Map<String, Long> m = byCounter.computeIfAbsent(g.counter(), c -> new HashMap<>());
        m.merge("total", g.delta(), Long::sum);
        for (Resolution r : Resolution.all()) {
            long start = r.windowStart(g.ts());
            m.merge(r.label + ":" + Math.floorDiv(start, 1000L), g.delta(), Long::sum);
            long[] w = windows.computeIfAbsent(new Window(g.counter(), r.label, start), k -> new long[2]);
            w[0] += g.delta();
            w[1]++;
        }
    }

    /** Full Redis keys of totals and window sums under a prefix, with their values. */
    public synchronized Map<String, Long> redisKeys(String prefix) {
        Map<String, Long> out = new HashMap<>();
        byCounter.forEach((c, m) -> m.forEach((suffix, v) -> out.put(prefix + ":{" + c + "}:" + suffix, v)));
        return out;
    }

    public static long sizeMillis(String res) {
        for (Resolution r : Resolution.all()) if (r.label.equals(res)) return r.sizeMillis;
        throw new IllegalArgumentException("unknown resolution " + res);
    }
}
