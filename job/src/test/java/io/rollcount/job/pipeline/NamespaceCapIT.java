package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobSettings;
import io.rollcount.job.pipeline.TrendingIT.Ev;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.resps.Tuple;

/**
 * Issue 18, item 9: 50,000 counter ids without a {@code :}, each a namespace of its own. The whole job
 * from a file on a MiniCluster (parallelism 2, RocksDB) against the real Redis, with
 * {@code --trending.max-namespaces 300}. Expected: at most 300 namespaces with a trending list and at most
 * 300 with window top-K lists (besides {@code _all}); the {@code _all} lists rank every counter, exactly
 * (window top-K) and with the hottest colon-less ids on top (trending); every trending key and its version
 * key expire 7 days after their last write; every counter's total exact.
 */
public class NamespaceCapIT {
    private static final long START =
            io.rollcount.job.support.RecentTime.HOUR_START; // keys expire at window end + retention
    private static final int IDS = 50_000;
    private static final int HOT = 20;
    private static final int CAP = 300;
    private static final long WEEK = Duration.ofDays(7).toMillis();

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slotsWithManagedMemory(2);

    @TempDir
    Path dir;

    /** Two events for each of 50,000 colon-less ids, 60 for each of 20 hot ones, 40 for each of 50 posts, over 5 minutes. */
    static List<Ev> generate() {
        Random rnd = new Random(18);
        List<Ev> out = new ArrayList<>();
        for (int i = 0; i < IDS; i++) for (int k = 0; k < 2; k++) out.add(new Ev("id" + i, 1, 0));
        for (int i = 0; i < HOT; i++) for (int k = 0; k < 60; k++) out.add(new Ev("hot" + i, 1 + i % 3, 0));
        for (int i = 0; i < 50; i++) for (int k = 0; k < 40; k++) out.add(new Ev("post:" + i, k % 10 == 0 ? -1 : 1, 0));
        Collections.shuffle(out, rnd);
        List<Ev> timed = new ArrayList<>(out.size());
        for (int i = 0; i < out.size(); i++) {
            Ev e = out.get(i);
            timed.add(new Ev(e.counter(), e.delta(), START + (long) i * 300_000 / out.size()));
        }
        return timed;
    }

    @Test
    void fiftyThousandColonLessIdsMakeAtMostTheCapOfListsAndEveryTrendingKeyExpires() throws Exception {
        List<Ev> events = generate();
        Path input = dir.resolve("events.jsonl");
        TrendingIT.write(events, input);
        try (RedisTestSupport r = new RedisTestSupport()) {
            JobSettings o = JobRuns.fileSettings(input, r, Duration.ofSeconds(2), dir).toBuilder()
                    .set("--trending.half-life", Duration.ofMinutes(10))
                    .set("--trending.max-namespaces", CAP)
                    .build();
            StreamExecutionEnvironment env = JobRuns.environment(o, 2, 0, null);
            JobRuns.buildFromFiles(env, o);
            long t0 = System.nanoTime();
            env.execute("namespace-cap-it");
            long ms = (System.nanoTime() - t0) / 1_000_000;

            List<String> keys = r.keys();
            String trending = r.prefix + ":trending:";
            String top = r.prefix + ":top:";
            Set<String> trendingNs = new HashSet<>();
            Set<String> topNs = new HashSet<>();
            List<String> topKeys = new ArrayList<>();
            for (String k : keys) {
                if (k.startsWith(trending)) trendingNs.add(k.substring(trending.length()));
                if (k.startsWith(top)) {
                    topKeys.add(k);
                    String rest = k.substring(top.length());
                    topNs.add(rest.substring(0, rest.indexOf(':')));
                }
            }
            // Every counter's total is exact.
            Map<String, Long> totals = new HashMap<>();
            for (Ev e : events) totals.merge(e.counter(), e.delta(), Long::sum);
            List<String> totalKeys = new ArrayList<>(totals.keySet());
            for (int i = 0; i < totalKeys.size(); i += 1000) {
                List<String> chunk = totalKeys.subList(i, Math.min(totalKeys.size(), i + 1000));
                List<String> values = r.jedis.mget(
                        chunk.stream().map(c -> r.prefix + ":{" + c + "}:total").toArray(String[]::new));
                for (int j = 0; j < chunk.size(); j++) {
                    assertThat(values.get(j))
                            .as("total of " + chunk.get(j))
                            .isEqualTo(Long.toString(totals.get(chunk.get(j))));
                }
            }
            assertThat(trendingNs).contains("_all");
            // At most the cap. Trending candidates are approximate (a Space-Saving heap per shard, emitted on a
            // processing-time timer), so a namespace admitted under the cap whose only counters are two-event ids
            // can have none of them among the candidates of the last emission: a few fewer lists than the cap.
            assertThat(trendingNs.size() - 1)
                    .as("namespaces with a trending list")
                    .isBetween(CAP - 10, CAP);
            assertThat(topNs).contains("_all");
            assertThat(topNs.size() - 1)
                    .as("namespaces with window top-K lists")
                    .isEqualTo(CAP);

            // Every trending key and its version key expire a week after their last write.
            for (String ns : trendingNs) {
                for (String k : List.of(trending + ns, r.prefix + ":_v:{" + r.prefix + ":trending:" + ns + "}")) {
                    assertThat(r.jedis.pttl(k)).as("ttl of " + k).isBetween(WEEK - 600_000, WEEK);
                }
            }

            // _all trending: the 20 hot colon-less ids lead (60 events each against 2, or 40 for a post).
            List<Tuple> all = r.jedis.zrevrangeWithScores(trending + "_all", 0, -1);
            assertThat(all).hasSize(100);
            Set<String> leaders = new HashSet<>();
            for (int i = 0; i < HOT; i++) leaders.add(all.get(i).getElement());
            Set<String> hot = new HashSet<>();
            for (int i = 0; i < HOT; i++) hot.add("hot" + i);
            assertThat(leaders).as(() -> "the 20 leaders of " + describe(all)).isEqualTo(hot);

            // Window top-K: every _all list exact; every namespace list that exists exact too.
            Map<String, LinkedHashMap<String, Long>> expected = TrendingIT.windowTops(events);
            int allLists = 0;
            for (String k : topKeys) {
                String name = k.substring(top.length());
                LinkedHashMap<String, Long> want = expected.get(name);
                assertThat(want).as("an expected list: " + k).isNotNull();
                Map<String, Long> got = new HashMap<>();
                for (Tuple t : r.jedis.zrevrangeWithScores(k, 0, -1)) got.put(t.getElement(), (long) t.getScore());
                assertThat(got).as(k).isEqualTo(want);
                if (name.startsWith("_all:")) allLists++;
            }
            long expectedAll = expected.keySet().stream()
                    .filter(n -> n.startsWith("_all:"))
                    .count();
            assertThat(allLists).as("every _all window list").isEqualTo((int) expectedAll);

            assertThat(Files.exists(Path.of(o.dlq)) ? Files.readAllLines(Path.of(o.dlq)) : List.of())
                    .as("dead letters")
                    .isEmpty();
            System.out.printf(
                    "NamespaceCapIT: %,d events, %,d namespaces, in %d ms: %d trending keys, %d window top-K keys%n",
                    events.size(), totals.size() - 49, ms, trendingNs.size(), topKeys.size());
        }
    }

    /** A trending list as "counter=score" pairs, best first: what a failed ranking check shows. */
    private static String describe(List<Tuple> list) {
        StringBuilder b = new StringBuilder();
        for (Tuple t : list)
            b.append(b.isEmpty() ? "" : " ")
                    .append(t.getElement())
                    .append('=')
                    .append(String.format("%.2f", t.getScore()));
        return b.toString();
    }
}
