package io.rollcount.job.ops;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.OperatorStateStore;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;

/**
 * The wall-clock time a job stood still, and the TTL that keeps a state two horizons of running time although
 * Flink's state TTL counts wall-clock time.
 *
 * <p>A restored state holds what its subtasks wrote up to their snapshot; from the snapshot to the restore its TTL
 * clock ran while the job did not. Each snapshot records its wall-clock time ({@code alive-at}, union operator
 * state: the earliest of all subtasks is kept, which can only make a stop look longer); each restore adds a stop
 * from that time to its own wall-clock time. The stops are union operator state too, the same in every subtask,
 * so that a rescale keeps them.
 *
 * <p>The TTL of a run is the running time wanted plus every stop that ended within the TTL before the restore: the
 * least {@code ttl} with {@code ttl = running + (stops ending after now - ttl)}. An entry older than that has then
 * lived at least {@code running} of running time, and a younger one lived through no stop left out. Stops that
 * ended before it are dropped; a run keeps its TTL to its end (stops only leave its window as it runs, so the TTL
 * stays long enough). A state restored from a version without these lists has no known stop.
 */
final class JobStops {
    /** The wall-clock time of each subtask's latest snapshot. */
    private static final String ALIVE_AT = "alive-at";

    /** Each stop: the wall-clock time it began at and its length, in ms. */
    private static final String STOPS = "stops";

    private final ListState<Long> aliveAtState;
    private final ListState<Tuple2<Long, Long>> stopsState;
    /** The stops kept: the time each began at, to its length. */
    private final TreeMap<Long, Long> stops = new TreeMap<>();
    /** The earliest snapshot time restored; null when the job started empty or the state has no such list. */
    private final Long restoredAliveAt;

    private long ttlMillis = -1;

    private JobStops(ListState<Long> aliveAtState, ListState<Tuple2<Long, Long>> stopsState) throws Exception {
        this.aliveAtState = aliveAtState;
        this.stopsState = stopsState;
        Long earliest = null;
        for (Long at : aliveAtState.get()) earliest = earliest == null ? at : Math.min(earliest, at);
        restoredAliveAt = earliest;
        for (Tuple2<Long, Long> s : stopsState.get()) stops.merge(s.f0, s.f1, Math::max);
    }

    /** The stops restored from {@code store}, or none. */
    static JobStops restore(OperatorStateStore store) throws Exception {
        return new JobStops(
                store.getUnionListState(new ListStateDescriptor<>(ALIVE_AT, Types.LONG)),
                store.getUnionListState(new ListStateDescriptor<>(STOPS, Types.TUPLE(Types.LONG, Types.LONG))));
    }

    /**
     * Adds the stop from the restored snapshot to {@code now} and returns the run's TTL for {@code runningMillis}
     * of running time.
     */
    long restart(long now, long runningMillis) {
        if (restoredAliveAt != null && now > restoredAliveAt)
            stops.merge(restoredAliveAt, now - restoredAliveAt, Math::max);
        long ttl = runningMillis;
        for (long previous = -1; ttl != previous; ) {
            previous = ttl;
            long stood = 0;
            for (Map.Entry<Long, Long> s : stops.entrySet())
                if (end(s) > now - ttl) stood = DropDuplicates.saturatedAdd(stood, s.getValue());
            ttl = DropDuplicates.saturatedAdd(runningMillis, stood);
        }
        long from = now - ttl;
        stops.entrySet().removeIf(s -> end(s) <= from);
        ttlMillis = ttl;
        return ttl;
    }

    /** The TTL {@link #restart} chose. */
    long ttlMillis() {
        return ttlMillis;
    }

    /** Records the snapshot's wall-clock time and the stops kept. */
    void snapshot(long now) throws Exception {
        aliveAtState.update(List.of(now));
        List<Tuple2<Long, Long>> kept = new ArrayList<>(stops.size());
        for (Map.Entry<Long, Long> s : stops.entrySet()) kept.add(Tuple2.of(s.getKey(), s.getValue()));
        stopsState.update(kept);
    }

    private static long end(Map.Entry<Long, Long> stop) {
        return DropDuplicates.saturatedAdd(stop.getKey(), stop.getValue());
    }
}
