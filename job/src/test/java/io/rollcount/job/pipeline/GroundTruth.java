package io.rollcount.job.pipeline;

import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.model.Resolution;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * The expected Redis values of a generated stream, computed independently of the job: every valid
 * record counts once per (counter, event_id); totals and window sums per resolution, keyed by the Redis
 * key suffix ({@code total}, {@code 1m:<start seconds>}).
 */
final class GroundTruth {
    final Map<String, Map<String, Long>> byCounter = new HashMap<>();
    final Map<String, Long> eventsPerWindow = new HashMap<>();
    final Set<String> negativeCounters = new HashSet<>();
    /** Distinct users per uniques key suffix ({@code u:all}, {@code u:1h:<start>}, {@code u:1d:<start>}) per counter. */
    final Map<String, Map<String, Set<String>>> users = new HashMap<>();

    private final Set<String> seenIds = new HashSet<>();
    long counted;
    long duplicates;

    void add(Generated g) {
        if (g.eventId() != null && !seenIds.add(g.counter() + "\u0000" + g.eventId())) {
            duplicates++;
            return;
        }
        counted++;
        if (g.delta() < 0) negativeCounters.add(g.counter());
        Map<String, Long> m = byCounter.computeIfAbsent(g.counter(), c -> new HashMap<>());
        m.merge("total", g.delta(), Long::sum);
        for (Resolution r : Resolution.all()) {
            String suffix = r.label + ":" + Math.floorDiv(r.windowStart(g.ts()), 1000L);
            m.merge(suffix, g.delta(), Long::sum);
            eventsPerWindow.merge(g.counter() + "|" + suffix, 1L, Long::sum);
            if (g.user() != null && (r == Resolution.H1 || r == Resolution.D1)) {
                users.computeIfAbsent(g.counter(), c -> new HashMap<>())
                        .computeIfAbsent("u:" + suffix, k -> new HashSet<>())
                        .add(g.user());
            }
        }
        if (g.user() != null) {
            users.computeIfAbsent(g.counter(), c -> new HashMap<>())
                    .computeIfAbsent("u:all", k -> new HashSet<>())
                    .add(g.user());
        }
    }

    /** Full Redis uniques keys and their users under a prefix. */
    Map<String, Set<String>> uniquesKeys(String prefix) {
        Map<String, Set<String>> out = new HashMap<>();
        users.forEach((c, m) -> m.forEach((suffix, u) -> out.put(prefix + ":{" + c + "}:" + suffix, u)));
        return out;
    }

    /** Full Redis keys and values under a prefix. */
    Map<String, Long> redisKeys(String prefix) {
        Map<String, Long> out = new HashMap<>();
        byCounter.forEach((c, m) -> m.forEach((suffix, v) -> out.put(prefix + ":{" + c + "}:" + suffix, v)));
        return out;
    }
}
