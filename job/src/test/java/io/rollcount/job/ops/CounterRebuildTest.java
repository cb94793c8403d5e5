package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.metrics.JobAccumulators;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * The rebuild after a loss of Redis's data, in Flink's operator harness, hosted by a keyed operator that keeps
 * counters in a {@link CounterStore} as {@link CountPerCounter} does: a rebuild that a checkpoint recorded as
 * under way starts over after the restore and writes every counter of the subtask again, those in keyed state
 * and those only on the heap, {@value CounterRebuild#COUNTERS_PER_STEP} every {@value CounterRebuild#STEP_MILLIS}
 * ms of processing time; a checkpoint taken meanwhile records it as under way, one taken after it ended does
 * not; at the end of input the rest is written at once.
 */
class CounterRebuildTest {
    private static final int COUNTERS = 2_500;

    /** Counts each id it gets in a counter of its own; rewrites each counter as two keys, listing its id. */
    static final class Host extends AbstractStreamOperator<String> implements OneInputStreamOperator<String, String> {
        private static final long serialVersionUID = 1L;
        /** Its checkpoints hold the rebuild's state as one taken while a rebuild was under way. */
        private final boolean underWayAtCheckpoint;

        transient CounterRebuild rebuild;
        transient CounterStore store;
        transient List<String> rewritten;
        private transient boolean restored;

        Host(boolean underWayAtCheckpoint) {
            this.underWayAtCheckpoint = underWayAtCheckpoint;
        }

        @Override
        public void initializeState(StateInitializationContext context) throws Exception {
            super.initializeState(context);
            restored = context.isRestored();
            rebuild = new CounterRebuild(context.getOperatorStateStore(), null, null);
        }

        @Override
        public void open() throws Exception {
            super.open();
            store = CounterStore.open(
                    1L << 30,
                    this::getPartitionedState,
                    getKeyedStateBackend(),
                    getRuntimeContext().getTaskInfo().getMaxNumberOfParallelSubtasks(),
                    this);
            rewritten = new ArrayList<>();
            rebuild.open(
                    "test",
                    restored,
                    0,
                    getMetricGroup(),
                    getProcessingTimeService(),
                    this,
                    store,
                    id -> {
                        assertThat(getCurrentKey())
                                .as("the key of the counter written again")
                                .isEqualTo(id);
                        rewritten.add(id);
                        return 2;
                    },
                    getRuntimeContext());
        }

        @Override
        public void processElement(StreamRecord<String> record) throws Exception {
            CounterStore.CachedCounter c = store.get(record.getValue());
            c.state.total++;
            store.changed(c, evicted -> {});
        }

        @Override
        public void snapshotState(StateSnapshotContext context) throws Exception {
            super.snapshotState(context);
            rebuild.snapshotState(context.getCheckpointId());
            if (underWayAtCheckpoint) {
                getOperatorStateBackend()
                        .getUnionListState(new ListStateDescriptor<>("redis-rebuild-pending", Types.BOOLEAN))
                        .update(List.of(true));
            }
            store.writeBackAll();
        }

        @Override
        public void finish() throws Exception {
            rebuild.finish();
            super.finish();
        }

        @Override
        public void close() throws Exception {
            if (rebuild != null) rebuild.close();
            super.close();
        }

        long countersWritten() {
            return getRuntimeContext()
                    .getLongCounter(JobAccumulators.REDIS_REBUILT_COUNTERS)
                    .getLocalValue();
        }

        long lossesSeen() {
            return getRuntimeContext()
                    .getLongCounter(JobAccumulators.REDIS_LOSSES)
                    .getLocalValue();
        }
    }

    private static KeyedOneInputStreamOperatorTestHarness<String, String, String> harness(Host op) throws Exception {
        return new KeyedOneInputStreamOperatorTestHarness<>(op, x -> x, Types.STRING);
    }

    /** A harness of {@code op} restored from {@code checkpoint} and open, at processing time 0. */
    private static KeyedOneInputStreamOperatorTestHarness<String, String, String> restored(
            Host op, OperatorSubtaskState checkpoint) throws Exception {
        var h = harness(op);
        h.setProcessingTime(0);
        h.initializeState(checkpoint);
        h.open();
        return h;
    }

    /**
     * The counters a host restored from {@code checkpoint} writes again after a flush's check and a while, or at
     * the end of input.
     */
    private static Host rebuiltFrom(OperatorSubtaskState checkpoint) throws Exception {
        Host op = new Host(false);
        try (var h = restored(op, checkpoint)) {
            op.rebuild.check();
            advance(h, 10 * CounterRebuild.STEP_MILLIS);
            op.finish();
        }
        return op;
    }

    /** Moves processing time on to {@code until} a step of the rebuild at a time, firing the timers due. */
    private static void advance(KeyedOneInputStreamOperatorTestHarness<String, String, String> h, long until)
            throws Exception {
        for (long t = 1; t <= until; t += CounterRebuild.STEP_MILLIS) h.setProcessingTime(t);
    }

    private static String id(int i) {
        return "post:" + i + ":likes";
    }

    /** A checkpoint of {@code COUNTERS} counters in keyed state, with a rebuild under way or none. */
    private static OperatorSubtaskState counters(boolean underWay) throws Exception {
        try (var h = harness(new Host(underWay))) {
            h.open();
            for (int i = 0; i < COUNTERS; i++) h.processElement(id(i), 0);
            return h.snapshot(1, 1);
        }
    }

    @Test
    void aRebuildUnderWayAtTheCheckpointStartsOverAndWritesEveryCounterInSteps() throws Exception {
        OperatorSubtaskState checkpoint = counters(true);
        Host op = new Host(false);
        try (var h = restored(op, checkpoint)) {
            // one counter more, only on the heap yet
            h.processElement("video:new:views", 0);
            assertThat(op.rewritten).isEmpty();
            op.rebuild.check(); // after a flush: the restored rebuild starts over
            assertThat(op.lossesSeen())
                    .as("subtask 0 counts the rebuild it starts")
                    .isOne();
            h.setProcessingTime(1);
            assertThat(op.rewritten).hasSize(CounterRebuild.COUNTERS_PER_STEP);
            // a checkpoint meanwhile: still under way
            OperatorSubtaskState during = h.snapshot(2, 2);
            h.setProcessingTime(1 + CounterRebuild.STEP_MILLIS - 1);
            assertThat(op.rewritten).hasSize(CounterRebuild.COUNTERS_PER_STEP);
            h.setProcessingTime(1 + CounterRebuild.STEP_MILLIS);
            assertThat(op.rewritten).hasSize(2 * CounterRebuild.COUNTERS_PER_STEP);
            h.setProcessingTime(1 + 2 * CounterRebuild.STEP_MILLIS);
            assertThat(op.rewritten).hasSize(COUNTERS + 1);
            assertThat(new HashSet<>(op.rewritten))
                    .hasSize(COUNTERS + 1)
                    .contains(id(0), id(COUNTERS - 1), "video:new:views");
            assertThat(op.countersWritten()).isEqualTo(COUNTERS + 1);
            h.setProcessingTime(1 + 10 * CounterRebuild.STEP_MILLIS);
            assertThat(op.rewritten).as("ended").hasSize(COUNTERS + 1);
            OperatorSubtaskState after = h.snapshot(3, 3);

            // restored from the checkpoint taken during the rebuild: it starts over, every counter again once
            Host again = rebuiltFrom(during);
            assertThat(again.rewritten).hasSize(COUNTERS + 1);
            assertThat(new HashSet<>(again.rewritten)).hasSize(COUNTERS + 1);
            // restored from the checkpoint taken after it: nothing to do
            Host done = rebuiltFrom(after);
            assertThat(done.rewritten).isEmpty();
            assertThat(done.lossesSeen()).isZero();
        }
    }

    @Test
    void atTheEndOfInputARebuildUnderWayWritesTheRestAtOnce() throws Exception {
        OperatorSubtaskState checkpoint = counters(true);
        Host op = new Host(false);
        try (var h = restored(op, checkpoint)) {
            op.finish(); // no processing time passes: the rest goes at once
            assertThat(op.rewritten).hasSize(COUNTERS);
            assertThat(op.countersWritten()).isEqualTo(COUNTERS);
        }
    }

    @Test
    void withoutALossNorARebuildUnderWayNothingIsWrittenAgain() throws Exception {
        Host op = rebuiltFrom(counters(false));
        assertThat(op.rewritten).isEmpty();
        assertThat(op.countersWritten()).isZero();
    }
}
