package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.model.Event;
import io.rollcount.job.support.JobRuns;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.RedisTestSupport;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.connector.datagen.source.GeneratorFunction;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18, item 4: deltas summing past 2^63 on one counter. The whole job on a MiniCluster with RocksDB
 * against the real Redis, fed by a generator (9.2 million events of the largest delta allowed, 10^12, are
 * what it takes; a file of them would be half a gigabyte): counter {@code big} receives exactly as many as
 * fit below {@code Long.MAX_VALUE}, then three more, each in a 5-second bucket of its own, interleaved
 * with four other counters (positive, zero and negative deltas) before and after. Expected: the job ends
 * normally (no restart allowed); every other counter's total and minute windows exact; {@code big}'s
 * total the last value that fit; exactly one {@code overflow} dead letter per overflowing event, naming
 * the counter; nothing of the overflowing events in Redis.
 */
public class OverflowIT {
    private static final long START =
            io.rollcount.job.support.RecentTime.HOUR_START; // keys expire at window end + retention
    private static final long DELTA = 1_000_000_000_000L; // 10^12, the largest delta the contract allows
    private static final long FIT = Long.MAX_VALUE / DELTA; // 9,223,372 events fit
    private static final int EXTRA = 3;
    private static final int TAIL = 3_000;
    private static final String[] OTHERS = {"a:1", "a:2", "b:x", "plain"};

    @RegisterExtension
    static final MiniClusterExtension FLINK = MiniClusters.slotsWithManagedMemory(2);

    @TempDir
    Path dir;

    /** Length of phase 1: every 1000th index is another counter's, the rest {@code big}'s, FIT of them. */
    static final long PHASE1 = phase1();

    private static long phase1() {
        long p = FIT / 999 * 1000;
        while (p / 1000 * 999 + Math.min(p % 1000, 999) < FIT) p++;
        return p;
    }

    static final long TOTAL_EVENTS = PHASE1 + EXTRA + TAIL;

    /** Event number {@code i}: phase 1 (big and the others, first minute), the extras of big, the others' tail. */
    static Event event(long i) {
        Event e = new Event();
        if (i < PHASE1) {
            e.ts = START + i * 60_000 / PHASE1;
            if (i % 1000 != 999) {
                e.counter = "big";
                e.delta = DELTA;
            } else {
                other(e, i);
            }
        } else if (i < PHASE1 + EXTRA) {
            e.counter = "big";
            e.delta = DELTA;
            e.ts = START + 70_000 + (i - PHASE1) * 5_000; // a 5 s bucket of its own: a partial sum of one event
        } else {
            other(e, i);
            e.ts = START + 60_000 + (i - PHASE1 - EXTRA) * 60_000 / TAIL;
        }
        // The raw input is only needed by a dead letter, and none of these is late: spare the 9 million copies.
        return e;
    }

    private static void other(Event e, long i) {
        e.counter = OTHERS[(int) ((i / 1000) % OTHERS.length)];
        e.delta = (i % 7) - 2;
    }

    static final class Gen implements GeneratorFunction<Long, Event> {
        @Override
        public Event map(Long i) {
            return event(i);
        }
    }

    @Test
    void anOverflowingCounterCostsOneDeadLetterPerEventAndNothingElseStops() throws Exception {
        assertThat(PHASE1 / 1000 * 999 + Math.min(PHASE1 % 1000, 999)).isEqualTo(FIT);
        try (RedisTestSupport r = new RedisTestSupport()) {
            // settings of a files job want an input; the generator replaces the source
            JobSettings o = JobRuns.fileSettings(dir, r, Duration.ofSeconds(2), dir);
            // No restart: a crash fails the test. One reader: the order in which the generator made big's events
            // is the order they reach its counter.
            StreamExecutionEnvironment env = JobRuns.environment(o, 1, 0, null);
            var source = new DataGeneratorSource<>(new Gen(), TOTAL_EVENTS, TypeInformation.of(Event.class));
            Pipeline.build(env, o, source, JobRuns.fileOutputs(o));
            long t0 = System.nanoTime();
            env.execute("overflow-it");
            long ms = (System.nanoTime() - t0) / 1_000_000;

            // Expected values of the other counters.
            Map<String, Long> totals = new HashMap<>();
            Map<String, Long> minutes = new HashMap<>();
            for (long i = 0; i < TOTAL_EVENTS; i++) {
                if (i < PHASE1 && i % 1000 != 999) continue; // big
                if (i >= PHASE1 && i < PHASE1 + EXTRA) continue;
                Event e = event(i);
                totals.merge(e.counter, e.delta, Long::sum);
                minutes.merge(e.counter + ":1m:" + (e.ts / 60_000 * 60), e.delta, Long::sum);
            }
            assertThat(totals).containsOnlyKeys(OTHERS);
            for (String c : OTHERS) {
                assertThat(r.jedis.get(r.prefix + ":{" + c + "}:total"))
                        .as("total of " + c)
                        .isEqualTo(Long.toString(totals.get(c)));
            }
            minutes.forEach((k, v) -> {
                String c = k.substring(0, k.indexOf(":1m:"));
                String key = r.prefix + ":{" + c + "}" + k.substring(c.length());
                assertThat(r.jedis.get(key)).as(key).isEqualTo(Long.toString(v));
            });

            // big: the last value that fit, in its total and its first minute; nothing of the extras.
            String big = r.prefix + ":{big}:";
            long fit = FIT * DELTA;
            assertThat(r.jedis.get(big + "total")).isEqualTo(Long.toString(fit));
            assertThat(r.jedis.get(big + "1m:" + START / 1000)).isEqualTo(Long.toString(fit));
            assertThat(r.jedis.exists(big + "1m:" + (START / 1000 + 60)))
                    .as("the extras' minute")
                    .isFalse();
            for (int k = 0; k < EXTRA; k++) {
                assertThat(r.jedis.exists(big + "5s:" + (START / 1000 + 70 + 5 * k)))
                        .as("an extra's 5 s window")
                        .isFalse();
            }

            // Exactly one overflow dead letter per extra event, naming the counter; no other dead letter.
            ObjectMapper json = new ObjectMapper();
            List<JsonNode> dead = new ArrayList<>();
            for (String line : Files.readAllLines(Path.of(o.dlq), StandardCharsets.UTF_8))
                dead.add(json.readTree(line));
            assertThat(dead).hasSize(EXTRA);
            List<Long> times = new ArrayList<>();
            for (JsonNode d : dead) {
                assertThat(d.get("reason").asText()).isEqualTo("overflow");
                assertThat(d.get("source").asText()).isEqualTo("count-per-counter");
                assertThat(d.get("detail").asText()).contains("counter big").contains("total " + fit);
                JsonNode payload = json.readTree(d.get("payload").asText());
                assertThat(payload.get("counter").asText()).isEqualTo("big");
                assertThat(payload.get("delta").asLong()).isEqualTo(DELTA);
                assertThat(payload.get("events").asLong()).isEqualTo(1);
                times.add(payload.get("ts").asLong());
            }
            assertThat(times).containsExactlyInAnyOrder(START + 70_000, START + 75_000, START + 80_000);
            System.out.printf(
                    "OverflowIT: %,d events in %d ms; big stopped at %d, %d overflow dead letters%n",
                    TOTAL_EVENTS, ms, fit, dead.size());
        }
    }
}
