package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.sketches.RedisHyperLogLog;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * {@link CountPerCounter} keeps counters on the heap between snapshots: whatever the cache budget (from
 * "evict after every record" to "never evict") and across a snapshot and restore in the middle, what
 * reaches Redis and the rollups must be the same, and exact.
 */
class CountPerCounterTest {
    private static final long START = 1_764_000_000_000L;
    private static final int STEPS = 200;
    private static final int RESTORE_AT = 90;
    private static final RedisKeys KEYS = new RedisKeys("rc");

    /** What Redis holds after the writes (version-guarded values, merged sketches) and the rollups emitted. */
    private static final class Result {
        final Map<String, RedisWrite> values = new TreeMap<>();
        final Map<String, RedisHyperLogLog> sketches = new TreeMap<>();
        final List<String> rollups = new ArrayList<>();

        void take(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, RedisWrite> h) {
            for (Object o : h.getOutput()) {
                if (!(o instanceof StreamRecord<?> r)) continue;
                RedisWrite w = (RedisWrite) r.getValue();
                if (w.kind == RedisWrite.HLL) {
                    sketches.computeIfAbsent(w.key, k -> new RedisHyperLogLog()).merge(RedisHyperLogLog.fromRedisBytes(w.bytes));
                } else {
                    values.merge(w.key, w, (a, b) -> b.version >= a.version ? b : a);
                }
            }
            h.getOutput().clear();
            var side = h.getSideOutput(CountPerCounter.ROLLUPS);
            if (side != null) {
                for (StreamRecord<Rollup> r : side) {
                    Rollup u = r.getValue();
                    rollups.add(u.counter + "/" + u.res + "/" + u.start + " sum=" + u.sum + " events=" + u.events
                            + " uniques=" + u.uniques + " rev=" + u.revision);
                }
                side.clear();
            }
        }

        Map<String, Long> counts() {
            Map<String, Long> m = new TreeMap<>();
            values.forEach((k, w) -> m.put(k, w.value));
            return m;
        }

        Map<String, Long> uniques() {
            Map<String, Long> m = new TreeMap<>();
            sketches.forEach((k, s) -> m.put(k, s.count()));
            return m;
        }
    }

    /** The input of one step: partials of 300 skewed counters, some late, some with users, some negative. */
    private static List<PartialSum> step(int step) {
        SplittableRandom random = new SplittableRandom(step * 31L + 7);
        List<PartialSum> out = new ArrayList<>();
        long t = START + step * 1_000L;
        for (int k = 0; k < 40; k++) {
            int c = (int) Math.min(299, Math.abs(random.nextGaussian()) * 40);
            long ts = t - random.nextInt(random.nextInt(10) == 0 ? 40_000 : 3_000);
            PartialSum p = new PartialSum("post:" + c + ":likes", Resolution.S5.windowStart(ts));
            p.add(random.nextInt(20) == 0 ? -1 : 1 + random.nextInt(3), ts, 3_600_000);
            if (random.nextBoolean()) {
                long[] users = new long[1 + random.nextInt(3)];
                for (int u = 0; u < users.length; u++) users[u] = RedisHyperLogLog.hash("u" + random.nextInt(5_000));
                p.users = users;
            }
            out.add(p);
        }
        return out;
    }

    private static KeyedOneInputStreamOperatorTestHarness<String, PartialSum, RedisWrite> harness(long cacheBytes) throws Exception {
        return new KeyedOneInputStreamOperatorTestHarness<>(new CountPerCounter(KEYS, 60_000, 1_000, cacheBytes),
                p -> p.counter, Types.STRING);
    }

    /** Steps {@code from} (inclusive) to {@code to} (exclusive): partials, then processing time, then the watermark. */
    private static void run(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, RedisWrite> h, int from, int to, Result result)
            throws Exception {
        for (int step = from; step < to; step++) {
            for (PartialSum p : step(step)) h.processElement(p, p.bucket);
            h.setProcessingTime(step * 1_000L + 1_000);
            h.processWatermark(new Watermark(START + step * 1_000L - 10_000));
            result.take(h);
        }
    }

    private static void finish(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, RedisWrite> h, Result result) throws Exception {
        h.processWatermark(new Watermark(Long.MAX_VALUE));
        h.endInput();
        h.setProcessingTime(Long.MAX_VALUE / 2);
        result.take(h);
    }

    private static Result uninterrupted(long cacheBytes) throws Exception {
        Result result = new Result();
        try (var h = harness(cacheBytes)) {
            h.open();
            run(h, 0, STEPS, result);
            finish(h, result);
        }
        return result;
    }

    /** Runs to {@link #RESTORE_AT}, snapshots, goes on a while (lost: the failure), restores and replays. */
    private static Result restoredMidway(long cacheBytes) throws Exception {
        Result result = new Result();
        OperatorSubtaskState snapshot;
        try (var h = harness(cacheBytes)) {
            h.open();
            run(h, 0, RESTORE_AT, result);
            snapshot = h.snapshot(1, RESTORE_AT);
            Result lost = new Result();
            run(h, RESTORE_AT, RESTORE_AT + 17, lost);
            // Redis keeps what the failed attempt wrote; rollups of the failed attempt are aborted (transactions).
            lost.values.forEach((k, w) -> result.values.merge(k, w, (a, b) -> b.version >= a.version ? b : a));
            lost.sketches.forEach((k, s) -> result.sketches.computeIfAbsent(k, x -> new RedisHyperLogLog()).merge(s));
        }
        try (var h = harness(cacheBytes)) {
            h.setProcessingTime(RESTORE_AT * 1_000L);
            h.initializeState(snapshot);
            h.open();
            run(h, RESTORE_AT, STEPS, result);
            finish(h, result);
        }
        return result;
    }

    @Test
    void heapCacheChangesNothingWhateverItsBudgetAndAcrossARestore() throws Exception {
        Result reference = uninterrupted(Long.MAX_VALUE);

        // exact: every total is the sum of its partials
        Map<String, Long> totals = new HashMap<>();
        for (int step = 0; step < STEPS; step++) {
            for (PartialSum p : step(step)) totals.merge(KEYS.total(p.counter), p.sum, Long::sum);
        }
        totals.forEach((k, v) -> assertThat(reference.values.get(k).value).as(k).isEqualTo(v));
        assertThat(reference.rollups).isNotEmpty();
        assertThat(reference.sketches).isNotEmpty();

        for (long budget : new long[] {1, 20_000}) {
            Result evicting = uninterrupted(budget);
            assertThat(evicting.counts()).as("Redis values, cache budget " + budget).isEqualTo(reference.counts());
            assertThat(evicting.uniques()).as("sketches, cache budget " + budget).isEqualTo(reference.uniques());
            assertThat(evicting.rollups).as("rollups, cache budget " + budget).containsExactlyInAnyOrderElementsOf(reference.rollups);
        }
        for (long budget : new long[] {1, Long.MAX_VALUE}) {
            Result restored = restoredMidway(budget);
            assertThat(restored.counts()).as("Redis values after a restore, budget " + budget).isEqualTo(reference.counts());
            assertThat(restored.uniques()).as("sketches after a restore, budget " + budget).isEqualTo(reference.uniques());
            assertThat(restored.rollups).as("rollups after a restore, budget " + budget).containsExactlyInAnyOrderElementsOf(reference.rollups);
        }
    }
}
