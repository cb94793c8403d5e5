package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.parse.EventParser;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.support.RedisTestSupport;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

/**
 * The fair references deliver the same Redis outputs as Rollcount: on a small bounded input without
 * redeliveries (so deduplication changes nothing), Rollcount, the textbook job and Flink SQL each run on
 * the bench's MiniCluster into the real Redis, and every window sum and total they leave under the key
 * layout of the contract equals, key for key, the sums computed here from the input lines; the references'
 * window keys expire at window end + retention and their totals never.
 */
class FairReferencesIT {

    @Test
    void textbookAndSqlWriteTheSameCountsAsOurs(@TempDir Path dir) throws Exception {
        int port = RedisTestSupport.PORT;
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        BenchRuns bench = new BenchRuns(
                JobBench.Size.TINY,
                "redis://127.0.0.1:" + port,
                dir,
                new PrintStream(bytes, true, StandardCharsets.UTF_8));
        BenchEvents ev = bench.events(Workload.zipf, 3_000).withoutRedeliveries();
        SortedMap<String, String> truth = truth(ev, new RedisKeys(bench.prefix));
        Map<String, SortedMap<String, String>> written = new TreeMap<>();
        Map<String, Map<String, Long>> expiries = new TreeMap<>();
        bench.withCluster(() -> {
            bench.ours(ev);
            written.put("ours", bench.countKeys());
            bench.cleanRedis();
            bench.naiveRedis(ev);
            written.put("textbook", bench.countKeys());
            expiries.put("textbook", expiries(port, written.get("textbook")));
            bench.cleanRedis();
            bench.sqlRedis(ev);
            written.put("sql", bench.countKeys());
            expiries.put("sql", expiries(port, written.get("sql")));
        });
        assertThat(truth).hasSizeGreaterThan(1_000);
        assertThat(written).containsOnlyKeys("ours", "textbook", "sql");
        for (String variant : written.keySet()) {
            assertThat(written.get(variant)).as(variant).isEqualTo(truth);
        }
        for (Map.Entry<String, Map<String, Long>> e : expiries.entrySet()) {
            for (Map.Entry<String, Long> k : e.getValue().entrySet()) {
                assertThat(k.getValue()).as(e.getKey() + " " + k.getKey()).isEqualTo(expectedExpiry(k.getKey()));
            }
        }
    }

    /** Window sums and totals of the input, from its lines parsed here. */
    private static SortedMap<String, String> truth(BenchEvents ev, RedisKeys keys) {
        Map<String, Long> sums = new TreeMap<>();
        EventParser parser = new EventParser(0);
        BenchEvents copy = ev.copy();
        for (long i = 0; i < ev.count; i++) {
            Event e = parser.parse(copy.line(i), null, null, 0, 0);
            assertThat(e.isDeadLetter()).isFalse();
            sums.merge(keys.total(e.counter), e.delta, Long::sum);
            for (Resolution r : Resolution.all())
                sums.merge(keys.window(e.counter, r, r.windowStart(e.ts)), e.delta, Long::sum);
        }
        SortedMap<String, String> truth = new TreeMap<>();
        sums.forEach((k, v) -> truth.put(k, Long.toString(v)));
        return truth;
    }

    private static Map<String, Long> expiries(int port, Map<String, String> keys) {
        Map<String, Long> at = new TreeMap<>();
        try (Jedis jedis = new Jedis("127.0.0.1", port)) {
            for (String key : keys.keySet()) at.put(key, jedis.pexpireTime(key));
        }
        return at;
    }

    private static long expectedExpiry(String key) {
        if (key.endsWith(":total")) return -1;
        long start = RedisKeys.windowStartMillis(key);
        String[] parts = key.split(":");
        Resolution r = Resolution.ofLabel(parts[parts.length - 2]);
        return start + r.sizeMillis + r.ttlMillis;
    }
}
