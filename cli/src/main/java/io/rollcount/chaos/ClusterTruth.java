package io.rollcount.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.model.Resolution;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerRecord;
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

    /**
     * Takes back a counted event that the job rightly did not count: one it dead-lettered as {@code late} because
     * its partition's records reached the job after the watermark had passed it by more than the allowed lateness.
     * A window left without events is no longer expected, in Redis or in {@code counter-rollups}.
     */
    public synchronized void withdraw(Generated g) {
        counted--;
        Map<String, Long> m = byCounter.get(g.counter());
        m.merge("total", -g.delta(), Long::sum);
        for (Resolution r : Resolution.all()) {
            long start = r.windowStart(g.ts());
            String key = r.label + ":" + Math.floorDiv(start, 1000L);
            Window window = new Window(g.counter(), r.label, start);
            long[] w = windows.get(window);
            w[0] -= g.delta();
            w[1]--;
            if (w[1] == 0) {
                windows.remove(window);
                m.remove(key);
            } else m.merge(key, -g.delta(), Long::sum);
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

    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * The windows of {@code counter-rollups} (the default {@code --rollups.resolutions}: 1m, 1h and 1d) that the
     * watermark closed, with their true sum and event count.
     */
    public synchronized Map<Window, long[]> closedRollupWindows(long watermark) {
        Map<Window, long[]> closed = new HashMap<>();
        windows.forEach((w, v) -> {
            if (!w.res().equals("5s") && !w.res().equals("5m") && w.start() + sizeMillis(w.res()) - 1 <= watermark)
                closed.put(w, v);
        });
        return closed;
    }

    /**
     * Checks the records of {@code counter-rollups} (read_committed) against the truth: each keyed by its counter,
     * no revision twice, revisions 0..n without gap, the latest with the true sum and event count, a rollup of
     * every {@code closed} window and of no window without events. Adds one line per problem to {@code problems}
     * and returns the events of 1m windows {lost, duplicated}.
     */
    public synchronized long[] checkRollups(
            List<ConsumerRecord<byte[], byte[]>> records, Map<Window, long[]> closed, List<String> problems)
            throws IOException {
        long lost = 0;
        long dup = 0;
        Map<Window, List<JsonNode>> got = new HashMap<>();
        for (ConsumerRecord<byte[], byte[]> r : records) {
            JsonNode n = JSON.readTree(r.value());
            String counter = n.path("counter").asText();
            if (r.key() == null || !counter.equals(new String(r.key(), StandardCharsets.UTF_8)))
                problems.add("key is not the counter: " + n);
            got.computeIfAbsent(
                            new Window(
                                    counter,
                                    n.path("res").asText(),
                                    n.path("start").asLong()),
                            k -> new ArrayList<>())
                    .add(n);
        }
        for (var e : got.entrySet()) {
            long[] t = windows.get(e.getKey());
            if (t == null) {
                problems.add("rollup of a window without events: " + e.getValue());
                continue;
            }
            Set<Integer> revisions = new HashSet<>();
            JsonNode latest = null;
            for (JsonNode n : e.getValue()) {
                if (!revisions.add(n.path("revision").asInt())) {
                    problems.add("duplicate: " + n);
                    if (e.getKey().res().equals("1m")) dup += n.path("events").asLong();
                }
                if (latest == null
                        || n.path("revision").asInt() > latest.path("revision").asInt()) latest = n;
            }
            for (int r = 0; r < revisions.size(); r++)
                if (!revisions.contains(r)) problems.add("revision gap in " + e.getValue());
            if (latest.path("sum").asLong() != t[0] || latest.path("events").asLong() != t[1]) {
                problems.add("wrong sum: " + latest + " expected sum " + t[0] + " events " + t[1]);
            }
            if (e.getKey().res().equals("1m")) {
                long d = latest.path("events").asLong() - t[1];
                if (d > 0) dup += d;
                else lost -= d;
            }
        }
        for (var w : closed.entrySet()) {
            if (!got.containsKey(w.getKey())) {
                problems.add("missing rollup of closed " + w.getKey());
                if (w.getKey().res().equals("1m")) lost += w.getValue()[1];
            }
        }
        return new long[] {lost, dup};
    }

    public static long sizeMillis(String res) {
        for (Resolution r : Resolution.all()) if (r.label.equals(res)) return r.sizeMillis;
        throw new IllegalArgumentException("unknown resolution " + res);
    }
}
