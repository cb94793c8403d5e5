package io.rollcount.job.gen;

import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.SplittableRandom;

/**
 * Seeded generator of the workloads of BENCHMARKS.md: {@code uniform}, {@code zipf} (exponent 1.1 over
 * counters) and {@code viral} (one counter takes 30% of events, the rest Zipf 1.1). About 70% of events
 * carry a {@code user}, 50% an {@code event_id}, and 3% are redeliveries of a recent event with an id.
 * Event time advances at a steady rate with a bounded backwards jitter (out of order within the bound).
 * Used by the demo, the benchmarks and the tests (which compute their ground truth from {@link Generated}).
 */
public final class EventGenerator {

    public enum Workload {
        uniform,
        zipf,
        viral
    }

    /** One generated record: its JSON line, and what it means. */
    public record Generated(
            String line, String counter, long delta, long ts, String eventId, String user, boolean redelivery) {}

    private final SplittableRandom random;
    private final Workload workload;
    private final int counters;
    private final int users;
    private final long startTs;
    private final double millisPerEvent;
    private final long jitterMillis;
    private final double negativeShare;
    private final double[] zipfCdf;
    private final ArrayDeque<Generated> recentWithId = new ArrayDeque<>();
    private final String[] namespaces;
    private long n;

    /**
     * @param eventsPerSecond of event time (e.g. 1000: the stream covers one second of event time per 1000 events)
     * @param jitterMillis each event's time is moved back by up to this much (keep it under the out-of-orderness bound)
     * @param negativeShare share of events with a negative delta
     */
    public EventGenerator(
            long seed,
            Workload workload,
            int counters,
            int users,
            long startTs,
            double eventsPerSecond,
            long jitterMillis,
            double negativeShare) {
        if (counters < 2) throw new IllegalArgumentException("counters must be at least 2");
        this.random = new SplittableRandom(seed);
        this.workload = workload;
        this.counters = counters;
        this.users = Math.max(1, users);
        this.startTs = startTs;
        this.millisPerEvent = 1000.0 / eventsPerSecond;
        this.jitterMillis = jitterMillis;
        this.negativeShare = negativeShare;
        this.zipfCdf = workload == Workload.uniform ? null : zipfCdf(counters, 1.1);
        this.namespaces = new String[] {"post", "video", "api", "user"};
    }

    private static double[] zipfCdf(int n, double s) {
        double[] cdf = new double[n];
        double sum = 0;
        for (int i = 0; i < n; i++) {
            sum += 1.0 / Math.pow(i + 1, s);
            cdf[i] = sum;
        }
        for (int i = 0; i < n; i++) cdf[i] /= sum;
        return cdf;
    }

    /** The id of counter number {@code rank} (0 is the most frequent under zipf and viral). */
    public String counterId(int rank) {
        String ns = namespaces[rank % namespaces.length];
        return ns + ":" + rank + (rank % 3 == 0 ? ":likes" : rank % 3 == 1 ? ":views" : ":clicks");
    }

    private int nextRank() {
        return switch (workload) {
            case uniform -> random.nextInt(counters);
            case zipf -> zipfRank();
            case viral -> random.nextDouble() < 0.3 ? 0 : zipfRank();
        };
    }

    private int zipfRank() {
        int i = Arrays.binarySearch(zipfCdf, random.nextDouble());
        return Math.min(counters - 1, i >= 0 ? i : -i - 1);
    }

    /** The current event time (without jitter). */
    public long eventTime() {
        return startTs + (long) (n * millisPerEvent);
    }

    public Generated next() {
        n++;
        if (!recentWithId.isEmpty() && random.nextDouble() < 0.03) {
            Generated g = pickRecent();
            return new Generated(g.line(), g.counter(), g.delta(), g.ts(), g.eventId(), g.user(), true);
        }
        String counter = counterId(nextRank());
        long delta = random.nextDouble() < negativeShare
                ? -(1 + random.nextInt(3))
                : (random.nextDouble() < 0.9 ? 1 : 1 + random.nextInt(10));
        long ts = eventTime() - (jitterMillis > 0 ? random.nextLong(jitterMillis + 1) : 0);
        String user = random.nextDouble() < 0.7 ? "u" + random.nextInt(users) : null;
        String eventId = random.nextDouble() < 0.5 ? Long.toHexString(random.nextLong()) : null;
        StringBuilder sb =
                new StringBuilder(96).append("{\"counter\":\"").append(counter).append('"');
        if (delta != 1 || random.nextBoolean()) sb.append(",\"delta\":").append(delta);
        sb.append(",\"ts\":").append(ts);
        if (eventId != null) sb.append(",\"event_id\":\"").append(eventId).append('"');
        if (user != null) sb.append(",\"user\":\"").append(user).append('"');
        sb.append('}');
        Generated g = new Generated(sb.toString(), counter, delta, ts, eventId, user, false);
        if (eventId != null) {
            recentWithId.addLast(g);
            if (recentWithId.size() > 1000) recentWithId.removeFirst();
        }
        return g;
    }

    private Generated pickRecent() {
        int skip = random.nextInt(recentWithId.size());
        var it = recentWithId.descendingIterator();
        Generated g = it.next();
        for (int i = 0; i < skip && it.hasNext(); i++) g = it.next();
        return g;
    }

    /** One bad line of every kind the contract rejects, with the reason the job must give it. */
    public static String[][] badLines(long ts) {
        String longCounter = "c".repeat(257);
        return new String[][] {
            {"not json at all", "invalid_json"},
            {"[1,2,3]", "invalid_json"},
            {"{\"counter\":\"a\"} trailing", "invalid_json"},
            {"{\"counter\":\"a\",\"counter\":\"b\"}", "invalid_json"},
            {"", "invalid_json"},
            {"{\"delta\":1}", "missing_counter"},
            {"{\"counter\":null}", "missing_counter"},
            {"{\"counter\":\"\"}", "invalid_counter"},
            {"{\"counter\":\"has space\"}", "invalid_counter"},
            {"{\"counter\":\"tab\\there\"}", "invalid_counter"},
            {"{\"counter\":\"ctl\\u0001x\"}", "invalid_counter"},
            {"{\"counter\":\"br{ace\"}", "invalid_counter"},
            {"{\"counter\":\"br}ace\"}", "invalid_counter"},
            {"{\"counter\":\"" + longCounter + "\"}", "invalid_counter"},
            {"{\"counter\":42}", "invalid_counter"},
            {"{\"counter\":\"a\",\"delta\":1.5}", "invalid_delta"},
            {"{\"counter\":\"a\",\"delta\":\"3\"}", "invalid_delta"},
            {"{\"counter\":\"a\",\"delta\":1000000000001}", "invalid_delta"},
            {"{\"counter\":\"a\",\"delta\":-1000000000001}", "invalid_delta"},
            {"{\"counter\":\"a\",\"delta\":99999999999999999999999}", "invalid_delta"},
            {"{\"counter\":\"a\",\"ts\":\"2026-11-30T12:00:00\"}", "invalid_ts"},
            {"{\"counter\":\"a\",\"ts\":12.5}", "invalid_ts"},
            {"{\"counter\":\"a\",\"ts\":-5}", "invalid_ts"},
            {"{\"counter\":\"a\",\"ts\":true}", "invalid_ts"},
            {"{\"counter\":\"a\",\"ts\":" + ts + ",\"event_id\":\"" + "e".repeat(129) + "\"}", "invalid_event_id"},
            {"{\"counter\":\"a\",\"ts\":" + ts + ",\"event_id\":7}", "invalid_event_id"},
            {"{\"counter\":\"a\",\"ts\":" + ts + ",\"user\":\"" + "u".repeat(257) + "\"}", "invalid_user"},
            {"{\"counter\":\"a\",\"ts\":" + ts + ",\"user\":{\"id\":1}}", "invalid_user"},
        };
    }

    /** A line that is not valid UTF-8 (reason {@code invalid_utf8}). */
    public static byte[] invalidUtf8Line() {
        return new byte[] {
            '{', '"', 'c', 'o', 'u', 'n', 't', 'e', 'r', '"', ':', '"', (byte) 0xC3, (byte) 0x28, '"', '}'
        };
    }
}
