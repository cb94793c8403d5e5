package io.rollcount.job.ops;

import io.rollcount.sketches.ExpiringIdSet;
import io.rollcount.sketches.Hashing;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.java.tuple.Tuple2;
import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyedStateBackend;

/**
 * The {@code (counter, event_id)} pairs one deduplication subtask holds, each a 128-bit fingerprint of its key
 * ({@link #hiOf}, {@link #loOf}) with the time it is forgotten at, and where each lives:
 *
 * <ul>
 *   <li>on the heap, in an {@link ExpiringIdSet} that answers for every pair it holds without reading state;
 *   <li>in keyed state, as a log ({@code id-log}): the pairs added since the last write-out ({@link IdLog}) are
 *       appended as one chunk per key group, under the key group's own key ({@link KeyGroupKeys}, so that they
 *       move with it when the job rescales), by {@link #writeOut} (before every snapshot, and whenever the
 *       pairs added fill the log's room);
 *   <li>in keyed state, as a map from fingerprint to time ({@code id-overflow}, under the key group's key), for a
 *       pair the set has no room for; until the watermark passes the latest time there ({@link #overflowUntil}),
 *       a pair the set does not hold is read there too.
 * </ul>
 *
 * <p>A pair's time is the latest of its entries: the set may hold an earlier one than the map (a pair restored
 * from the log, put in the map since). {@link #restore} reads a restored pair back, keeping the later time.
 *
 * <p>Not thread-safe: the owning operator's task thread. Every method that reaches keyed state sets the
 * backend's current key to a key group's key and, where it says so, back to the pair's.
 */
final class HeldPairs {
    /** The seeds of a pair's two hashes. */
    private static final long HI_SEED = 0x5EED_D0D0L;

    private static final long LO_SEED = 0xD0D0_5EEDL;

    private final ExpiringIdSet ids;
    private final IdLog added;
    private final KeyGroupKeys groupKeys;
    private final int keyGroups;
    private final KeyedStateBackend<String> backend;
    private final ListState<byte[]> log;
    private final MapState<Tuple2<Long, Long>, Long> overflow;
    /** Keyed-state reads of pairs. */
    private final Counter stateReads;

    /** Until which watermark a pair not in the set is read in {@link #overflow}: the latest time there. */
    private long overflowUntil = Long.MIN_VALUE;

    HeldPairs(
            ExpiringIdSet ids,
            IdLog added,
            KeyGroupKeys groupKeys,
            int keyGroups,
            KeyedStateBackend<String> backend,
            ListState<byte[]> log,
            MapState<Tuple2<Long, Long>, Long> overflow,
            Counter stateReads) {
        this.ids = ids;
        this.added = added;
        this.groupKeys = groupKeys;
        this.keyGroups = keyGroups;
        this.backend = backend;
        this.log = log;
        this.overflow = overflow;
        this.stateReads = stateReads;
    }

    /** The fingerprint of {@code key}: {@link #hiOf} in {@code out[0]}, {@link #loOf} in {@code out[1]}, in one pass. */
    static void fingerprint(String key, long[] out) {
        Hashing.murmur64AUtf8(key, HI_SEED, LO_SEED, out);
    }

    static long hiOf(String key) {
        return Hashing.murmur64AUtf8(key, HI_SEED);
    }

    static long loOf(String key) {
        return Hashing.murmur64AUtf8(key, LO_SEED);
    }

    /**
     * The time of the pair of {@code key} ({@code hi}, {@code lo} its hashes) where it may be after {@code
     * watermark}, or one not after it ({@link ExpiringIdSet#NONE}: none held); the current key stays {@code key}.
     */
    long timeOf(String key, long hi, long lo, long watermark) throws Exception {
        long at = ids.expiryOf(hi, lo);
        if (at > watermark || watermark >= overflowUntil) return at;
        stateReads.inc();
        backend.setCurrentKey(groupKeys.of(keyGroupOf(key)));
        Long kept = overflow.get(Tuple2.of(hi, lo));
        backend.setCurrentKey(key);
        return kept == null ? at : Math.max(at, kept);
    }

    /**
     * Holds the pair of {@code key} until {@code at}; false if the set had no room for it at {@code watermark}
     * (it went to {@code id-overflow}). The current key stays {@code key}.
     */
    boolean hold(String key, long hi, long lo, long at, long watermark) throws Exception {
        return ids.add(hi, lo, at, watermark) ? logged(key, hi, lo, at) : overflowed(key, hi, lo, at);
    }

    /**
     * {@link #timeOf} then, where the pair is not held after {@code watermark}, {@link #hold} until {@code at}, in one
     * probe of the set: only while no pair is read in keyed state ({@code watermark} not before {@link
     * #overflowUntil}). {@link ExpiringIdSet.Added#LIVE}: held after {@code watermark}, nothing changed; {@code
     * REFUSED}: it went to {@code id-overflow}. The current key stays {@code key}.
     */
    ExpiringIdSet.Added holdUnlessLive(String key, long hi, long lo, long at, long watermark) throws Exception {
        ExpiringIdSet.Added added = ids.addIfNotLive(hi, lo, at, watermark);
        if (added == ExpiringIdSet.Added.ADDED) logged(key, hi, lo, at);
        else if (added == ExpiringIdSet.Added.REFUSED) overflowed(key, hi, lo, at);
        return added;
    }

    /** Whether {@link #holdUnlessLive} may answer for a pair at {@code watermark}: no pair is read in keyed state. */
    boolean setAnswersAt(long watermark) {
        return watermark >= overflowUntil;
    }

    /** The pair the set now holds, to the log. */
    private boolean logged(String key, long hi, long lo, long at) throws Exception {
        if (added.isFull()) {
            writeOut();
            backend.setCurrentKey(key);
        }
        added.add(keyGroupOf(key), hi, lo, at);
        return true;
    }

    /** The pair the set has no room for, to {@code id-overflow}. */
    private boolean overflowed(String key, long hi, long lo, long at) throws Exception {
        backend.setCurrentKey(groupKeys.of(keyGroupOf(key)));
        putOverflow(hi, lo, at);
        backend.setCurrentKey(key);
        return false;
    }

    /** Appends the pairs added since the last time to the log, a chunk per key group. */
    void writeOut() throws Exception {
        added.drainTo((group, chunk) -> {
            backend.setCurrentKey(groupKeys.of(group));
            log.add(chunk);
        });
    }

    /**
     * Reads the log of this subtask's key groups back, in the order written, keeping each pair whose time is after
     * {@code after}.
     */
    void restoreLog(long after) throws Exception {
        for (int group : groupKeys.range()) {
            backend.setCurrentKey(groupKeys.of(group));
            Iterable<byte[]> chunks = log.get();
            if (chunks == null) continue;
            for (byte[] chunk : chunks)
                IdLog.read(chunk, (hi, lo, at) -> {
                    if (at > after) restore(hi, lo, at);
                });
        }
    }

    /** Keeps a restored pair of {@code key} (another state's) until {@code at}; sets the current key. */
    void restore(String key, long at) throws Exception {
        backend.setCurrentKey(groupKeys.of(keyGroupOf(key)));
        restore(hiOf(key), loOf(key), at);
    }

    /**
     * Keeps a restored pair's time where it is later than the one kept, in the set or, where it has no room, in
     * {@code id-overflow} under the current key (its key group's), which may hold a later time put while the job ran.
     */
    private void restore(long hi, long lo, long at) throws Exception {
        long held = ids.expiryOf(hi, lo);
        if (held != ExpiringIdSet.NONE) {
            if (at > held) ids.add(hi, lo, at, Long.MIN_VALUE); // held: never refused
            return;
        }
        if (ids.add(hi, lo, at, Long.MIN_VALUE)) return;
        Long kept = overflow.get(Tuple2.of(hi, lo));
        if (kept == null || kept < at) putOverflow(hi, lo, at);
    }

    /** Keeps a pair the set has no room for, under the current key (its key group's). */
    private void putOverflow(long hi, long lo, long at) throws Exception {
        overflow.put(Tuple2.of(hi, lo), at);
        overflowUntil = Math.max(overflowUntil, at);
    }

    private int keyGroupOf(String key) {
        return KeyGroupRangeAssignment.assignToKeyGroup(key, keyGroups);
    }

    /** Until which watermark a pair not in the set is read in keyed state. */
    long overflowUntil() {
        return overflowUntil;
    }

    /** Restores {@link #overflowUntil}: the latest of every subtask's. */
    void overflowUntil(long until) {
        overflowUntil = Math.max(overflowUntil, until);
    }

    /** The set (its size; tests). */
    ExpiringIdSet ids() {
        return ids;
    }
}
