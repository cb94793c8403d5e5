package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.RedisTestSupport;
import java.io.BufferedWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.resps.Tuple;

/**
 * Trending lists and window top-K end to end on a MiniCluster with RocksDB, against the real Redis.
 * The test generates a stream whose popular counters change half-way (so decay decides the order),
 * computes the closed-form decayed scores and the exact window top 100s itself, and compares what the
 * job left in Redis: {@code rc:trending:<ns>} and {@code rc:top:<ns>:<res>:<start>}. Then a savepoint
 * taken at parallelism 2 is restored at parallelism 1 and 3 on the same input, and both must end with
 * the same lists.
 */
public class TrendingIT {
    private static final long START =
            io.rollcount.job.support.RecentTime.HOUR_START; // keys expire at window end + retention
    private static final long SPAN = Duration.ofMinutes(90).toMillis();
    private static final long HALF_LIFE = Duration.ofMinutes(10).toMillis();
    private static final int TOPK = 100;
    private static final String[] NAMESPACES = {"post", "video", "user", "tail"};
    private static final int[] SIZES = {2_000, 500, 150, 4_000};
    private static final double[] SHARES = {0.5, 0.25, 0.1, 0.15};

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slotsWithManagedMemory(3);

    @TempDir
    Path dir;

    private final List<RedisTestSupport> redis = new ArrayList<>();

    @AfterEach
    void cleanUp() {
        redis.forEach(RedisTestSupport::close);
    }

    private RedisTestSupport newRedis() {
        RedisTestSupport r = new RedisTestSupport();
        redis.add(r);
        return r;
    }

    public record Ev(String counter, long delta, long ts) {}

    /** A skewed stream in time order (jitter up to 2 s back, inside the 5 s out-of-orderness), popularity shifting at two thirds. */
    public static List<Ev> generate(int n, long seed) {
        Random rnd = new Random(seed);
        double[][] zipf = new double[SIZES.length][];
        for (int k = 0; k < SIZES.length; k++) {
            zipf[k] = new double[SIZES[k]];
            double sum = 0;
            for (int r = 0; r < SIZES[k]; r++) zipf[k][r] = sum += 1.0 / Math.pow(r + 1, k == 3 ? 0.3 : 1.1);
            for (int r = 0; r < SIZES[k]; r++) zipf[k][r] /= sum;
        }
        List<Ev> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            long ts = START + (long) ((double) i * SPAN / n) - rnd.nextInt(2_000);
            double u = rnd.nextDouble();
            int k = 0;
            for (double acc = SHARES[0]; u > acc && k < SHARES.length - 1; acc += SHARES[++k]) {}
            int rank = java.util.Arrays.binarySearch(zipf[k], rnd.nextDouble());
            rank = Math.min(SIZES[k] - 1, rank < 0 ? -rank - 1 : rank);
            boolean late = ts - START > 2 * SPAN / 3;
            int id = switch (k) {
                case 0 -> late ? (rank + 50) % SIZES[0] : rank;
                case 1 -> late ? SIZES[1] - 1 - rank : rank;
                default -> rank;
            };
            long delta = rnd.nextInt(100) < 3 ? -1 - rnd.nextInt(3) : rnd.nextInt(10) == 0 ? 1 + rnd.nextInt(5) : 1;
            out.add(new Ev(NAMESPACES[k] + ":" + id + (k == 3 ? ":x" : ""), delta, ts));
        }
        return out;
    }

    public static void write(List<Ev> events, Path file) throws IOException {
        try (BufferedWriter w = Files.newBufferedWriter(file, StandardCharsets.UTF_8)) {
            for (Ev e : events) {
                w.write("{\"counter\":\"" + e.counter + "\",\"delta\":" + e.delta + ",\"ts\":" + e.ts + "}\n");
            }
        }
    }

    /** The decayed score of every counter at {@code at}: sum of d * 2^(-(at - t) / h) over positive deltas. */
    static Map<String, Double> decayed(List<Ev> events, long at) {
        Map<String, Double> s = new HashMap<>();
        for (Ev e : events) {
            if (e.delta > 0) s.merge(e.counter, e.delta * Math.pow(2, -(double) (at - e.ts) / HALF_LIFE), Double::sum);
        }
        return s;
    }

    static String ns(String counter) {
        int i = counter.indexOf(':');
        return i < 0 ? counter : counter.substring(0, i);
    }

    /** The exact window top 100s: key suffix "<ns>:<res>:<start s>" -> counter -> sum, best first (sum desc, id asc). */
    public static Map<String, LinkedHashMap<String, Long>> windowTops(List<Ev> events) {
        Map<String, Map<String, Long>> sums = new HashMap<>();
        for (Ev e : events) {
            for (Resolution r : new Resolution[] {Resolution.M1, Resolution.H1, Resolution.D1}) {
                long start = r.windowStart(e.ts) / 1000;
                for (String n : new String[] {ns(e.counter), "_all"}) {
                    sums.computeIfAbsent(n + ":" + r.label + ":" + start, k -> new HashMap<>())
                            .merge(e.counter, e.delta, Long::sum);
                }
            }
        }
        Map<String, LinkedHashMap<String, Long>> tops = new HashMap<>();
        sums.forEach((key, m) -> {
            LinkedHashMap<String, Long> top = new LinkedHashMap<>();
            m.entrySet().stream()
                    .sorted(Comparator.<Map.Entry<String, Long>>comparingLong(x -> -x.getValue())
                            .thenComparing(Map.Entry::getKey))
                    .limit(TOPK)
                    .forEach(x -> top.put(x.getKey(), x.getValue()));
            tops.put(key, top);
        });
        return tops;
    }

    private JobSettings options(Path input, RedisTestSupport r) {
        return JobRuns.fileSettings(input, r, Duration.ofSeconds(1), dir).toBuilder()
                .set("--trending.half-life", Duration.ofMinutes(10))
                .set("--topk", TOPK)
                .build();
    }

    private StreamExecutionEnvironment environment(JobSettings o, int parallelism, String savepoint) {
        return JobRuns.environment(o, parallelism, 2, savepoint);
    }

    private static void build(StreamExecutionEnvironment env, JobSettings o, Sink<RedisWrite> sink) {
        Pipeline.build(env, o, JobConnectors.fileSource(o), JobRuns.fileOutputs(sink, o));
    }

    /** A trending list as Redis holds it, best first, and the time it reflects (its version). */
    record Trending(long at, List<Tuple> items) {}

    static Trending trending(RedisTestSupport r, String ns) {
        String v = r.jedis.get(r.prefix + ":_v:{" + r.prefix + ":trending:" + ns + "}");
        assertThat(v).as("version of the trending list of " + ns).isNotNull();
        return new Trending(Long.parseLong(v), r.jedis.zrevrangeWithScores(r.prefix + ":trending:" + ns, 0, -1));
    }

    /**
     * Checks each namespace's trending list against the closed-form decayed scores: scores within the
     * sketch's bounds (here, with fewer counters per shard than its capacity, exact up to rounding), best
     * first, and the list is the true top K. Returns the largest relative score error.
     */
    static double assertTrending(RedisTestSupport r, List<Ev> events) {
        long latestBucket = events.stream()
                .mapToLong(e -> Resolution.S5.windowStart(e.ts))
                .max()
                .orElseThrow();
        double worst = 0;
        Map<String, Double> truth = null;
        for (String n : new String[] {"post", "video", "user", "tail", "_all"}) {
            Trending t = trending(r, n);
            assertThat(t.at)
                    .as("a bounded run's lists are decayed to the end of its last 5 s bucket")
                    .isEqualTo(latestBucket + 4_999);
            if (truth == null) truth = decayed(events, t.at);
            List<Double> expected = truth.entrySet().stream()
                    .filter(e -> n.equals("_all") || ns(e.getKey()).equals(n))
                    .map(Map.Entry::getValue)
                    .sorted(Comparator.reverseOrder())
                    .toList();
            int k = Math.min(TOPK, expected.size());
            assertThat(t.items).as("length of the trending list of " + n).hasSize(k);
            double kth = expected.get(k - 1);
            double previous = Double.POSITIVE_INFINITY;
            for (Tuple item : t.items) {
                Double s = truth.get(item.getElement());
                assertThat(s)
                        .as("a trending counter of " + n + " that had positive deltas: " + item.getElement())
                        .isNotNull();
                assertThat(n.equals("_all") || ns(item.getElement()).equals(n))
                        .as(item.getElement() + " in " + n)
                        .isTrue();
                double err = Math.abs(item.getScore() - s) / s;
                worst = Math.max(worst, err);
                assertThat(err)
                        .as("relative score error of " + item.getElement())
                        .isLessThan(1e-9);
                assertThat(s)
                        .as(item.getElement() + " belongs in the top " + k + " of " + n)
                        .isGreaterThanOrEqualTo(kth * (1 - 1e-9));
                assertThat(item.getScore()).as("best first").isLessThanOrEqualTo(previous);
                previous = item.getScore();
            }
        }
        return worst;
    }

    /**
     * Checks every window top-K key: exactly the expected keys exist (across the given prefixes, the
     * first holding a key wins), each holds the exact top 100 with the exact sums. Returns the recall.
     */
    static double assertWindowTops(List<RedisTestSupport> stores, List<Ev> events, boolean checkTtl) {
        Map<String, LinkedHashMap<String, Long>> expected = windowTops(events);
        long members = 0;
        long found = 0;
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, LinkedHashMap<String, Long>> e : expected.entrySet()) {
            List<Tuple> actual = null;
            for (RedisTestSupport r : stores) {
                String key = r.prefix + ":top:" + e.getKey();
                if (r.jedis.exists(key)) {
                    actual = r.jedis.zrevrangeWithScores(key, 0, -1);
                    break;
                }
            }
            members += e.getValue().size();
            if (actual == null) {
                wrong.add(e.getKey() + " missing");
                continue;
            }
            Map<String, Long> got = new HashMap<>();
            for (Tuple t : actual) got.put(t.getElement(), (long) t.getScore());
            for (Map.Entry<String, Long> m : e.getValue().entrySet())
                if (m.getValue().equals(got.get(m.getKey()))) found++;
            if (!got.equals(e.getValue())) wrong.add(e.getKey() + " expected " + e.getValue() + " got " + got);
        }
        for (RedisTestSupport r : stores) {
            for (String key : r.keys()) {
                if (key.startsWith(r.prefix + ":top:")
                        && !expected.containsKey(key.substring((r.prefix + ":top:").length()))) {
                    wrong.add("unexpected key " + key);
                }
            }
        }
        assertThat(wrong)
                .as("window top-K keys that are wrong (of " + expected.size() + ")")
                .isEmpty();
        if (checkTtl) {
            RedisTestSupport r = stores.get(0);
            for (Resolution res : new Resolution[] {Resolution.M1, Resolution.H1, Resolution.D1}) {
                String key = expected.keySet().stream()
                        .filter(k -> k.startsWith("post:" + res.label + ":"))
                        .findFirst()
                        .map(k -> r.prefix + ":top:" + k)
                        .orElseThrow();
                long start = Long.parseLong(key.substring(key.lastIndexOf(':') + 1)) * 1000;
                assertThat(r.jedis.pexpireTime(key)).as("expiry of " + key).isEqualTo(res.expireAtMillis(start));
            }
        }
        return (double) found / members;
    }

    @Test
    void boundedRunWritesTheDecayedTrendingOrderAndTheExactWindowTopK() throws Exception {
        List<Ev> events = generate(100_000, 7);
        Path input = dir.resolve("events.jsonl");
        write(events, input);
        RedisTestSupport r = newRedis();
        JobSettings o = options(input, r);
        StreamExecutionEnvironment env = environment(o, 2, null);
        build(env, o, JobConnectors.redisSink(o));
        long t0 = System.nanoTime();
        env.execute("trending-it");
        long ms = (System.nanoTime() - t0) / 1_000_000;

        double worst = assertTrending(r, events);
        double recall = assertWindowTops(List.of(r), events, true);
        assertThat(recall).isEqualTo(1.0);
        // Decay matters: the all-time leader of "post" is not its trending leader.
        Map<String, Long> totals = new HashMap<>();
        events.forEach(e -> totals.merge(e.counter, e.delta, Long::sum));
        String allTimeLeader = totals.entrySet().stream()
                .filter(e -> e.getKey().startsWith("post:"))
                .max(Map.Entry.comparingByValue())
                .orElseThrow()
                .getKey();
        assertThat(trending(r, "post").items.get(0).getElement()).isNotEqualTo(allTimeLeader);
        System.out.printf(
                "TrendingIT bounded run: %d events in %d ms; trending max relative score error %.2e; window top-K recall %.4f%n",
                events.size(), ms, worst, recall);
    }

    @Test
    void aSavepointAtParallelism2RestoredAt1And3GivesTheSameLists() throws Exception {
        List<Ev> events = generate(60_000, 11);
        // Two files, one per source reader: a reader without a split would finish at once, and a savepoint
        // that meets a task while it finishes is declined (and a failed stop-with-savepoint fails the job).
        Path input = Files.createDirectories(dir.resolve("input"));
        List<Ev> even = new java.util.ArrayList<>();
        List<Ev> odd = new java.util.ArrayList<>();
        for (int i = 0; i < events.size(); i++) (i % 2 == 0 ? even : odd).add(events.get(i));
        write(even, input.resolve("a.jsonl"));
        write(odd, input.resolve("b.jsonl"));

        // Part 1 at parallelism 2: each reader holds after a third of its file (the gate stays shut), so the
        // job is surely still running, mid-stream, when it is stopped with a savepoint.
        RedisTestSupport first = newRedis();
        JobSettings o = options(input, first);
        StreamExecutionEnvironment env = environment(o, 2, null);
        FailureInjection.reset(FailureInjection.Place.NONE, false);
        Pipeline.build(
                env, o, new GatedSource<>(JobConnectors.fileSource(o), events.size() / 6), JobRuns.fileOutputs(o));
        JobClient job = env.executeAsync("trending-savepoint-p2");
        long stopAt = START + SPAN / 4;
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            String wm = first.jedis.get(first.prefix + ":meta:watermark");
            if (wm != null && Long.parseLong(wm) >= stopAt) break;
            assertThat(job.getJobStatus().get().isGloballyTerminalState())
                    .as("the job still runs")
                    .isFalse();
            assertThat(System.currentTimeMillis())
                    .as("the watermark reaches a third of the stream")
                    .isLessThan(deadline);
            Thread.sleep(20);
        }
        String savepoint = job.stopWithSavepoint(
                        false, dir.resolve("savepoints").toUri().toString(), SavepointFormatType.CANONICAL)
                .get(120, TimeUnit.SECONDS);
        String wmAtStop = first.jedis.get(first.prefix + ":meta:watermark");
        assertThat(Long.parseLong(wmAtStop)).as("stopped mid-stream").isLessThan(START + SPAN - 60_000);

        // Part 2: the same input from the savepoint, at parallelism 1 and at 3, each into a prefix of its own.
        Map<Integer, Map<String, Trending>> lists = new HashMap<>();
        for (int p : new int[] {1, 3}) {
            RedisTestSupport rest = newRedis();
            JobSettings ro = options(input, rest);
            StreamExecutionEnvironment renv = environment(ro, p, savepoint);
            build(renv, ro, JobConnectors.redisSink(ro));
            renv.execute("trending-restored-p" + p);

            // It really resumed: the first minute closed before the savepoint, so only part 1 wrote its top-K.
            String firstMinute = ":top:post:1m:" + START / 1000;
            assertThat(first.jedis.exists(first.prefix + firstMinute)).isTrue();
            assertThat(rest.jedis.exists(rest.prefix + firstMinute))
                    .as("restored from the savepoint, not started afresh")
                    .isFalse();
            double worst = assertTrending(rest, events);
            double recall = assertWindowTops(List.of(rest, first), events, false);
            assertThat(recall).isEqualTo(1.0);
            Map<String, Trending> byNs = new HashMap<>();
            for (String n : new String[] {"post", "video", "user", "tail", "_all"}) byNs.put(n, trending(rest, n));
            lists.put(p, byNs);
            System.out.printf(
                    "TrendingIT restored at parallelism %d from a savepoint at parallelism 2 (watermark %s): "
                            + "trending max relative score error %.2e; window top-K recall %.4f%n",
                    p, wmAtStop, worst, recall);
        }
        for (String n : lists.get(1).keySet()) {
            Trending a = lists.get(1).get(n);
            Trending b = lists.get(3).get(n);
            assertThat(b.at).isEqualTo(a.at);
            assertThat(b.items.stream().map(Tuple::getElement).toList())
                    .as("order of " + n)
                    .isEqualTo(a.items.stream().map(Tuple::getElement).toList());
            for (int i = 0; i < a.items.size(); i++) {
                assertThat(b.items.get(i).getScore())
                        .isCloseTo(a.items.get(i).getScore(), org.assertj.core.data.Percentage.withPercentage(1e-7));
            }
        }
    }
}
