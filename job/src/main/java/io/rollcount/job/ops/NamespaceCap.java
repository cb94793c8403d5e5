package io.rollcount.job.ops;

import io.rollcount.job.model.CounterId;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which namespaces get lists of their own ({@code --trending.max-namespaces}): the first {@code max} seen,
 * for as long as they are used; {@value CounterId#ALL_NAMESPACES} always. Counter ids without a {@code :} are each
 * a namespace of their own, so without a cap 50,000 such ids made 50,000 trending keys, rewritten every
 * second, and the job crawled; past the cap a namespace's counters are in the {@code _all} lists only.
 * A namespace not used for {@link #IDLE_MILLIS} (processing time, the expiry of its trending key) gives
 * its place up, so that the cap is not held for good by namespaces that are gone.
 *
 * <p>Kept in operator state ({@code (namespace, last used)} pairs) by an operator of parallelism 1, so
 * that a restore keeps the same namespaces.
 */
final class NamespaceCap implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(NamespaceCap.class);

    /** A namespace unused this long gives its place up; also the expiry of its trending key. */
    static final long IDLE_MILLIS = 7L * 24 * 3600 * 1000;

    private final int max;
    private final String stateName;
    private transient Map<String, Long> admitted;
    private transient ListState<Tuple2<String, Long>> stored;
    private transient long refused;
    private transient long lastSweep;

    NamespaceCap(int max, String stateName) {
        if (max < 1) throw new IllegalArgumentException("--trending.max-namespaces must be at least 1, got " + max);
        this.max = max;
        this.stateName = stateName;
    }

    void initializeState(StateInitializationContext context) throws Exception {
        stored = context.getOperatorStateStore()
                .getListState(new ListStateDescriptor<>(stateName, Types.TUPLE(Types.STRING, Types.LONG)));
        admitted = new HashMap<>();
        for (Tuple2<String, Long> t : stored.get()) admitted.merge(t.f0, t.f1, Math::max);
    }

    void snapshotState() throws Exception {
        List<Tuple2<String, Long>> list = new ArrayList<>(admitted.size());
        admitted.forEach((ns, at) -> list.add(Tuple2.of(ns, at)));
        stored.update(list);
    }

    /** Whether {@code ns} has lists of its own; admits it if there is room. {@code now}: processing time. */
    boolean admit(String ns, long now) {
        if (CounterId.ALL_NAMESPACES.equals(ns)) return true;
        if (now - lastSweep > 60_000) sweep(now);
        Long before = admitted.get(ns);
        if (before != null || admitted.size() < max) {
            admitted.put(ns, now);
            return true;
        }
        if (refused++ == 0) {
            LOG.warn(
                    "{} namespaces have trending and window top-K lists of their own (--trending.max-namespaces); "
                            + "the counters of namespace '{}' and of every further one are in the _all lists only",
                    max,
                    ns);
        }
        return false;
    }

    boolean isAdmitted(String ns) {
        return CounterId.ALL_NAMESPACES.equals(ns) || admitted.containsKey(ns);
    }

    int size() {
        return admitted.size();
    }

    /** Gives up the places of namespaces unused for {@link #IDLE_MILLIS}. */
    private void sweep(long now) {
        lastSweep = now;
        admitted.values().removeIf(last -> now - last > IDLE_MILLIS);
    }
}
