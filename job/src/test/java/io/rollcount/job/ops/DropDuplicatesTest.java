package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Event;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.util.Collector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link DropDuplicates} in Flink's operator test harness, on the heap and on RocksDB: a redelivery counts
 * once while the watermark is before its first delivery's time plus the horizon, and again after; across a
 * snapshot and restore, also after a stop longer than the state's TTL; and restored from the state and timers of the
 * earlier version (a timer per pair).
 */
class DropDuplicatesTest {
    private static final long T0 = 1_764_000_000_000L;
    private static final long HORIZON = 60_000;

    private static KeyedOneInputStreamOperatorTestHarness<String, Event, Event> harness(
            KeyedProcessFunction<String, Event, Event> f, boolean rocksdb) throws Exception {
        var h = new KeyedOneInputStreamOperatorTestHarness<>(
                f instanceof DropDuplicates d ? DropDuplicates.operator(d) : new KeyedProcessOperator<>(f),
                DropDuplicates::keyOf,
                Types.STRING);
        if (rocksdb) h.setStateBackend(new EmbeddedRocksDBStateBackend());
        return h;
    }

    /** An event of {@code counter} with id {@code id} at {@code ts} (delta 1, no user). */
    static Event event(String counter, String id, long ts) {
        Event e = new Event();
        e.counter = counter;
        e.eventId = id;
        e.ts = ts;
        return e;
    }

    /** The fingerprint's halves of a pair's key, as DropDuplicates hashes it. */
    private static long hi(String key) {
        return HeldPairs.hiOf(key);
    }

    private static long lo(String key) {
        return HeldPairs.loOf(key);
    }

    /** Sends the event and says whether it went on (true) or was dropped as a duplicate. */
    private static boolean passes(KeyedOneInputStreamOperatorTestHarness<String, Event, Event> h, Event e)
            throws Exception {
        int before = h.getOutput().size();
        h.processElement(e, e.ts);
        return h.getOutput().size() > before;
    }

    private static List<Event> out(KeyedOneInputStreamOperatorTestHarness<String, Event, Event> h) {
        List<Event> l = new ArrayList<>();
        for (Object o : h.getOutput()) if (o instanceof StreamRecord<?> r) l.add((Event) r.getValue());
        return l;
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aRedeliveryCountsOnceWithinTheHorizonInEventTime(boolean rocksdb) throws Exception {
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            h.open();
            h.processWatermark(new Watermark(T0 - 1));
            assertThat(passes(h, event("a", "1", T0))).isTrue();
            assertThat(passes(h, event("a", "1", T0 + 5_000)))
                    .as("same counter and id: duplicate")
                    .isFalse();
            assertThat(passes(h, event("b", "1", T0)))
                    .as("same id, other counter")
                    .isTrue();
            assertThat(passes(h, event("a", "2", T0))).as("other id").isTrue();
            // the watermark one ms before the first delivery's time plus the horizon: still remembered
            h.processWatermark(new Watermark(T0 + HORIZON - 1));
            assertThat(passes(h, event("a", "1", T0 + HORIZON))).isFalse();
            // past it: forgotten, counted again, and remembered from this delivery on
            h.processWatermark(new Watermark(T0 + HORIZON));
            assertThat(passes(h, event("a", "1", T0 + HORIZON + 1)))
                    .as("after the horizon")
                    .isTrue();
            assertThat(passes(h, event("a", "1", T0 + HORIZON + 2))).isFalse();
            assertThat(h.numEventTimeTimers()).as("no timer per pair").isZero();
            assertThat(out(h)).extracting(e -> e.counter + "/" + e.eventId).containsExactly("a/1", "b/1", "a/2", "a/1");
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void anEventWithoutAnIdGoesOnEveryTimeAndLeavesNothing(boolean rocksdb) throws Exception {
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            h.open();
            h.processWatermark(new Watermark(T0 - 1));
            for (int i = 0; i < 3; i++)
                assertThat(passes(h, event("a", null, T0))).isTrue();
            assertThat(passes(h, event("a", "1", T0))).isTrue();
            assertThat(passes(h, event("a", "1", T0))).isFalse();
            assertThat(function(h).ids().expiryOf(hi("a\u00001"), lo("a\u00001")))
                    .isEqualTo(T0 + HORIZON);
            h.snapshot(1, T0); // writes the pairs added
            try (var keys = h.getOperator().getKeyedStateBackend().getKeys("id-log", VoidNamespace.INSTANCE)) {
                assertThat(keys.toList())
                        .as("one chunk, under the own key of the pair's key group")
                        .hasSize(1);
            }
            for (String state : new String[] {"id-overflow", "forget-at-ttl", "forget-at"})
                try (var keys = h.getOperator().getKeyedStateBackend().getKeys(state, VoidNamespace.INSTANCE)) {
                    assertThat(keys.toList()).as(state).isEmpty();
                }
        }
    }

    @Test
    void theEventsOfAHotCounterWithoutIdsSpreadOverTheKeyGroups() {
        int maxParallelism = 128;
        java.util.Set<Integer> groups = new java.util.HashSet<>();
        for (int i = 0; i < 1_000; i++) {
            String key = DropDuplicates.keyOf(event("viral", null, T0 + i));
            groups.add(org.apache.flink.runtime.state.KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism));
        }
        assertThat(groups).hasSizeGreaterThan(100);
        assertThat(DropDuplicates.keyOf(event("viral", null, T0)))
                .as("the same event, the same key from a fixed set (Flink computes it on both sides of the shuffle)")
                .isSameAs(DropDuplicates.keyOf(event("viral", null, T0)))
                .isNotEqualTo(DropDuplicates.keyOf(event("viral", String.valueOf(T0), T0)));
    }

    /** Opens {@code h} and sends the first deliveries of id0..id99 (counters c0..c6) at T0..T0 + 99: each goes on. */
    private static void openWithHundredIds(KeyedOneInputStreamOperatorTestHarness<String, Event, Event> h)
            throws Exception {
        h.open();
        h.processWatermark(new Watermark(T0 - 1));
        for (int i = 0; i < 100; i++)
            assertThat(passes(h, event("c" + (i % 7), "id" + i, T0 + i))).isTrue();
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void remembersAcrossASnapshotAndRestore(boolean rocksdb) throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            openWithHundredIds(h);
            snapshot = h.snapshot(1, 1);
        }
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            h.initializeState(snapshot);
            h.open();
            h.processWatermark(new Watermark(T0 + 50));
            for (int i = 0; i < 100; i++)
                assertThat(passes(h, event("c" + (i % 7), "id" + i, T0 + 1_000)))
                        .as("id" + i)
                        .isFalse();
            h.processWatermark(new Watermark(T0 + HORIZON + 49));
            for (int i = 0; i < 100; i++) {
                assertThat(passes(h, event("c" + (i % 7), "id" + i, T0 + HORIZON + 100)))
                        .as("id" + i + " after the horizon")
                        .isEqualTo(i < 50);
            }
        }
    }

    /** The earlier version, as it was: a "forget-at" value and an event-time timer per pair. */
    static final class PerPairTimers extends KeyedProcessFunction<String, Event, Event> {
        private transient ValueState<Long> forgetAt;

        @Override
        public void open(OpenContext ctx) {
            forgetAt = getRuntimeContext().getState(new ValueStateDescriptor<>("forget-at", Types.LONG));
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Event> out) throws Exception {
            if (forgetAt.value() != null) return;
            forgetAt.update(e.ts + HORIZON);
            ctx.timerService().registerEventTimeTimer(e.ts + HORIZON);
            out.collect(e);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<Event> out) {
            forgetAt.clear();
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void restoresTheEarlierVersionsState(boolean rocksdb) throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = harness(new PerPairTimers(), rocksdb)) {
            h.open();
            h.processWatermark(new Watermark(T0 - 1));
            assertThat(passes(h, event("a", "1", T0))).isTrue();
            assertThat(passes(h, event("a", "2", T0 + 10_000))).isTrue();
            snapshot = h.snapshot(1, 1);
        }
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            h.initializeState(snapshot);
            h.open();
            h.processWatermark(new Watermark(T0 + 1_000));
            assertThat(passes(h, event("a", "1", T0 + 2_000)))
                    .as("seen by the earlier version")
                    .isFalse();
            assertThat(passes(h, event("a", "3", T0 + 2_000))).isTrue();
            // the earlier version's timer of a/1 fires and clears it; a/2's has not fired yet
            h.processWatermark(new Watermark(T0 + HORIZON));
            assertThat(h.numEventTimeTimers()).isEqualTo(1);
            assertThat(passes(h, event("a", "1", T0 + HORIZON + 1)))
                    .as("a/1 past its horizon")
                    .isTrue();
            assertThat(passes(h, event("a", "2", T0 + HORIZON + 1)))
                    .as("a/2 within its horizon")
                    .isFalse();
            h.processWatermark(new Watermark(T0 + HORIZON + 10_000));
            assertThat(h.numEventTimeTimers()).isZero();
            assertThat(passes(h, event("a", "2", T0 + HORIZON + 10_001))).isTrue();
        }
    }

    private static DropDuplicates function(KeyedOneInputStreamOperatorTestHarness<String, Event, Event> h) {
        return (DropDuplicates) ((KeyedProcessOperator<String, Event, Event>) h.getOperator()).getUserFunction();
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void noPairIsLookedUpInTheStateWhileTheSetHoldsThemAll(boolean rocksdb) throws Exception {
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            h.open();
            h.processWatermark(new Watermark(T0 - 1));
            for (int i = 0; i < 1_000; i++)
                assertThat(passes(h, event("c" + (i % 13), "id" + i, T0 + i))).isTrue();
            for (int i = 0; i < 10; i++)
                assertThat(passes(h, event("c" + (i % 13), "id" + i, T0 + 5_000)))
                        .isFalse();
            h.snapshot(1, 1); // writes the pairs to the state
            for (int i = 0; i < 1_000; i++)
                assertThat(passes(h, event("c" + (i % 13), "id" + i, T0 + 5_000)))
                        .isFalse();
            // past the horizon the set forgets them as the state does
            h.processWatermark(new Watermark(T0 + HORIZON + 5_000));
            assertThat(passes(h, event("c0", "id0", T0 + HORIZON + 6_000))).isTrue();
            assertThat(function(h).lookups())
                    .as("the set answered for every pair")
                    .isZero();
            assertThat(function(h).overflowUntil()).isEqualTo(Long.MIN_VALUE);
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aRestoredSubtaskReadsItsPairsIntoTheSetBeforeTheFirstEvent(boolean rocksdb) throws Exception {
        OperatorSubtaskState snapshot = hundredPairs(new DropDuplicates(HORIZON), rocksdb);
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            h.initializeState(snapshot);
            h.open();
            for (int i = 100; i < 200; i++)
                assertThat(passes(h, event("c", "id" + i, T0 + i))).isTrue();
            for (int i = 0; i < 100; i++)
                assertThat(passes(h, event("c", "id" + i, T0 + 1_000))).isFalse();
            assertThat(function(h).lookups()).isZero();
        }
    }

    /** A snapshot of {@code f} after the pairs c/id0..c/id99 at T0..T0 + 99. */
    private static OperatorSubtaskState hundredPairs(KeyedProcessFunction<String, Event, Event> f, boolean rocksdb)
            throws Exception {
        try (var h = harness(f, rocksdb)) {
            h.open();
            h.processWatermark(new Watermark(T0 - 1));
            for (int i = 0; i < 100; i++) passes(h, event("c", "id" + i, T0 + i));
            return h.snapshot(1, 1);
        }
    }

    /** An open harness of DropDuplicates with a set of 16 slots, restored from {@code snapshot}. */
    private static KeyedOneInputStreamOperatorTestHarness<String, Event, Event> restoredWithSixteenSlots(
            OperatorSubtaskState snapshot, boolean rocksdb) throws Exception {
        var h = harness(new DropDuplicates(HORIZON, 16, 1), rocksdb);
        h.initializeState(snapshot);
        h.open();
        return h;
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void pairsTheSetHasNoRoomForAreLookedUpUntilTheWatermarkPassesTheLatestOfThem(boolean rocksdb) throws Exception {
        try (var h = restoredWithSixteenSlots(hundredPairs(new DropDuplicates(HORIZON, 16, 1), rocksdb), rocksdb)) {
            assertThat(function(h).overflowUntil()).isEqualTo(T0 + 99 + HORIZON);
            h.processWatermark(new Watermark(T0 + 50));
            for (int i = 0; i < 100; i++)
                assertThat(passes(h, event("c", "id" + i, T0 + 1_000))).isFalse();
            assertThat(function(h).lookups())
                    .as("at least the 84 pairs beyond the set's 16 slots")
                    .isBetween(84L, 100L);
            assertThat(passes(h, event("c", "new", T0 + 1_000))).isTrue();
            assertThat(function(h).overflowUntil())
                    .as("the new pair found no room either")
                    .isEqualTo(T0 + 1_000 + HORIZON);
            h.processWatermark(new Watermark(T0 + 1_000 + HORIZON));
            long before = function(h).lookups();
            for (int i = 0; i < 10; i++)
                assertThat(passes(h, event("c", "id" + i, T0 + 1_000 + HORIZON + 1)))
                        .isTrue();
            assertThat(function(h).lookups() - before)
                    .as("none once the watermark passed the latest pair kept in the state (and the set has room)")
                    .isZero();
        }
    }

    /** The version before the set: "forget-at-ttl", an entry per pair, and no operator state of its own. */
    static final class EntryPerPair extends KeyedProcessFunction<String, Event, Event> {
        private transient ValueState<Long> forgetAt;

        @Override
        public void open(OpenContext ctx) {
            ValueStateDescriptor<Long> d = new ValueStateDescriptor<>("forget-at-ttl", Types.LONG);
            d.enableTimeToLive(org.apache.flink.api.common.state.StateTtlConfig.newBuilder(
                            java.time.Duration.ofMillis(2 * HORIZON))
                    .updateTtlOnCreateAndWrite()
                    .returnExpiredIfNotCleanedUp()
                    .build());
            forgetAt = getRuntimeContext().getState(d);
        }

        @Override
        public void processElement(Event e, Context ctx, Collector<Event> out) throws Exception {
            Long at = forgetAt.value();
            if (at != null && ctx.timerService().currentWatermark() < at) return;
            forgetAt.update(e.ts + HORIZON);
            out.collect(e);
        }
    }

    @ParameterizedTest(name = "slots={0} rocksdb={1}")
    @CsvSource({"16, false", "16, true", "1024, false", "1024, true"})
    void theStateOfTheVersionWithAnEntryPerPairRestoresAndIsKeptOnTheNextRestore(int slots, boolean rocksdb)
            throws Exception {
        OperatorSubtaskState snapshot = hundredPairs(new EntryPerPair(), rocksdb);
        for (int restore = 1; restore <= 2; restore++) {
            try (var h = harness(new DropDuplicates(HORIZON, slots, 1), rocksdb)) {
                h.initializeState(snapshot);
                h.open();
                h.processWatermark(new Watermark(T0 + 50));
                for (int i = 0; i < 100; i++)
                    assertThat(passes(h, event("c", "id" + i, T0 + 1_000)))
                            .as("restore %d: id%d", restore, i)
                            .isFalse();
                assertThat(passes(h, event("c", "new" + restore, T0 + 1_000))).isTrue();
                if (slots > 100)
                    assertThat(function(h).lookups())
                            .as("only the new pair, looked up in the timer version's state, which a restored state"
                                    + " without legacy-until may hold")
                            .isOne();
                snapshot = h.snapshot(restore + 1, restore + 1);
            }
        }
    }

    /**
     * Two subtasks' pairs restored as one subtask and then as two again (maximum parallelism 128): each pair goes with
     * its key group, and every redelivery is still dropped.
     */
    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aRescaleKeepsEveryPair(boolean rocksdb) throws Exception {
        OperatorSubtaskState[] parts = new OperatorSubtaskState[2];
        List<Event> sent = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            try (var h = subtask(i, 2, rocksdb)) {
                h.open();
                h.processWatermark(new Watermark(T0 - 1));
                for (int k = 0; k < 300; k++) {
                    Event e = event("c" + (k % 11), "id" + k, T0 + k);
                    int group = org.apache.flink.runtime.state.KeyGroupRangeAssignment.assignToKeyGroup(
                            DropDuplicates.keyOf(e), 128);
                    if (group < 64 != (i == 0)) continue; // the other subtask's key group
                    assertThat(passes(h, e)).isTrue();
                    sent.add(e);
                }
                parts[i] = h.snapshot(1, 1);
            }
        }
        assertThat(sent).hasSize(300);
        OperatorSubtaskState one;
        try (var h = subtask(0, 1, rocksdb)) {
            h.initializeState(AbstractStreamOperatorTestHarness.repackageState(parts));
            h.open();
            h.processWatermark(new Watermark(T0 + 500));
            for (Event e : sent)
                assertThat(passes(h, event(e.counter, e.eventId, T0 + 600))).isFalse();
            one = h.snapshot(2, 2);
        }
        for (int i = 0; i < 2; i++) {
            try (var h = subtask(i, 2, rocksdb)) {
                h.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(one, 128, 1, 2, i));
                h.open();
                h.processWatermark(new Watermark(T0 + 500));
                int mine = 0;
                for (Event e : sent) {
                    int group = org.apache.flink.runtime.state.KeyGroupRangeAssignment.assignToKeyGroup(
                            DropDuplicates.keyOf(e), 128);
                    if (group < 64 != (i == 0)) continue;
                    mine++;
                    assertThat(passes(h, event(e.counter, e.eventId, T0 + 700))).isFalse();
                }
                assertThat(mine).isPositive();
                assertThat(function(h).lookups()).isZero();
            }
        }
    }

    /**
     * On the heap a read may clean up pairs past their TTL: the rebuild reads from a copy of the keys. Pairs written
     * ten horizons before a snapshot taken while the job ran (an event time lagging the wall clock that much) are past
     * their TTL.
     */
    @Test
    void aHeapStateWhosePairsOutlivedTheirTtlRestores() throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = harness(new DropDuplicates(HORIZON), false)) {
            h.setStateTtlProcessingTime(0);
            h.open();
            h.processWatermark(new Watermark(T0 - 1));
            for (int i = 0; i < 1_000; i++) passes(h, event("c" + (i % 7), "id" + i, T0 + i));
            h.snapshot(1, 1); // writes the held pairs to the state at 0
            snapshot = snapshotAt(h, 10 * HORIZON, 2);
        }
        try (var h = restartedAt(snapshot, 10 * HORIZON, false)) {
            assertThat(function(h).ttlMillis()).as("no stop").isEqualTo(2 * HORIZON);
            h.processWatermark(new Watermark(T0 + 50));
            assertThat(passes(h, event("c0", "id0", T0 + 60)))
                    .as("forgotten by the TTL")
                    .isTrue();
            assertThat(passes(h, event("c0", "id0", T0 + 70))).isFalse();
            assertThat(passes(h, event("c1", "id1", T0 + 80))).isTrue();
        }
    }

    /** A harness of DropDuplicates restored from {@code snapshot} and opened at {@code wallClock}. */
    private static KeyedOneInputStreamOperatorTestHarness<String, Event, Event> restartedAt(
            OperatorSubtaskState snapshot, long wallClock, boolean rocksdb) throws Exception {
        var h = harness(new DropDuplicates(HORIZON), rocksdb);
        h.setProcessingTime(wallClock);
        h.setStateTtlProcessingTime(wallClock);
        h.initializeState(snapshot);
        h.open();
        return h;
    }

    /** Snapshots {@code h} at {@code wallClock} (both the operator's processing time and the TTL's clock). */
    private static OperatorSubtaskState snapshotAt(
            KeyedOneInputStreamOperatorTestHarness<String, Event, Event> h, long wallClock, long id) throws Exception {
        h.setProcessingTime(wallClock);
        h.setStateTtlProcessingTime(wallClock);
        return h.snapshot(id, id);
    }

    /**
     * A job stopped for ten horizons right after it saw an event: the redelivery it reads after the restart, still
     * within the horizon in event time, counts once (the TTL counts the stop out), and the pairs are kept for two
     * horizons of running time after it.
     */
    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aRedeliveryAfterALongStopCountsOnce(boolean rocksdb) throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            openWithHundredIds(h);
            snapshot = snapshotAt(h, 1_000, 1);
        }
        long restart = 1_000 + 10 * HORIZON;
        try (var h = restartedAt(snapshot, restart, rocksdb)) {
            assertThat(function(h).ttlMillis()).isEqualTo(12 * HORIZON);
            h.processWatermark(new Watermark(T0 + 50));
            for (int i = 0; i < 100; i++)
                assertThat(passes(h, event("c" + (i % 7), "id" + i, T0 + 100 + i)))
                        .as("redelivery of id%d after the stop", i)
                        .isFalse();
            assertThat(passes(h, event("c0", "new", T0 + 300))).isTrue();
            h.setStateTtlProcessingTime(restart + 2 * HORIZON - 1);
            h.processWatermark(new Watermark(T0 + HORIZON - 1));
            assertThat(passes(h, event("c0", "id0", T0 + HORIZON))).isFalse();
            snapshot = snapshotAt(h, restart + HORIZON, 2);
        }
        try (var h = restartedAt(snapshot, restart + HORIZON, rocksdb)) {
            assertThat(function(h).ttlMillis())
                    .as("the stop ended within the TTL it makes")
                    .isEqualTo(12 * HORIZON);
            snapshot = snapshotAt(h, restart + 2 * HORIZON, 3);
        }
        try (var h = restartedAt(snapshot, restart + 2 * HORIZON, rocksdb)) {
            assertThat(function(h).ttlMillis())
                    .as("two horizons of running time after the stop")
                    .isEqualTo(2 * HORIZON);
        }
    }

    /** Subtask {@code index} of {@code parallelism} of DropDuplicates (maximum parallelism 128) on the heap. */
    private static KeyedOneInputStreamOperatorTestHarness<String, Event, Event> subtask(int index, int parallelism)
            throws Exception {
        return subtask(index, parallelism, false);
    }

    private static KeyedOneInputStreamOperatorTestHarness<String, Event, Event> subtask(
            int index, int parallelism, boolean rocksdb) throws Exception {
        var h = new KeyedOneInputStreamOperatorTestHarness<>(
                DropDuplicates.operator(new DropDuplicates(HORIZON)),
                DropDuplicates::keyOf,
                Types.STRING,
                128,
                parallelism,
                index);
        if (rocksdb) h.setStateBackend(new EmbeddedRocksDBStateBackend());
        return h;
    }

    /**
     * Two subtasks that took their snapshots a second apart, restored as one after a stop and then as two again:
     * the stop counts from the earlier snapshot (the pairs of that subtask lived through all of it), and every
     * subtask keeps it.
     */
    @Test
    void aRescaleKeepsTheStopFromTheEarliestSnapshot() throws Exception {
        OperatorSubtaskState[] parts = new OperatorSubtaskState[2];
        for (int i = 0; i < 2; i++) {
            try (var h = subtask(i, 2)) {
                h.open();
                parts[i] = snapshotAt(h, 1_000 + i * 1_000, 1);
            }
        }
        OperatorSubtaskState both = AbstractStreamOperatorTestHarness.repackageState(parts);
        long restart = 2_000 + HORIZON;
        OperatorSubtaskState one;
        try (var h = subtask(0, 1)) {
            h.setProcessingTime(restart);
            h.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(both, 128, 2, 1, 0));
            h.open();
            assertThat(function(h).ttlMillis()).isEqualTo(2 * HORIZON + restart - 1_000);
            one = snapshotAt(h, restart, 2);
        }
        for (int i = 0; i < 2; i++) {
            try (var h = subtask(i, 2)) {
                h.setProcessingTime(restart);
                h.initializeState(AbstractStreamOperatorTestHarness.repartitionOperatorState(one, 128, 1, 2, i));
                h.open();
                assertThat(function(h).ttlMillis()).as("subtask %d", i).isEqualTo(2 * HORIZON + restart - 1_000);
            }
        }
    }

    /**
     * The TTL is the running time plus every stop that ended within it, counting stops that the stops counted bring
     * in; a stop that ended before it is dropped.
     */
    @Test
    void theTtlCountsTheStopsWithinIt() throws Exception {
        long h1 = HORIZON;
        OperatorSubtaskState snapshot;
        try (var h = harness(new DropDuplicates(HORIZON), false)) {
            h.open();
            snapshot = snapshotAt(h, 0, 1);
        }
        // a stop of one horizon from 0: it ended at 1h
        try (var h = restartedAt(snapshot, h1, false)) {
            assertThat(function(h).ttlMillis()).isEqualTo(3 * h1);
            snapshot = snapshotAt(h, 2 * h1, 2);
        }
        // a stop of one horizon from 2h, ending at 3h: two horizons back from 3h hold it, the three that makes hold the
        // first stop (ended at 1h) too; at 4.5h, two horizons back hold the second stop, three still not the first
        try (var h = restartedAt(snapshot, 3 * h1, false)) {
            assertThat(function(h).ttlMillis()).as("both stops, at 3h").isEqualTo(4 * h1);
            snapshot = snapshotAt(h, 4 * h1 + h1 / 2, 3);
        }
        try (var h = restartedAt(snapshot, 4 * h1 + h1 / 2, false)) {
            assertThat(function(h).ttlMillis()).as("the second stop, at 4.5h").isEqualTo(3 * h1);
            snapshot = snapshotAt(h, 3 * h1 + 3 * h1 + 1, 4);
        }
        // a stop of half a horizon from 6h + 1, ending at 6.5h + 1: the window of 2.5 horizons holds no earlier stop
        try (var h = restartedAt(snapshot, 6 * h1 + h1 / 2 + 1, false)) {
            assertThat(function(h).ttlMillis()).isEqualTo(2 * h1 + h1 / 2);
            snapshot = snapshotAt(h, 7 * h1, 5);
        }
        try (var h = restartedAt(snapshot, 7 * h1 + 1, false)) {
            assertThat(function(h).ttlMillis()).isEqualTo(2 * h1 + h1 / 2 + 1);
        }
    }

    /**
     * Ids, redeliveries and watermarks at random through filters of one bucket, a few, and the default size, with
     * one write held, a few, and the default number, and a snapshot and restore now and then.
     */
    @ParameterizedTest(name = "slots={0} held={1}")
    @CsvSource({"16, 1", "64, 7", DropDuplicates.AUTO + ", " + DropDuplicates.LOG_HELD})
    void everySetSizeDropsExactlyTheRedeliveriesWithinTheHorizon(int slots, int held) throws Exception {
        java.util.SplittableRandom random = new java.util.SplittableRandom(slots);
        java.util.Map<String, Long> forgetAt = new java.util.HashMap<>();
        var h = harness(new DropDuplicates(HORIZON, slots, held), true);
        try {
            h.open();
            long watermark = T0 - 1;
            h.processWatermark(new Watermark(watermark));
            for (int step = 0; step < 5_000; step++) {
                if (random.nextInt(1_000) == 0) {
                    OperatorSubtaskState snapshot = h.snapshot(step, step);
                    h.close();
                    h = harness(new DropDuplicates(HORIZON, slots, held), true);
                    h.initializeState(snapshot);
                    h.open();
                    h.processWatermark(new Watermark(watermark));
                }
                if (random.nextInt(50) == 0) {
                    watermark += random.nextInt(20_000);
                    h.processWatermark(new Watermark(watermark));
                }
                Event e = event(
                        "c" + random.nextInt(5), "id" + random.nextInt(400), watermark + 1 + random.nextInt(5_000));
                Long at = forgetAt.get(DropDuplicates.keyOf(e));
                boolean first = at == null || watermark >= at;
                assertThat(passes(h, e))
                        .as("step %d: %s/%s", step, e.counter, e.eventId)
                        .isEqualTo(first);
                if (first) forgetAt.put(DropDuplicates.keyOf(e), e.ts + HORIZON);
            }
        } finally {
            h.close();
        }
    }

    /**
     * A pair whose time the watermark had passed when the snapshot was taken is not restored: had the job run on, a
     * redelivery of it would have counted, and it counts after the restore too, before the watermark comes back.
     */
    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aPairTheWatermarkHadPassedAtTheSnapshotIsNotRestored(boolean rocksdb) throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            openWithHundredIds(h);
            h.processWatermark(new Watermark(T0 + 49 + HORIZON));
            assertThat(passes(h, event("c0", "late", T0 + 50 + HORIZON))).isTrue();
            snapshot = h.snapshot(1, 1);
        }
        try (var h = harness(new DropDuplicates(HORIZON), rocksdb)) {
            h.initializeState(snapshot);
            h.open();
            for (int i = 0; i < 100; i++)
                assertThat(passes(h, event("c" + (i % 7), "id" + i, T0 + 1_000)))
                        .as("id%d, before any watermark", i)
                        .isEqualTo(i <= 49);
            assertThat(passes(h, event("c0", "late", T0 + 1_000))).isFalse();
        }
    }

    @Test
    void theSetTakesAnEighthOfTheHeapPerSlotWithinItsBounds() {
        long mib = 1L << 20;
        assertThat(DropDuplicates.autoSetSlots(3_072 * mib, 2))
                .as("192 MiB: 192")
                .isEqualTo(1 << 23);
        assertThat(DropDuplicates.autoSetSlots(65_536 * mib, 1))
                .as("8 GiB: at most 1.5")
                .isEqualTo(1 << 26);
        assertThat(DropDuplicates.autoSetSlots(400 * mib, 2)).as("25 MiB: 24").isEqualTo(1 << 20);
        assertThat(DropDuplicates.autoSetSlots(64 * mib, 4))
                .as("2 MiB: at least 6")
                .isEqualTo(1 << 18);
        assertThat(DropDuplicates.autoSetSlots(Long.MAX_VALUE, 1)).isEqualTo(1 << 26);
    }

    /** The auto-sized set starts small and grows with the pairs it holds, also while a restore reads them back. */
    @Test
    void theAutoSizedSetGrowsWithThePairsHeldAlsoOnRestore() throws Exception {
        int n = 100_000;
        OperatorSubtaskState snapshot;
        try (var h = harness(new DropDuplicates(HORIZON), false)) {
            h.open();
            assertThat(function(h).ids().capacity()).isEqualTo(DropDuplicates.INITIAL_AUTO_SLOTS);
            for (int i = 0; i < n; i++) h.processElement(event("c" + (i % 7), "id" + i, T0), T0);
            assertThat(h.getOutput()).as("every new pair goes on").hasSize(n);
            assertThat(function(h).ids().capacity()).as("grown").isGreaterThan(DropDuplicates.INITIAL_AUTO_SLOTS);
            for (int i = 0; i < n; i += 97)
                assertThat(passes(h, event("c" + (i % 7), "id" + i, T0 + 1)))
                        .as("id%d", i)
                        .isFalse();
            assertThat(function(h).lookups()).isZero();
            snapshot = h.snapshot(1, 1);
        }
        try (var h = harness(new DropDuplicates(HORIZON), false)) {
            h.initializeState(snapshot);
            h.open();
            assertThat(function(h).ids().capacity())
                    .as("grown while restoring")
                    .isGreaterThan(DropDuplicates.INITIAL_AUTO_SLOTS);
            for (int i = 0; i < n; i += 97)
                assertThat(passes(h, event("c" + (i % 7), "id" + i, T0 + 2)))
                        .as("id%d", i)
                        .isFalse();
            assertThat(passes(h, event("c0", "new", T0 + 2))).isTrue();
            assertThat(function(h).lookups()).isZero();
        }
    }

    @Test
    void refusesAHorizonOfZero() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> new DropDuplicates(0))
                .hasMessageContaining("horizon");
    }
}
