package io.rollcount.job.ops;

import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.TopList;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Window top-K, after the merge ({@link WindowTopMerge}), at parallelism 1: passes on the lists of
 * {@value CounterId#ALL_NAMESPACES} and of at most {@code maxNamespaces} namespaces (the first seen,
 * {@link NamespaceCap}; {@code --trending.max-namespaces}) and drops the rest, so that counter ids without
 * a {@code :} (each its own namespace) cannot make a sorted set (and a {@code counter-trending} record) per
 * id and window. Their counters are still ranked in the {@code _all} lists. Cheap at parallelism 1: it
 * sees one small list per namespace and closed window, never an event. It sits after the merge, not
 * before it: between {@link LocalWindowTopK} and the merge, TrendingIT's savepoint test (stopped at
 * parallelism 2, restored at 1) ended with window lists that missed what was counted before the savepoint.
 * Here the path from the counts to the merge is exactly as it was.
 */
public final class WindowTopCap extends AbstractStreamOperator<TopList>
        implements OneInputStreamOperator<TopList, TopList> {
    private static final long serialVersionUID = 1L;
    public static final String DROPPED = "window-top.namespaces-over-cap";

    private final NamespaceCap cap;
    private transient LongCounter dropped;

    public WindowTopCap(int maxNamespaces) {
        this.cap = new NamespaceCap(maxNamespaces, "window-top-namespaces");
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        cap.initializeState(context);
    }

    @Override
    public void open() throws Exception {
        super.open();
        dropped = getRuntimeContext().getLongCounter(DROPPED);
    }

    @Override
    public void processElement(StreamRecord<TopList> record) {
        if (cap.admit(record.getValue().ns, getProcessingTimeService().getCurrentProcessingTime())) {
            output.collect(record);
        } else {
            dropped.add(1);
        }
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        cap.snapshotState();
    }
}
