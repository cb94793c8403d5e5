package io.rollcount.chaos;

import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.model.Resolution;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

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

    /** A count key after {@code P:}: {@code {C}:total} or {@code {C}:<res>:<start>}. */
    private static final Pattern COUNT_KEY = Pattern.compile("\\{([^}]*)\\}:(total|(5s|1m|5m|1h|1d):\\d+)");

    /** The totals and window sums Redis holds under {@code prefix} (keys as {@link #redisKeys} names them), by SCAN and MGET. */
    public static Map<String, String> redisCounts(Jedis j, String prefix) {
        Map<String, String> out = new HashMap<>();
        List<String> keys = new ArrayList<>();
        String cursor = ScanParams.SCAN_POINTER_START;
        ScanParams params = new ScanParams().match(prefix + ":{*").count(1000);
        do {
            ScanResult<String> r = j.scan(cursor, params);
            keys.addAll(r.getResult());
            cursor = r.getCursor();
        } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
        List<String> counts = keys.stream()
                .filter(k -> COUNT_KEY.matcher(k.substring(prefix.length() + 1)).matches())
                .toList();
        for (int i = 0; i < counts.size(); i += 500) {
            List<String> batch = counts.subList(i, Math.min(counts.size(), i + 500));
            List<String> values = j.mget(batch.toArray(String[]::new));
            for (int k = 0; k < batch.size(); k++) out.put(batch.get(k), values.get(k));
        }
        return out;
    }

    /** What differs between {@code expected} ({@link #redisKeys}) and {@code actual} ({@link #redisCounts}), one line a key. */
    public static List<String> wrongKeys(Map<String, Long> expected, Map<String, String> actual) {
        List<String> w = new ArrayList<>();
        for (var e : expected.entrySet()) {
            String v = actual.get(e.getKey());
            if (v == null || Long.parseLong(v) != e.getValue())
                w.add(e.getKey() + " expected " + e.getValue() + " got " + v);
        }
        for (String k : actual.keySet())
            if (!expected.containsKey(k)) w.add(k + " should not exist (" + actual.get(k) + ")");
        return w;
    }

    public static long sizeMillis(String res) {
        for (Resolution r : Resolution.all()) if (r.label.equals(res)) return r.sizeMillis;
        throw new IllegalArgumentException("unknown resolution " + res);
    }
}
