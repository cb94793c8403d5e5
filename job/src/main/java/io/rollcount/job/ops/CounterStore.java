package io.rollcount.job.ops;

import io.rollcount.job.policy.NamespacePolicy;
import io.rollcount.sketches.RedisHyperLogLog;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.stream.Stream;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.state.State;
import org.apache.flink.api.common.state.StateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.runtime.state.VoidNamespaceSerializer;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackend;
import org.apache.flink.streaming.api.operators.KeyContext;

/**
 * The counters of one {@link CountPerCounter} subtask: keyed state is the truth at every checkpoint (a
 * {@code ValueState<CounterState>} "counter" and a {@code MapState<String, byte[]>} "uniques" of Redis-format
 * HyperLogLogs per counter), and between checkpoints the counters in use live on the heap, least recently
 * used first, within a budget of bytes. A counter is read from keyed state when it is first needed and
 * written back only when it is evicted and, if it changed since, at {@link #writeBackAll} (before the keyed
 * state is snapshotted). So a hot counter costs heap work only. On RocksDB, {@link #writeBackAll} writes in
 * RocksDB's key order ({@link RocksDbKeyOrder}), so that each insert into the memtable's skip list starts where
 * the one before ended instead of searching it from the top.
 *
 * <p>What has changed since a counter was last written back (its {@link CounterState}, which sketches, its
 * weight on the heap) is this class's alone: the fields of {@link CachedCounter} that say so are private
 * to it. The owner says when a counter changed ({@link #changed}, {@link #slotsChanged}); eviction is
 * part of {@link #changed} and lets the owner finish with the evicted counter first.
 *
 * <p>Every method about one counter expects the key context to be that counter (the owner sets it).
 */
final class CounterStore {
    /** What the owner does with a counter about to leave the heap (the key context is that counter). */
    interface Eviction {
        void evicting(CachedCounter c) throws Exception;
    }

    /** One counter on the heap. */
    static final class CachedCounter {
        final String id;
        final CounterState state;
        /** The policy of the counter's namespace ({@code --policies}), set by the owner once per stay on the heap. */
        NamespacePolicy policy;
        /** The owner's: waiting for its next flush. */
        boolean flushPending;
        /** The owner's: users waiting for the counter's next flush ({@link HeldUsers}); null while none. */
        HeldUsers heldUsers;
        /**
         * The names of the last 1h and 1d sketches used, and their window starts: built once per window, not per
         * event ({@link CounterEmission}); null until the counter has users.
         */
        long[] nameStarts;

        String[] names;

        /**
         * The sketches read or created so far: {@code sketchNames[i]} (the state name, "1h:&lt;start&gt;" or
         * "1d:&lt;start&gt;") and {@code sketchValues[i]} for {@code i < sketchCount}, in no order; a name with a
         * null sketch was read and is absent. A counter has a few (the 1h and 1d windows its lateness keeps open), so
         * they sit in arrays scanned by name rather than in a map: fewer objects per counter for the collector to
         * copy. Null while the counter has none.
         */
        private String[] sketchNames;

        private RedisHyperLogLog[] sketchValues;
        /** {@code unstoredSketch[i]}: sketch i changed since it was last written back. */
        private boolean[] unstoredSketch;

        private int sketchCount;
        /** The counter had no state when it was read: none of its sketches is in keyed state either. */
        private final boolean fresh;
        /** The {@link CounterState} changed since it was last written back. */
        private boolean unstored;
        /** Its place in the store's {@code unstoredCounters} while {@link #unstored}, else -1. */
        private int unstoredAt = -1;
        /** Bytes of heap this entry is counted for. */
        private long weight;
        /** Something {@link #weigh} counts changed (a slot, a sketch) since the entry was last weighed. */
        private boolean weightStale;

        private CachedCounter(String id, CounterState state, boolean fresh) {
            this.id = id;
            this.state = state;
            this.fresh = fresh;
        }

        /** About the heap this counter takes: object headers, the slot arrays and the sketches' bytes. */
        private long weigh() {
            long w = 240 + 2L * id.length() + 34L * state.start.length;
            for (int i = 0; i < sketchCount; i++) {
                RedisHyperLogLog h = sketchValues[i];
                w += h == null ? 48 : 80 + h.heapBytes();
            }
            return w;
        }

        /** The index of the sketch {@code name}, -1 if it was neither read nor created. */
        private int sketchIndex(String name) {
            for (int i = 0; i < sketchCount; i++) {
                String n = sketchNames[i];
                if (n == name || n.equals(name)) return i;
            }
            return -1;
        }

        /** The sketch {@code name}: null if absent or not read yet. */
        private RedisHyperLogLog sketchNamed(String name) {
            int i = sketchIndex(name);
            return i < 0 ? null : sketchValues[i];
        }

        /** Sets the sketch {@code name} (null: read and absent); returns its index. */
        private int putSketch(String name, RedisHyperLogLog h) {
            int i = sketchIndex(name);
            if (i >= 0) {
                sketchValues[i] = h;
                return i;
            }
            if (sketchNames == null) {
                sketchNames = new String[4];
                sketchValues = new RedisHyperLogLog[4];
                unstoredSketch = new boolean[4];
            } else if (sketchCount == sketchNames.length) {
                int n = sketchCount * 2;
                sketchNames = Arrays.copyOf(sketchNames, n);
                sketchValues = Arrays.copyOf(sketchValues, n);
                unstoredSketch = Arrays.copyOf(unstoredSketch, n);
            }
            i = sketchCount++;
            sketchNames[i] = name;
            sketchValues[i] = h;
            unstoredSketch[i] = false;
            return i;
        }

        /** Forgets the sketch {@code name}: the last one takes its place. */
        private void removeSketch(String name) {
            int i = sketchIndex(name);
            if (i < 0) return;
            int last = --sketchCount;
            sketchNames[i] = sketchNames[last];
            sketchValues[i] = sketchValues[last];
            unstoredSketch[i] = unstoredSketch[last];
            sketchNames[last] = null;
            sketchValues[last] = null;
            unstoredSketch[last] = false;
        }
    }

    private final LinkedHashMap<String, CachedCounter> heap = new LinkedHashMap<>(1 << 12, 0.75f, true);
    private final long budgetBytes;
    private long bytes;
    /**
     * The counters changed since they were last written back, in the order they first changed: what {@link
     * #writeBackAll} visits, rather than every counter on the heap. A counter written back on its way out of the
     * heap leaves a null in its place, so the list never keeps an evicted counter alive; the nulls are squeezed
     * out once they outnumber the counters on the heap (a job without checkpoints never empties the list).
     */
    private final ArrayList<CachedCounter> unstoredCounters = new ArrayList<>();

    private final ValueStateDescriptor<CounterState> stateDescriptor;
    private final ValueState<CounterState> state;
    private final MapState<String, byte[]> uniques;
    private final KeyedStateBackend<String> backend;
    private final KeyContext keyContext;
    /** The keyed state backend keeps value objects (rather than serialising them). */
    private final boolean heapBackend;
    /** The job's key groups (its max parallelism), for RocksDB's key order. */
    private final int keyGroups;
    /** Reads of keyed state: a counter's state or a sketch not on the heap ({@link #countReads}). */
    private Counter reads = new SimpleCounter();

    /** How an operator gives its keyed state of the current key (its {@code getPartitionedState}). */
    interface KeyedStates {
        <S extends State> S get(StateDescriptor<S, ?> descriptor) throws Exception;
    }

    /**
     * The store of an operator's counters within {@code budgetBytes} of heap, on its keyed state "counter" and
     * "uniques" ({@code states}, {@code backend}, {@code keyGroups} key groups), setting the current key through
     * {@code keyContext}.
     */
    static CounterStore open(
            long budgetBytes,
            KeyedStates states,
            KeyedStateBackend<String> backend,
            int keyGroups,
            KeyContext keyContext)
            throws Exception {
        ValueStateDescriptor<CounterState> counter = new ValueStateDescriptor<>("counter", CounterState.Info.INSTANCE);
        return new CounterStore(
                budgetBytes,
                counter,
                states.get(counter),
                states.get(new MapStateDescriptor<>(
                        "uniques", Types.STRING, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO)),
                backend,
                keyGroups,
                keyContext);
    }

    CounterStore(
            long budgetBytes,
            ValueStateDescriptor<CounterState> stateDescriptor,
            ValueState<CounterState> state,
            MapState<String, byte[]> uniques,
            KeyedStateBackend<String> backend,
            int keyGroups,
            KeyContext keyContext) {
        if (budgetBytes <= 0)
            throw new IllegalArgumentException("counter cache budget must be > 0 bytes, got " + budgetBytes);
        this.budgetBytes = budgetBytes;
        this.stateDescriptor = stateDescriptor;
        this.state = state;
        this.uniques = uniques;
        this.backend = backend;
        this.keyContext = keyContext;
        this.heapBackend = backend instanceof HeapKeyedStateBackend;
        this.keyGroups = keyGroups;
    }

    /** Counts every read of keyed state in {@code reads} from now on. */
    void countReads(Counter reads) {
        this.reads = reads;
    }

    /** Reads of keyed state counted so far. */
    long reads() {
        return reads.getCount();
    }

    // ------------------------------------------------------------------ counters

    /** The counter (the current key), now the most recently used, from the heap or else from keyed state. */
    CachedCounter get(String id) throws Exception {
        CachedCounter c = heap.get(id);
        if (c != null) return c;
        reads.inc();
        CounterState s = state.value();
        c = new CachedCounter(id, s == null ? new CounterState() : s, s == null);
        c.weight = c.weigh();
        bytes += c.weight;
        heap.put(id, c);
        return c;
    }

    /** The counter if it is on the heap (now the most recently used), else null. */
    CachedCounter cached(String id) {
        return heap.get(id);
    }

    /** The counter's (the current key's) state: from the heap if it is there, else from keyed state without caching it; null if none. */
    CounterState peek(String id) throws Exception {
        CachedCounter c = heap.get(id);
        if (c != null) return c.state;
        reads.inc();
        return state.value();
    }

    /** Its slots changed in number (added, removed): weighed again at the next {@link #changed}. */
    void slotsChanged(CachedCounter c) {
        c.weightStale = true;
    }

    /** Its state changed: written back at the next snapshot or when evicted (no eviction now). */
    void touched(CachedCounter c) {
        markUnstored(c);
    }

    /**
     * Its state changed: written back at the next snapshot or when evicted; weighed again if its size
     * changed, then the least recently used counters other than it leave the heap while over budget, each
     * handed to {@code eviction} first and then written back. The key context is {@code c} again after.
     */
    void changed(CachedCounter c, Eviction eviction) throws Exception {
        markUnstored(c);
        if (c.weightStale) {
            long w = c.weigh();
            bytes += w - c.weight;
            c.weight = w;
            c.weightStale = false;
        }
        CachedCounter evicted = pollEldestOverBudget(c);
        if (evicted == null) return;
        do {
            keyContext.setCurrentKey(evicted.id);
            eviction.evicting(evicted);
            writeBack(evicted);
        } while ((evicted = pollEldestOverBudget(c)) != null);
        keyContext.setCurrentKey(c.id);
    }

    private CachedCounter pollEldestOverBudget(CachedCounter keep) {
        if (bytes <= budgetBytes) return null;
        Iterator<CachedCounter> it = heap.values().iterator();
        CachedCounter eldest = it.next();
        if (eldest == keep) return null;
        it.remove();
        bytes -= eldest.weight;
        return eldest;
    }

    private void markUnstored(CachedCounter c) {
        if (c.unstored) return;
        c.unstored = true;
        if (unstoredCounters.size() > 2 * heap.size() + 1_024) squeezeUnstored();
        c.unstoredAt = unstoredCounters.size();
        unstoredCounters.add(c);
    }

    /** Drops the nulls of {@code unstoredCounters}, the counters in it keeping their order. */
    private void squeezeUnstored() {
        int n = 0;
        for (int i = 0; i < unstoredCounters.size(); i++) {
            CachedCounter c = unstoredCounters.get(i);
            if (c == null) continue;
            c.unstoredAt = n;
            unstoredCounters.set(n++, c);
        }
        unstoredCounters.subList(n, unstoredCounters.size()).clear();
    }

    /** Writes the counter (the current key) to keyed state if it changed since it was last written back. */
    private void writeBack(CachedCounter c) throws Exception {
        if (!c.unstored) return;
        // RocksDB serialises the value here; a heap backend keeps the object, which the heap copy goes on changing
        state.update(heapBackend ? c.state.copy() : c.state);
        for (int i = 0; i < c.sketchCount; i++) {
            if (!c.unstoredSketch[i]) continue;
            RedisHyperLogLog h = c.sketchValues[i];
            if (h != null) uniques.put(c.sketchNames[i], h.toRedisBytes());
            c.unstoredSketch[i] = false;
        }
        c.unstored = false;
        unstoredCounters.set(c.unstoredAt, null);
        c.unstoredAt = -1;
    }

    /** Before a snapshot: every counter on the heap that changed since, written back to keyed state (it stays on the heap). */
    void writeBackAll() throws Exception {
        CachedCounter[] changed = new CachedCounter[unstoredCounters.size()];
        int n = 0;
        for (CachedCounter c : unstoredCounters) if (c != null) changed[n++] = c;
        if (!heapBackend) changed = RocksDbKeyOrder.sorted(changed, n, c -> c.id, keyGroups);
        for (int i = 0; i < n; i++) {
            keyContext.setCurrentKey(changed[i].id);
            writeBack(changed[i]);
        }
        unstoredCounters.clear();
    }

    /** Counters changed and not written back since, and the places the list of them takes (tests). */
    int[] unstored() {
        int n = 0;
        for (CachedCounter c : unstoredCounters) if (c != null) n++;
        return new int[] {n, unstoredCounters.size()};
    }

    /** Every counter of this subtask's key groups: in keyed state, or only on the heap yet; each once. */
    List<String> ids() throws Exception {
        ArrayList<String> ids = new ArrayList<>();
        HashSet<String> seen = new HashSet<>();
        try (Stream<String> s = backend.getKeys(stateDescriptor.getName(), VoidNamespace.INSTANCE)) {
            s.forEach(id -> {
                if (seen.add(id)) ids.add(id);
            });
        }
        for (CachedCounter c : heap.values()) {
            if (seen.add(c.id)) ids.add(c.id);
        }
        return ids;
    }

    /** Every counter in keyed state with its state (after a restore, before anything is on the heap). */
    void forEachStored(BiConsumer<String, CounterState> action) throws Exception {
        backend.applyToAllKeys(
                VoidNamespace.INSTANCE,
                VoidNamespaceSerializer.INSTANCE,
                stateDescriptor,
                (id, st) -> action.accept(id, st.value()));
    }

    /** Counters on the heap. */
    int size() {
        return heap.size();
    }

    /** Bytes the counters on the heap are weighed at. */
    long bytes() {
        return bytes;
    }

    // ------------------------------------------------------------------ unique-users sketches

    /** A sketch of the counter (the current key), read from keyed state on first use; null if it has none. */
    RedisHyperLogLog sketch(CachedCounter c, String name) throws Exception {
        int i = c.sketchIndex(name);
        if (i >= 0) return c.sketchValues[i];
        if (c.fresh) return null;
        reads.inc();
        byte[] bytes = uniques.get(name);
        RedisHyperLogLog h = bytes == null ? null : RedisHyperLogLog.fromRedisBytes(bytes);
        c.putSketch(name, h);
        c.weightStale = true;
        return h;
    }

    /**
     * Adds the hashes to the counter's sketch {@code name}, created if absent, and returns which of them raised
     * one of its registers ({@code raised[j]} for {@code hashes[j]}). {@code mayExist} false: the owner knows the
     * counter has no such sketch (its window never had users), so keyed state is not read.
     */
    boolean[] addHashes(CachedCounter c, String name, long[] hashes, boolean mayExist) throws Exception {
        RedisHyperLogLog hll = mayExist ? sketch(c, name) : c.sketchNamed(name);
        boolean changed = hll == null;
        if (hll == null) {
            hll = new RedisHyperLogLog();
            c.putSketch(name, hll);
        }
        boolean[] raised = new boolean[hashes.length];
        for (int j = 0; j < hashes.length; j++) {
            raised[j] = hll.addHash(hashes[j]);
            changed |= raised[j];
        }
        if (changed) {
            c.unstoredSketch[c.sketchIndex(name)] = true;
            c.weightStale = true;
        }
        return raised;
    }

    /** Drops the counter's sketch {@code name}, from the heap and from keyed state. */
    void dropSketch(CachedCounter c, String name) throws Exception {
        c.removeSketch(name);
        c.weightStale = true;
        uniques.remove(name);
    }

    /**
     * The bytes of the sketch {@code name} of the counter (the current key), from the heap if the counter
     * is there ({@code c}, or null), else from keyed state, without caching it; null if it has none.
     */
    byte[] sketchBytes(CachedCounter c, String name) throws Exception {
        RedisHyperLogLog h = c != null ? c.sketchNamed(name) : null;
        if (h != null) return h.toRedisBytes();
        reads.inc();
        return uniques.get(name);
    }
}
