package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.sketches.RedisHyperLogLog;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The unique-users sketches of the counters of a {@link CounterStore}, in Flink's operator harness (on the heap; the
 * snapshot's write-back, which goes in key order on RocksDB, on both), hosted by a keyed operator as {@link CountPerCounter} does: many
 * sketches per counter, some dropped, kept across evictions, a snapshot and a restore.
 */
class CounterStoreTest {

    /** Elements {@code add|counter|sketch|user} and {@code drop|counter|sketch}, keyed by counter. */
    static final class Host extends AbstractStreamOperator<String> implements OneInputStreamOperator<String, String> {
        private static final long serialVersionUID = 1L;
        private final long budgetBytes;
        transient CounterStore store;

        Host(long budgetBytes) {
            this.budgetBytes = budgetBytes;
        }

        @Override
        public void open() throws Exception {
            super.open();
            store = CounterStore.open(
                    budgetBytes,
                    this::getPartitionedState,
                    getKeyedStateBackend(),
                    getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks(),
                    this);
        }

        @Override
        public void processElement(StreamRecord<String> record) throws Exception {
            String[] f = record.getValue().split("\\|");
            CounterStore.CachedCounter c = store.get(f[1]);
            if (f[0].equals("add")) {
                store.addHashes(c, f[2], new long[] {RedisHyperLogLog.hash(f[3])}, true);
                store.slotsChanged(c);
            } else {
                store.dropSketch(c, f[2]);
            }
            store.changed(c, evicted -> {});
        }

        @Override
        public void snapshotState(StateSnapshotContext context) throws Exception {
            super.snapshotState(context);
            store.writeBackAll();
        }

        /** The users the counter's sketch counts (from the heap or keyed state); -1 if it has none. */
        long users(String counter, String sketch) throws Exception {
            setCurrentKey(counter);
            byte[] bytes = store.sketchBytes(store.cached(counter), sketch);
            return bytes == null ? -1 : RedisHyperLogLog.fromRedisBytes(bytes).count();
        }
    }

    private static KeyedOneInputStreamOperatorTestHarness<String, String, String> open(
            Host op, OperatorSubtaskState from) throws Exception {
        return open(op, from, false);
    }

    /** {@code op} in a harness keyed by counter, on RocksDB (whose write-back goes in key order) or on the heap. */
    private static KeyedOneInputStreamOperatorTestHarness<String, String, String> open(
            Host op, OperatorSubtaskState from, boolean rocksdb) throws Exception {
        var h = new KeyedOneInputStreamOperatorTestHarness<String, String, String>(
                op, x -> x.split("\\|")[1], Types.STRING);
        if (rocksdb) h.setStateBackend(new EmbeddedRocksDBStateBackend());
        if (from != null) h.initializeState(from);
        h.open();
        return h;
    }

    /** Sketch {@code w} of a counter gets {@code w + 1} users; sketches 2 and 5 are dropped after. */
    private static List<String> elements(String counter, int sketches) {
        List<String> out = new ArrayList<>();
        for (int w = 0; w < sketches; w++)
            for (int u = 0; u <= w; u++) out.add("add|" + counter + "|1h:" + (w * 3_600_000L) + "|user" + u);
        out.add("drop|" + counter + "|1h:" + (2 * 3_600_000L));
        out.add("drop|" + counter + "|1h:" + (5 * 3_600_000L));
        out.add("add|" + counter + "|1h:0|late-user"); // a sketch changed again after others were dropped
        return out;
    }

    private static void assertSketches(Host op, String counter, int sketches) throws Exception {
        for (int w = 0; w < sketches; w++) {
            long expected = w == 2 || w == 5 ? -1 : w == 0 ? 2 : w + 1;
            assertThat(op.users(counter, "1h:" + (w * 3_600_000L)))
                    .as(counter + " sketch " + w)
                    .isEqualTo(expected);
        }
        assertThat(op.users(counter, "1d:0")).as("a sketch never made").isEqualTo(-1);
    }

    @Test
    void aCounterKeepsManySketchesThroughDropsASnapshotAndARestore() throws Exception {
        Host op = new Host(1L << 30);
        OperatorSubtaskState snapshot;
        try (var h = open(op, null)) {
            long ts = 0;
            for (String e : elements("a", 9)) h.processElement(e, ts++);
            for (String e : elements("b", 3)) h.processElement(e, ts++);
            assertSketches(op, "a", 9);
            snapshot = h.snapshot(1, 1);
        }
        Host restored = new Host(1L << 30);
        try (var h = open(restored, snapshot)) {
            assertThat(restored.store.size())
                    .as("nothing on the heap after a restore")
                    .isZero();
            assertSketches(restored, "a", 9);
            assertSketches(restored, "b", 3);
        }
    }

    @Test
    void evictedCountersKeepTheirSketches() throws Exception {
        Host op = new Host(1); // every other counter leaves the heap at each change
        try (var h = open(op, null)) {
            List<String> a = elements("a", 7);
            List<String> b = elements("b", 7);
            for (int i = 0; i < a.size(); i++) {
                h.processElement(a.get(i), 2L * i);
                h.processElement(b.get(i), 2L * i + 1);
            }
            assertThat(op.store.size()).as("one counter on the heap").isEqualTo(1);
            assertSketches(op, "a", 7);
            assertSketches(op, "b", 7);
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aSnapshotWritesBackEveryChangedCounterAndOnlyThose(boolean rocksdb) throws Exception {
        // about 40 counters fit in the budget: of 200, most are evicted (written back as they leave) and read again
        Host op = new Host(40 * 400);
        OperatorSubtaskState snapshot;
        try (var h = open(op, null, rocksdb)) {
            long ts = 0;
            for (int c = 0; c < 200; c++) h.processElement("add|c" + c + "|1h:0|first", ts++);
            h.snapshot(1, ts++);
            assertThat(op.store.unstored()[0])
                    .as("nothing changed since the snapshot")
                    .isZero();
            // after the snapshot: counters changed once, changed then evicted, evicted then read again and changed
            for (int c = 0; c < 200; c += 3) h.processElement("add|c" + c + "|1h:0|second", ts++);
            for (int c = 0; c < 200; c += 7) h.processElement("add|c" + c + "|1h:0|third", ts++);
            int[] unstored = op.store.unstored();
            assertThat(unstored[0])
                    .as("changed and still on the heap")
                    .isPositive()
                    .isLessThanOrEqualTo(op.store.size());
            snapshot = h.snapshot(2, ts++);
            assertThat(op.store.unstored()[0]).isZero();
            h.processElement("add|c1|1h:0|after-the-snapshot", ts++);
        }
        Host restored = new Host(1L << 30);
        try (var h = open(restored, snapshot, rocksdb)) {
            for (int c = 0; c < 200; c++) {
                long expected = 1 + (c % 3 == 0 ? 1 : 0) + (c % 7 == 0 ? 1 : 0);
                assertThat(restored.users("c" + c, "1h:0")).as("counter c" + c).isEqualTo(expected);
            }
        }
    }

    @Test
    void withoutSnapshotsTheListOfChangedCountersStaysBounded() throws Exception {
        Host op = new Host(1); // one counter on the heap: every change evicts the one before
        try (var h = open(op, null)) {
            for (int i = 0; i < 20_000; i++) h.processElement("add|c" + (i % 5_000) + "|1h:0|u" + i, i);
            int[] unstored = op.store.unstored();
            assertThat(unstored[0]).as("the counter on the heap").isEqualTo(1);
            assertThat(unstored[1]).as("places taken").isLessThanOrEqualTo(2 * op.store.size() + 1_025);
        }
    }
}
