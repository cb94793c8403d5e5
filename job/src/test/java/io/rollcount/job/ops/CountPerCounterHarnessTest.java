package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link CountPerCounter} alone in Flink's operator test harness, without Redis: what it emits is
 * {@link CounterUpdate}s, checked here as they are (sums per window and totals, their expiry, revisions by
 * late events within the allowed lateness), and its {@link CounterStore} across a snapshot and a restore
 * into a new operator, on the heap and on RocksDB, with and without evictions.
 */
class CountPerCounterHarnessTest {
    private static final long LATENESS = 60_000;
    /** The start of the current hour: recent event times, and 1m, 5m and 1h windows that all start here. */
    private static final long START = System.currentTimeMillis() / 3_600_000 * 3_600_000;

    private static final long DAY = Resolution.D1.windowStart(START);

    private static KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> harness(
            long cacheBytes, boolean rocksdb) throws Exception {
        return harness(
                new CountPerCounter(CountPerCounterSettings.of(LATENESS, 1_000)
                        .withCacheBytes(cacheBytes)
                        .withSliceMillis(Long.MAX_VALUE)),
                rocksdb);
    }

    /** {@code op} in a harness keyed by counter, on RocksDB or on the heap. */
    static KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> harness(
            CountPerCounter op, boolean rocksdb) throws Exception {
        var h = new KeyedOneInputStreamOperatorTestHarness<>(op, (PartialSum p) -> p.counter, Types.STRING);
        if (rocksdb) h.setStateBackend(new EmbeddedRocksDBStateBackend());
        return h;
    }

    private static PartialSum partial(String counter, long ts, long delta, String... users) {
        PartialSum p = new PartialSum(counter, Resolution.S5.windowStart(ts));
        p.add(delta, ts, 3_600_000);
        p.users = users;
        return p;
    }

    private static void send(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h, PartialSum p)
            throws Exception {
        h.processElement(p, p.bucket);
    }

    /** The updates emitted since the last call, in order; the output is cleared. */
    static List<CounterUpdate> take(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h) {
        List<CounterUpdate> out = new ArrayList<>();
        for (Object o : h.getOutput()) if (o instanceof StreamRecord<?> r) out.add((CounterUpdate) r.getValue());
        h.getOutput().clear();
        return out;
    }

    /** COUNT updates by {@code counter/total} or {@code counter/<res>@<start>}, the last one of each. */
    private static Map<String, CounterUpdate> counts(List<CounterUpdate> updates) {
        Map<String, CounterUpdate> m = new LinkedHashMap<>();
        for (CounterUpdate u : updates) {
            if (u.kind == CounterUpdate.COUNT) m.put(name(u), u);
        }
        return m;
    }

    private static String name(CounterUpdate u) {
        if (u.allTime()) return u.counter + (u.kind == CounterUpdate.COUNT ? "/total" : "/all");
        return u.counter + "/" + u.resolution.label + "@" + (u.windowStart - START);
    }

    private static Map<String, Long> values(Map<String, CounterUpdate> counts) {
        Map<String, Long> m = new TreeMap<>();
        counts.forEach((k, u) -> m.put(k, u.value));
        return m;
    }

    /** The rollups emitted since the last call, as text; the side output is cleared. */
    private static List<String> rollups(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h) {
        List<String> out = new ArrayList<>();
        ConcurrentLinkedQueue<StreamRecord<Rollup>> side = h.getSideOutput(CountPerCounter.ROLLUPS);
        if (side == null) return out;
        for (StreamRecord<Rollup> r : side) {
            Rollup u = r.getValue();
            out.add(u.counter + "/" + u.res + "@" + (u.start - START) + " sum=" + u.sum + " events=" + u.events
                    + " uniques=" + u.uniques + " rev=" + u.revision);
        }
        side.clear();
        return out;
    }

    /** How many counters keyed state holds. */
    private static long counterKeys(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h) {
        KeyedStateBackend<String> backend = h.getOperator().getKeyedStateBackend();
        try (var keys = backend.getKeys("counter", VoidNamespace.INSTANCE)) {
            return keys.count();
        }
    }

    /** The counter's state as keyed state holds it (what a checkpoint gets), or null. */
    private static CounterState stored(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h, String counter)
            throws Exception {
        KeyedStateBackend<String> backend = h.getOperator().getKeyedStateBackend();
        backend.setCurrentKey(counter);
        return backend.getPartitionedState(
                        VoidNamespace.INSTANCE,
                        VoidNamespaceSerializer.INSTANCE,
                        new ValueStateDescriptor<>("counter", TypeInformation.of(CounterState.class)))
                .value();
    }

    @Test
    void anAutoCounterCacheIsAQuarterOfTheHeapPerSlotWithinItsBounds() {
        assertThat(CountPerCounterSettings.autoCacheBytes(4L << 30, 2)).isEqualTo(128L << 20); // 512 MB: the cap
        assertThat(CountPerCounterSettings.autoCacheBytes(416L << 20, 2)).isEqualTo(52L << 20); // deploy/local-cluster
        assertThat(CountPerCounterSettings.autoCacheBytes(128L << 20, 4)).isEqualTo(16L << 20); // 8 MB: the floor
        assertThat(CountPerCounterSettings.autoCacheBytes(Long.MAX_VALUE, 1)).isEqualTo(128L << 20); // no -Xmx known
        assertThat(CountPerCounterSettings.autoCacheBytes(1L << 30, 0)).isEqualTo(128L << 20); // slots unknown: one
        org.assertj.core.api.Assertions.assertThatThrownBy(
                        () -> CountPerCounterSettings.of(LATENESS, 1_000).withCacheBytes(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("counter cache must be > 0 bytes");
    }

    @Test
    void anAutoCounterCacheCountsAsAGivenOneDoes() throws Exception {
        try (var h = harness(CountPerCounter.AUTO_CACHE_BYTES, true)) {
            h.open();
            send(h, partial("a", START + 1_000, 1));
            send(h, partial("a", START + 3_000, 2));
            h.setProcessingTime(1_000); // the flush
            assertThat(counts(take(h)))
                    .containsKey("a/total")
                    .satisfies(m -> assertThat(m.get("a/total").value).isEqualTo(3L));
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void sumsPerWindowAndTotalsWithTheirExpiryAtMostOncePerFlush(boolean rocksdb) throws Exception {
        try (var h = harness(CountPerCounter.DEFAULT_CACHE_BYTES, rocksdb)) {
            h.open();
            send(h, partial("a", START + 1_000, 1));
            send(h, partial("a", START + 3_000, 2));
            send(h, partial("a", START + 7_000, 4));
            send(h, partial("a", START + 61_000, -1));
            send(h, partial("b", START + 2_000, 5, "u1", "u2"));

            assertThat(take(h)).as("nothing before the flush").isEmpty();

            h.setProcessingTime(1_000); // the flush
            List<CounterUpdate> flushed = take(h);
            // b's users: the 1h and 1d windows' and all time's
            List<CounterUpdate> users =
                    flushed.stream().filter(u -> u.kind == CounterUpdate.USERS).toList();
            assertThat(users)
                    .extracting(CountPerCounterHarnessTest::name)
                    .containsExactly("b/1h@0", "b/1d@" + (DAY - START), "b/all");
            assertThat(users).allMatch(u -> List.of(u.users).equals(List.of("u1", "u2")));
            assertThat(users.get(0).expireAtMillis).isEqualTo(Resolution.H1.expireAtMillis(START));
            assertThat(users.get(1).expireAtMillis).isEqualTo(Resolution.D1.expireAtMillis(DAY));
            assertThat(users.get(2).expireAtMillis).isZero();
            Map<String, CounterUpdate> counts = counts(flushed);
            assertThat(flushed)
                    .as("one update per changed value, and b's users")
                    .hasSize(counts.size() + 3);
            long d = DAY - START;
            Map<String, Long> expected = new TreeMap<>(Map.ofEntries(
                    Map.entry("a/total", 6L),
                    Map.entry("a/5s@0", 3L),
                    Map.entry("a/5s@5000", 4L),
                    Map.entry("a/5s@60000", -1L),
                    Map.entry("a/1m@0", 7L),
                    Map.entry("a/1m@60000", -1L),
                    Map.entry("a/5m@0", 6L),
                    Map.entry("a/1h@0", 6L),
                    Map.entry("a/1d@" + d, 6L),
                    Map.entry("b/total", 5L),
                    Map.entry("b/5s@0", 5L),
                    Map.entry("b/1m@0", 5L),
                    Map.entry("b/5m@0", 5L),
                    Map.entry("b/1h@0", 5L),
                    Map.entry("b/1d@" + d, 5L)));
            assertThat(values(counts)).isEqualTo(expected);
            // events and "may go down" per value
            assertThat(counts.get("a/total").events).isEqualTo(4);
            assertThat(counts.get("a/total").negative).isTrue();
            assertThat(counts.get("a/5s@0").events).isEqualTo(2);
            assertThat(counts.get("a/5s@0").negative).isFalse();
            assertThat(counts.get("a/1m@60000").negative).isTrue();
            assertThat(counts.get("a/1m@0").negative).isFalse();
            // expiry: a window's end plus its resolution's retention; the total none
            for (CounterUpdate u : counts.values()) {
                long expiry = u.allTime() ? 0 : u.resolution.expireAtMillis(u.windowStart);
                assertThat(u.expireAtMillis).as(name(u)).isEqualTo(expiry);
            }
            assertThat(counts.get("a/total").windowStart).isEqualTo(CounterUpdate.NO_WINDOW);

            // Nothing changed: the next flush emits nothing; one more partial: only what it changed.
            h.setProcessingTime(2_000);
            assertThat(take(h)).isEmpty();
            send(h, partial("a", START + 8_000, 10));
            h.setProcessingTime(3_000);
            assertThat(values(counts(take(h))))
                    .isEqualTo(new TreeMap<>(Map.of(
                            "a/total",
                            16L,
                            "a/5s@5000",
                            14L,
                            "a/1m@0",
                            17L,
                            "a/5m@0",
                            16L,
                            "a/1h@0",
                            16L,
                            "a/1d@" + d,
                            16L)));
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aLateEventWithinTheLatenessRevisesItsClosedWindowAndTheWindowIsDroppedAfter(boolean rocksdb) throws Exception {
        try (var h = harness(CountPerCounter.DEFAULT_CACHE_BYTES, rocksdb)) {
            h.open();
            send(h, partial("a", START + 1_000, 1, "u1"));
            h.setProcessingTime(1_000);
            take(h);
            // The 5 s window [START, START + 5 s) closes: revision 0, and its value once more.
            h.processWatermark(new Watermark(START + 4_999));
            assertThat(rollups(h)).containsExactly("a/5s@0 sum=1 events=1 uniques=null rev=0");
            assertThat(values(counts(take(h)))).isEmpty(); // written at the flush already, unchanged since

            // A late event (in its window's lateness) changes the closed window: a revision at the next flush.
            send(h, partial("a", START + 2_000, 2, "u2"));
            assertThat(rollups(h)).isEmpty();
            h.setProcessingTime(2_000);
            assertThat(rollups(h)).containsExactly("a/5s@0 sum=3 events=2 uniques=null rev=1");
            assertThat(values(counts(take(h))))
                    .containsEntry("a/5s@0", 3L)
                    .containsEntry("a/1m@0", 3L)
                    .containsEntry("a/total", 3L);

            // The 1m window closes: its rollup and its sum for the window top-K.
            h.processWatermark(new Watermark(START + 59_999));
            assertThat(rollups(h)).containsExactly("a/1m@0 sum=3 events=2 uniques=null rev=0");
            assertThat(h.getSideOutput(CountPerCounter.CLOSED_WINDOWS))
                    .extracting(StreamRecord::getValue)
                    .extracting(w -> w.counter + "/" + w.res + "@" + (w.start - START) + "=" + w.sum)
                    .containsExactly("a/1m@0=3");

            // Past the 5 s window's end plus the lateness it is final: its state goes at the counter's next
            // visit (here its next new window), not in a visit of its own.
            h.processWatermark(new Watermark(START + 5_000 + LATENESS));
            h.snapshot(1, 3_000);
            assertThat(stored(h, "a").find(Resolution.S5, START))
                    .as("the final 5 s window's slot, before the counter's next visit")
                    .isNotNegative();
            send(h, partial("a", START + 66_000, 0)); // an event of delta 0: counted as an event, changes no sum
            h.snapshot(2, 3_000);
            CounterState s = stored(h, "a");
            assertThat(s.find(Resolution.S5, START))
                    .as("the final 5 s window's slot")
                    .isEqualTo(-1);
            assertThat(s.find(Resolution.M1, START))
                    .as("the 1m window, within its lateness")
                    .isNotNegative();
            assertThat(s.total).isEqualTo(3);
            assertThat(rollups(h)).as("no revision for an event of zero").isEmpty();

            // The end of input closes every window: the hour's and the day's rollups carry their unique users.
            h.processWatermark(new Watermark(Long.MAX_VALUE));
            assertThat(rollups(h))
                    .contains(
                            "a/1h@0 sum=3 events=3 uniques=2 rev=0",
                            "a/1d@" + (DAY - START) + " sum=3 events=3 uniques=2 rev=0",
                            "a/5m@0 sum=3 events=3 uniques=null rev=0");
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void windowsDueTogetherCloseInSlicesWithTheWatermarkHeldUntilTheLastAndASnapshotBetweenSlices(boolean rocksdb)
            throws Exception {
        int counters = 500;
        OperatorSubtaskState between;
        List<String> closedBefore = new ArrayList<>();
        try (var h = sliced(CountPerCounter.ALL_RESOLUTIONS, rocksdb)) {
            h.open();
            onePartialEachFlushed(h, counters);
            // The 1m windows of every counter close at once: one slice (64 counters, then the clock says its 0 ms
            // are up), the watermark held back.
            h.processWatermark(new Watermark(START + 59_999));
            List<String> first = rollupsOf(h, Resolution.M1);
            assertThat(first).hasSizeBetween(1, counters - 1);
            assertThat(watermarks(h))
                    .as("the watermark, held while windows are due")
                    .isEmpty();
            // A record between slices is counted, in its counter's window that is still to close.
            send(h, partial("c" + (counters - 1), START + 2_000, 5));
            // A snapshot between slices: the restore below finishes the closes it has not seen done.
            between = h.snapshot(1, 1_000);
            closedBefore.addAll(first);
            List<String> all = new ArrayList<>(first);
            for (int round = 0; round < counters && watermarks(h).isEmpty(); round++) {
                h.setProcessingTime(1_000); // the next slice, a mail of the mailbox in a real task
                all.addAll(rollupsOf(h, Resolution.M1));
            }
            assertThat(all).as("every 1m window closed once").hasSize(counters).doesNotHaveDuplicates();
            assertThat(all).contains("c" + (counters - 1) + "/1m@0 sum=6 events=2 uniques=null rev=0");
            assertThat(watermarks(h)).containsExactly(START + 59_999);
        }
        try (var h = sliced(CountPerCounter.ALL_RESOLUTIONS, rocksdb)) {
            h.setProcessingTime(1_000);
            h.initializeState(between);
            h.open();
            h.processWatermark(new Watermark(Long.MAX_VALUE)); // the end of input: all at once
            List<String> rest = rollupsOf(h, Resolution.M1);
            assertThat(rest)
                    .as("after the restore, the 1m windows not closed before the snapshot")
                    .hasSize(counters - closedBefore.size())
                    .doesNotContainAnyElementsOf(closedBefore);
            assertThat(watermarks(h)).containsExactly(Long.MAX_VALUE);
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aWindowThatBecomesFinalBeforeItsChangeIsFlushedIsWrittenBeforeItGoes(boolean rocksdb) throws Exception {
        int rollups = 1 << Resolution.M1.ordinal() | 1 << Resolution.H1.ordinal() | 1 << Resolution.D1.ordinal();
        int counters = 300;
        String last = "c" + (counters - 1);
        try (var h = sliced(rollups, rocksdb)) {
            h.open();
            onePartialEachFlushed(h, counters);
            // A late event (within the lateness) changes the last counter's 5 s window; before the next flush,
            // the watermark passes that window's end plus the lateness while the 1m closes it makes due are
            // still in slices, and the counter's next partial opens new windows, which drops its final ones:
            // the 5 s window's change goes out first.
            send(h, partial(last, START + 2_000, 1));
            h.processWatermark(new Watermark(START + 5_000 + LATENESS));
            assertThat(watermarks(h)).as("the 1m closes still in slices").isEmpty();
            send(h, partial(last, START + 70_000, 3));
            Map<String, Long> values = new TreeMap<>();
            for (int round = 0; round < counters && watermarks(h).isEmpty(); round++) {
                values.putAll(values(counts(take(h))));
                h.setProcessingTime(1_000);
            }
            h.setProcessingTime(2_000);
            values.putAll(values(counts(take(h))));
            assertThat(values)
                    .containsEntry(last + "/5s@0", 2L)
                    .containsEntry(last + "/5s@70000", 3L)
                    .containsEntry(last + "/total", 5L);
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aChangeNotYetEmittedAtTheSnapshotIsEmittedAtTheFirstFlushAfterTheRestore(boolean rocksdb) throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = harness(CountPerCounter.DEFAULT_CACHE_BYTES, rocksdb)) {
            h.open();
            send(h, partial("a", START + 1_000, 4));
            snapshot = h.snapshot(1, 500); // before the flush at 1 s
        }
        try (var h = harness(CountPerCounter.DEFAULT_CACHE_BYTES, rocksdb)) {
            h.setProcessingTime(500);
            h.initializeState(snapshot);
            h.open();
            h.setProcessingTime(1_000); // no record, no watermark: the first flush
            assertThat(values(counts(take(h))))
                    .containsEntry("a/total", 4L)
                    .containsEntry("a/5s@0", 4L)
                    .containsEntry("a/1m@0", 4L);
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aCloseOfEveryCounterAtOnceKeepsTheHeapWithinTheCacheBudget(boolean rocksdb) throws Exception {
        int counters = 2_000;
        try (var h = harness(1, rocksdb)) {
            h.open();
            onePartialEachFlushed(h, counters);
            // The 1m windows of every counter close in one drain (no slices, no flush in between), as at the end
            // of input: each counter is read, closed, written back and evicted; none waits on the heap for a flush.
            h.processWatermark(new Watermark(START + 59_999));
            assertThat(rollupsOf(h, Resolution.M1)).hasSize(counters).doesNotHaveDuplicates();
            CountPerCounter op = (CountPerCounter) h.getOperator();
            assertThat(op.listedForFlush())
                    .as("counters listed for a flush after the close")
                    .isZero();
            assertThat(op.cached())
                    .as("counters on the heap, with a cache budget of 1 byte")
                    .isLessThanOrEqualTo(1);
        }
    }

    /** A harness whose operator does its due work in slices of 0 ms (64 counters each), not opened. */
    private static KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> sliced(
            int rollupMask, boolean rocksdb) throws Exception {
        var h = new KeyedOneInputStreamOperatorTestHarness<>(
                new CountPerCounter(CountPerCounterSettings.of(LATENESS, 1_000)
                        .withRollupMask(rollupMask)
                        .withSliceMillis(0)),
                (PartialSum p) -> p.counter,
                Types.STRING);
        if (rocksdb) h.setStateBackend(new EmbeddedRocksDBStateBackend());
        return h;
    }

    /** Counters {@code c0..}: one partial sum each at {@code START + 1 s}, flushed; the output cleared. */
    private static void onePartialEachFlushed(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h, int counters)
            throws Exception {
        for (int c = 0; c < counters; c++) send(h, partial("c" + c, START + 1_000, 1));
        h.setProcessingTime(1_000);
        take(h);
    }

    private static List<String> rollupsOf(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h, Resolution r) {
        return rollups(h).stream().filter(x -> x.contains("/" + r.label + "@")).toList();
    }

    private static List<Long> watermarks(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h) {
        List<Long> out = new ArrayList<>();
        for (Object o : h.getOutput()) if (o instanceof Watermark w) out.add(w.getTimestamp());
        return out;
    }

    /** A run's whole output by name: the last value of each, and every rollup. */
    private record Run(Map<String, Long> values, List<String> rollups) {}

    private static List<PartialSum> step(int step) {
        List<PartialSum> out = new ArrayList<>();
        for (int c = 0; c < 12; c++) {
            if ((step + c) % 3 == 0) continue;
            long ts = START + step * 4_000L + c * 10L;
            out.add(partial("post:" + c, ts, 1 + (c % 4), "u" + (step % 5), "v" + c));
        }
        return out;
    }

    private static void steps(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h,
            int from,
            int to,
            Map<String, Long> values,
            List<String> rollups)
            throws Exception {
        for (int step = from; step < to; step++) {
            for (PartialSum p : step(step)) send(h, p);
            h.setProcessingTime(step * 1_000L + 1_000);
            h.processWatermark(new Watermark(START + step * 4_000L - 5_000));
            values.putAll(values(counts(take(h))));
            rollups.addAll(rollups(h));
        }
    }

    private static Run uninterrupted(long cacheBytes, boolean rocksdb) throws Exception {
        Map<String, Long> values = new TreeMap<>();
        List<String> rollups = new ArrayList<>();
        try (var h = harness(cacheBytes, rocksdb)) {
            h.open();
            steps(h, 0, 40, values, rollups);
            h.processWatermark(new Watermark(Long.MAX_VALUE));
            values.putAll(values(counts(take(h))));
            rollups.addAll(rollups(h));
        }
        return new Run(values, rollups);
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void theStoreWritesTheHeapBackAtASnapshotAndARestoreGoesOnFromIt(boolean rocksdb) throws Exception {
        Run reference = uninterrupted(Long.MAX_VALUE, rocksdb);
        Map<String, Long> totals = new HashMap<>();
        for (int step = 0; step < 40; step++) {
            for (PartialSum p : step(step)) totals.merge(p.counter + "/total", p.sum, Long::sum);
        }
        totals.forEach((k, v) -> assertThat(reference.values()).containsEntry(k, v));

        Map<String, Long> values = new TreeMap<>();
        List<String> rollups = new ArrayList<>();
        OperatorSubtaskState snapshot;
        Map<String, Long> totalsAtSnapshot = new HashMap<>();
        try (var h = harness(Long.MAX_VALUE, rocksdb)) {
            h.open();
            steps(h, 0, 20, values, rollups);
            assertThat(counterKeys(h))
                    .as("counters in keyed state before the snapshot: every counter on the heap")
                    .isZero();
            snapshot = h.snapshot(1, 20_000);
            assertThat(counterKeys(h))
                    .as("counters in keyed state after the snapshot")
                    .isEqualTo(12);
            for (int c = 0; c < 12; c++) {
                CounterState s = stored(h, "post:" + c);
                assertThat(s).as("post:" + c + " written back").isNotNull();
                assertThat(s.total).isEqualTo(values.get("post:" + c + "/total"));
                totalsAtSnapshot.put("post:" + c, s.total);
            }
            // What comes after the snapshot is lost with this attempt (its outputs too): the restore replays it.
            steps(h, 20, 25, new TreeMap<>(), new ArrayList<>());
        }
        try (var h = harness(Long.MAX_VALUE, rocksdb)) {
            h.setProcessingTime(20_000);
            h.initializeState(snapshot);
            h.open();
            steps(h, 20, 40, values, rollups);
            h.processWatermark(new Watermark(Long.MAX_VALUE));
            values.putAll(values(counts(take(h))));
            rollups.addAll(rollups(h));
        }
        assertThat(values).as("every value, across the restore").isEqualTo(reference.values());
        assertThat(rollups)
                .as("every rollup, across the restore")
                .containsExactlyInAnyOrderElementsOf(reference.rollups());
        assertThat(totalsAtSnapshot).allSatisfy((c, t) -> assertThat(t).isLessThan(totals.get(c + "/total")));
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void evictionsWriteBackToKeyedStateAndChangeNothing(boolean rocksdb) throws Exception {
        Run reference = uninterrupted(Long.MAX_VALUE, rocksdb);
        try (var h = harness(1, rocksdb)) {
            h.open();
            steps(h, 0, 3, new TreeMap<>(), new ArrayList<>());
            assertThat(counterKeys(h))
                    .as("counters in keyed state before any snapshot: evicted counters written back")
                    .isPositive();
        }
        Run evicting = uninterrupted(1, rocksdb);
        assertThat(evicting.values()).isEqualTo(reference.values());
        assertThat(evicting.rollups()).containsExactlyInAnyOrderElementsOf(reference.rollups());
    }

    @Test
    void countsKeyedStateReadsAndDueVisits() throws Exception {
        // a budget of a few hundred bytes holds one counter: each of the others was evicted when it is visited
        for (long cache : new long[] {CountPerCounter.DEFAULT_CACHE_BYTES, 300}) {
            try (var h = harness(cache, true)) {
                h.open();
                for (String c : List.of("a", "b", "c")) send(h, partial(c, START + 1_000, 1));
                long[] first = ((CountPerCounter) h.getOperator()).readsAndVisits();
                assertThat(first).as("cache " + cache).containsExactly(3, 0); // each counter read once, none due
                send(h, partial("a", START + 2_000, 1));
                h.processWatermark(new Watermark(START + 3_600_000 + LATENESS));
                long[] after = ((CountPerCounter) h.getOperator()).readsAndVisits();
                assertThat(after[1]).as("visits, cache " + cache).isGreaterThanOrEqualTo(3);
                if (cache == 300)
                    assertThat(after[0])
                            .as("evicted counters read at their visits")
                            .isGreaterThan(4);
                else
                    assertThat(after[0])
                            .as("counters on the heap are not read again")
                            .isEqualTo(3);
            }
        }
    }

    @Test
    void aWindowsFirstUsersReadNoSketchFromKeyedState() throws Exception {
        // another hour of START's day (the one before where START is the day's last hour)
        long other = START - DAY >= 23 * 3_600_000L ? START - 3_600_000 : START + 3_600_000;
        // a budget of a few hundred bytes holds one counter: "a" and "b" evict each other
        try (var h = harness(300, true)) {
            h.open();
            send(h, partial("a", START + 1_000, 1, "u1"));
            send(h, partial("b", START + 1_000, 1, "u1"));
            long before = reads(h);
            send(h, partial("a", other + 1_000, 1, "u2"));
            assertThat(reads(h) - before)
                    .as("a's state and its 1d sketch: its new 1h window has no sketch to read")
                    .isEqualTo(2);
            send(h, partial("b", START + 2_000, 1, "u3"));
            before = reads(h);
            send(h, partial("a", other + 2_000, 1, "u3"));
            assertThat(reads(h) - before)
                    .as("a's state, its 1h and its 1d sketch: both windows have had users")
                    .isEqualTo(3);
            h.processWatermark(new Watermark(Long.MAX_VALUE));
            assertThat(rollups(h))
                    .contains(
                            "a/1h@" + (other - START) + " sum=2 events=2 uniques=2 rev=0",
                            "a/1d@" + (DAY - START) + " sum=3 events=3 uniques=3 rev=0");
        }
    }

    private static long reads(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h) {
        return ((CountPerCounter) h.getOperator()).readsAndVisits()[0];
    }
}
