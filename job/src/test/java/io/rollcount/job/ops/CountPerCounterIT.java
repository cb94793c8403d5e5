package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.redis.CounterUpdateWrites;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisSink;
import io.rollcount.job.redis.RedisSinkWriter;
import io.rollcount.job.redis.TestWriterContext;
import io.rollcount.job.support.RedisTestSupport;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

/**
 * {@link CountPerCounter} keeps counters on the heap between snapshots: whatever the cache budget (from
 * "evict after every record" to "never evict") and across a snapshot, a failed stretch whose writes stay in
 * Redis, and a restore into a new operator, what the real Redis holds (through the real sink writer and
 * script) and the rollups must be the same, and exact.
 */
class CountPerCounterIT {
    /**
     * Within an hour of now (window keys expire at their end plus retention, and must live while checked), and not
     * at the start of a UTC day: the first steps' events reach 40 s back, and a day's 1d window that closed before
     * the snapshot would leave a counter without a 1d window for the restored run to close.
     */
    private static final long START = startHour(System.currentTimeMillis());

    private static long startHour(long now) {
        long hour = now / 3_600_000 * 3_600_000;
        return hour % 86_400_000 == 0 ? hour + 3_600_000 : hour;
    }

    private static final int STEPS = 200;
    private static final int RESTORE_AT = 90;

    /**
     * Where a run's writes go: the real Redis through the real sink writer, under a key prefix of its own,
     * and the rollups emitted (those of a failed attempt are dropped by the caller, as Kafka transactions
     * would abort them).
     */
    private static final class Result implements AutoCloseable {
        final String prefix = "rctest" + Long.toHexString(new SplittableRandom().nextLong() & Long.MAX_VALUE);
        final RedisKeys keys = new RedisKeys(prefix);
        /** The Redis commands of the operator's updates, as the job makes them beside the sink. */
        final CounterUpdateWrites toRedis = new CounterUpdateWrites(keys);

        final Jedis redis = new Jedis("127.0.0.1", 6379);
        RedisSinkWriter writer;
        final List<String> rollups = new ArrayList<>();

        Result() throws Exception {
            writer = newWriter();
        }

        private RedisSinkWriter newWriter() throws Exception {
            return (RedisSinkWriter) RedisSink.builder()
                    .setUrl("redis://127.0.0.1:6379")
                    .setKeyPrefix(prefix)
                    .build()
                    .createWriter(new TestWriterContext());
        }

        /** A restarted task: the writer chained to the operator starts again too, and finds the mark of the one before. */
        void restartWriter() throws Exception {
            writer.close();
            writer = newWriter();
        }

        void take(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h, boolean keepRollups)
                throws Exception {
            for (Object o : h.getOutput()) {
                if (o instanceof StreamRecord<?> r) writer.write(toRedis.map((CounterUpdate) r.getValue()), null);
            }
            writer.flush(false);
            h.getOutput().clear();
            var side = h.getSideOutput(CountPerCounter.ROLLUPS);
            if (side != null) {
                for (StreamRecord<Rollup> r : side) {
                    Rollup u = r.getValue();
                    if (keepRollups) {
                        rollups.add(u.counter + "/" + u.res + "/" + u.start + " sum=" + u.sum + " events=" + u.events
                                + " uniques=" + u.uniques + " rev=" + u.revision);
                    }
                }
                side.clear();
            }
        }

        /** The contract's keys (no bookkeeping), without the prefix: counts as text, sketches as PFCOUNT. */
        Map<String, String> redisContents() {
            Map<String, String> m = new TreeMap<>();
            for (String k : RedisTestSupport.keysOf(redis, prefix)) {
                String name = k.substring(prefix.length());
                if (name.contains(":_")) continue;
                m.put(name, name.contains("}:u:") ? "pfcount=" + redis.pfcount(k) : redis.get(k));
            }
            return m;
        }

        @Override
        public void close() throws Exception {
            writer.close();
            RedisTestSupport.deleteAll(redis, prefix);
            redis.close();
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
                String[] users = new String[1 + random.nextInt(3)];
                for (int u = 0; u < users.length; u++) users[u] = "u" + random.nextInt(5_000);
                p.users = java.util.Arrays.stream(users).distinct().toArray(String[]::new);
            }
            out.add(p);
        }
        return out;
    }

    private static KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> harness(
            Result r, long cacheBytes) throws Exception {
        return new KeyedOneInputStreamOperatorTestHarness<>(
                new CountPerCounter(CountPerCounterSettings.of(60_000, 1_000)
                        .withCacheBytes(cacheBytes)
                        .withSliceMillis(Long.MAX_VALUE)),
                p -> p.counter,
                Types.STRING);
    }

    /** Steps {@code from} (inclusive) to {@code to} (exclusive): partials, then processing time, then the watermark. */
    private static void run(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h,
            int from,
            int to,
            Result result,
            boolean keepRollups)
            throws Exception {
        for (int step = from; step < to; step++) {
            for (PartialSum p : step(step)) h.processElement(p, p.bucket);
            h.setProcessingTime(step * 1_000L + 1_000);
            h.processWatermark(new Watermark(START + step * 1_000L - 10_000));
            result.take(h, keepRollups);
        }
    }

    private static void finish(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h, Result result)
            throws Exception {
        h.processWatermark(new Watermark(Long.MAX_VALUE));
        h.endInput();
        h.setProcessingTime(Long.MAX_VALUE / 2);
        result.take(h, true);
    }

    private static Result uninterrupted(long cacheBytes) throws Exception {
        Result result = new Result();
        try (var h = harness(result, cacheBytes)) {
            h.open();
            run(h, 0, STEPS, result, true);
            finish(h, result);
        }
        return result;
    }

    /**
     * Runs to {@link #RESTORE_AT}, snapshots, goes on a while (its Redis writes stay, its rollups are lost:
     * the failed attempt), then restores into a new operator and writer (which guards what a replay can reach) and replays from the snapshot.
     */
    private static Result restoredMidway(long cacheBytes) throws Exception {
        Result result = new Result();
        OperatorSubtaskState snapshot;
        try (var h = harness(result, cacheBytes)) {
            h.open();
            run(h, 0, RESTORE_AT, result, true);
            snapshot = h.snapshot(1, RESTORE_AT);
            run(h, RESTORE_AT, RESTORE_AT + 17, result, false);
        }
        result.restartWriter();
        try (var h = harness(result, cacheBytes)) {
            h.setProcessingTime(RESTORE_AT * 1_000L);
            h.initializeState(snapshot);
            h.open();
            run(h, RESTORE_AT, STEPS, result, true);
            finish(h, result);
        }
        return result;
    }

    /**
     * No keyed timer and no keyed state written between snapshots while the cache holds every counter (the
     * due index is on the heap); the snapshot stores them; after restoring it into a new operator, the
     * index rebuilt from keyed state closes every window that was open (the rollups of the restored run
     * are those of an uninterrupted one, checked above), here checked on its own: each counter's windows close.
     */
    @Test
    void noKeyedTimersAndKeyedStateWrittenOnlyAtSnapshots() throws Exception {
        try (Result result = new Result()) {
            OperatorSubtaskState snapshot;
            try (var h = harness(result, Long.MAX_VALUE)) {
                h.open();
                run(h, 0, 30, result, true);
                assertThat(h.numEventTimeTimers()).as("keyed event-time timers").isZero();
                assertThat(h.numKeyedStateEntries())
                        .as("keyed state entries before a snapshot")
                        .isZero();
                snapshot = h.snapshot(1, 30);
                assertThat(h.numKeyedStateEntries())
                        .as("keyed state entries after a snapshot")
                        .isPositive();
            }
            result.rollups.clear();
            result.restartWriter();
            try (var h = harness(result, Long.MAX_VALUE)) {
                h.initializeState(snapshot);
                h.open();
                finish(h, result); // no new input: only the rebuilt index can close the restored windows
            }
            Map<String, Long> lastSeconds = new HashMap<>();
            for (int step = 0; step < 30; step++) {
                for (PartialSum p : step(step)) lastSeconds.merge(p.counter, p.bucket, Math::max);
            }
            // every counter's 1d window closed after the restore (rollups of every resolution in this harness)
            for (String counter : lastSeconds.keySet()) {
                assertThat(result.rollups).as("1d rollup of " + counter).anyMatch(r -> r.startsWith(counter + "/1d/"));
            }
        }
    }

    /** With a rollup mask, only those resolutions' closed windows and revisions are emitted; Redis gets every resolution. */
    @Test
    void rollupsOnlyOfTheChosenResolutions() throws Exception {
        int mask = (1 << Resolution.M1.ordinal()) | (1 << Resolution.D1.ordinal());
        try (Result all = uninterrupted(Long.MAX_VALUE);
                Result chosen = new Result()) {
            try (var h = new KeyedOneInputStreamOperatorTestHarness<>(
                    new CountPerCounter(CountPerCounterSettings.of(60_000, 1_000)
                            .withCacheBytes(Long.MAX_VALUE)
                            .withRollupMask(mask)
                            .withSliceMillis(Long.MAX_VALUE)),
                    (PartialSum p) -> p.counter,
                    Types.STRING)) {
                h.open();
                run(h, 0, STEPS, chosen, true);
                finish(h, chosen);
            }
            List<String> expected = all.rollups.stream()
                    .filter(r -> r.contains("/1m/") || r.contains("/1d/"))
                    .toList();
            assertThat(expected).anyMatch(r -> r.contains("/1m/") && !r.endsWith("rev=0")); // revisions among them
            assertThat(chosen.rollups).containsExactlyInAnyOrderElementsOf(expected);
            assertThat(chosen.redisContents()).isEqualTo(all.redisContents());
        }
    }

    @Test
    void heapCacheChangesNothingWhateverItsBudgetAndAcrossARestore() throws Exception {
        try (Result reference = uninterrupted(Long.MAX_VALUE)) {
            Map<String, String> expected = reference.redisContents();
            // exact: every total is the sum of its partials
            Map<String, Long> totals = new HashMap<>();
            for (int step = 0; step < STEPS; step++) {
                for (PartialSum p : step(step)) totals.merge(":{" + p.counter + "}:total", p.sum, Long::sum);
            }
            totals.forEach((k, v) -> assertThat(expected.get(k)).as(k).isEqualTo(Long.toString(v)));
            assertThat(expected.keySet()).anyMatch(k -> k.contains("}:u:1h:")).anyMatch(k -> k.endsWith("}:u:all"));
            assertThat(reference.rollups).isNotEmpty();

            for (long budget : new long[] {1, 20_000}) {
                try (Result evicting = uninterrupted(budget)) {
                    assertThat(evicting.redisContents())
                            .as("Redis, cache budget " + budget)
                            .isEqualTo(expected);
                    assertThat(evicting.rollups)
                            .as("rollups, cache budget " + budget)
                            .containsExactlyInAnyOrderElementsOf(reference.rollups);
                }
            }
            for (long budget : new long[] {1, Long.MAX_VALUE}) {
                try (Result restored = restoredMidway(budget)) {
                    assertThat(restored.redisContents())
                            .as("Redis after a restore, budget " + budget)
                            .isEqualTo(expected);
                    assertThat(restored.rollups)
                            .as("rollups after a restore, budget " + budget)
                            .containsExactlyInAnyOrderElementsOf(reference.rollups);
                }
            }
        }
    }

    /**
     * A snapshot of one subtask restored into two (another parallelism, keys split by key group): each
     * new subtask rebuilds its due index from the counters of its own key groups only, and together they
     * write to Redis and emit exactly what one uninterrupted subtask does.
     */
    @Test
    void restoredAtAnotherParallelismTheSameOutputs() throws Exception {
        int maxParallelism = 128;
        try (Result reference = uninterrupted(Long.MAX_VALUE);
                Result rescaled = new Result()) {
            OperatorSubtaskState snapshot;
            try (var h = new KeyedOneInputStreamOperatorTestHarness<>(
                    new CountPerCounter(CountPerCounterSettings.of(60_000, 1_000)
                            .withCacheBytes(20_000)
                            .withSliceMillis(Long.MAX_VALUE)),
                    (PartialSum p) -> p.counter,
                    Types.STRING,
                    maxParallelism,
                    1,
                    0)) {
                h.open();
                run(h, 0, RESTORE_AT, rescaled, true);
                snapshot = h.snapshot(1, RESTORE_AT);
            }
            rescaled.restartWriter();
            List<KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate>> subtasks =
                    new ArrayList<>();
            try {
                for (int i = 0; i < 2; i++) {
                    var h = new KeyedOneInputStreamOperatorTestHarness<>(
                            new CountPerCounter(CountPerCounterSettings.of(60_000, 1_000)
                                    .withCacheBytes(20_000)
                                    .withSliceMillis(Long.MAX_VALUE)),
                            (PartialSum p) -> p.counter,
                            Types.STRING,
                            maxParallelism,
                            2,
                            i);
                    subtasks.add(h);
                    h.setProcessingTime(RESTORE_AT * 1_000L);
                    h.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(
                            snapshot, maxParallelism, 1, 2, i));
                    h.open();
                }
                for (int step = RESTORE_AT; step < STEPS; step++) {
                    for (PartialSum p : step(step)) {
                        subtasks.get(KeyGroupRangeAssignment.assignKeyToParallelOperator(p.counter, maxParallelism, 2))
                                .processElement(p, p.bucket);
                    }
                    for (var h : subtasks) {
                        h.setProcessingTime(step * 1_000L + 1_000);
                        h.processWatermark(new Watermark(START + step * 1_000L - 10_000));
                        rescaled.take(h, true);
                    }
                }
                for (var h : subtasks) finish(h, rescaled);
            } finally {
                for (var h : subtasks) h.close();
            }
            assertThat(rescaled.redisContents())
                    .as("Redis after a restore at parallelism 2")
                    .isEqualTo(reference.redisContents());
            assertThat(rescaled.rollups)
                    .as("rollups after a restore at parallelism 2")
                    .containsExactlyInAnyOrderElementsOf(reference.rollups);
        }
    }
}
