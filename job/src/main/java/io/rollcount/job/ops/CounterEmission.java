package io.rollcount.job.ops;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.model.WindowSum;
import io.rollcount.job.ops.CounterStore.CachedCounter;
import io.rollcount.job.policy.NamespacePolicy;
import io.rollcount.job.policy.Policies;
import io.rollcount.sketches.RedisHyperLogLog;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * What a {@link CountPerCounter} subtask emits of one counter (the current key), each record stamped with the
 * due time at hand ({@link #stampAt}) or none: its changed values, the revisions due, the rollup and window
 * top-K entry of a window that closes, everything it holds for a rebuild of Redis, and its users. The flags
 * of {@link CounterState} say what is still to emit; emitting clears them.
 *
 * <p>The users of each partial sum go into the 1h and 1d sketches kept for the {@code uniques} of the rollups (in
 * keyed state, named {@code <res>:<start ms>}, only where the window's sum is kept) and out as USERS of its 1h
 * and 1d windows and of all time: held per key with the counter ({@link HeldUsers}) until its next flush
 * ({@link #heldUsers}, which the owner calls with every flush of the counter and before every checkpoint barrier,
 * so no user waits in the operator's state), or at once where no sketch is kept to decide. A user goes to a key
 * only where it can change the key's HyperLogLog, which is exact because the key holds at least every register
 * of a sketch kept here:
 * <ul>
 *   <li>to a window's key where the window's sketch is kept, only if it raised a register of that sketch (the
 *       key has received every user that did; a user that raised none sets no register of the key higher);
 *   <li>to {@code u:all}, only if it raised a register of its 1d window's sketch (of its 1h window's where no
 *       1d sketch is kept): every such user went to {@code u:all} too, so {@code u:all} holds every register
 *       of that sketch;
 *   <li>to every key where no sketch is kept to decide.
 * </ul>
 * Redis holds what the sink flushed before each checkpoint completed, so a restore keeps this true (a replay
 * sends again what raised a restored sketch). A loss of Redis's data breaks it until the rebuild of the lost
 * keys ({@link #everything}), which merges every sketch held into its window's key and into {@code u:all}.
 */
final class CounterEmission {
    private static final Resolution[] UNIQUE_RESOLUTIONS = {Resolution.H1, Resolution.D1};
    private static final long NO_TIMESTAMP = Long.MIN_VALUE;

    private final Output<StreamRecord<CounterUpdate>> output;
    private final CounterStore store;
    private final Policies policies;
    private final WindowRules rules;
    /** The timestamp of records emitted now: the due time at hand, else none. */
    private long stamp = NO_TIMESTAMP;

    CounterEmission(
            Output<StreamRecord<CounterUpdate>> output, CounterStore store, Policies policies, WindowRules rules) {
        this.output = output;
        this.store = store;
        this.policies = policies;
        this.rules = rules;
    }

    /** Records emitted from now on carry {@code at}; {@link #unstamped} ends it. */
    void stampAt(long at) {
        stamp = at;
    }

    void unstamped() {
        stamp = NO_TIMESTAMP;
    }

    /** Window {@code i} closed: its rollup (revision 0) if its resolution rolls up, its entry of the window top-K. */
    void closed(CachedCounter c, int i) throws Exception {
        CounterState s = c.state;
        Resolution r = s.resolution(i);
        if (!c.policy.keeps(r)) return; // restored, of a resolution the policies no longer keep: not written
        if (rules.rollsUp(r)) output.collect(CountPerCounter.ROLLUPS, stamped(rollup(c, i)));
        if (WindowRules.topkOf(r, c.policy)) {
            output.collect(CountPerCounter.CLOSED_WINDOWS, stamped(new WindowSum(c.id, r.label, s.start[i], s.sum[i])));
        }
    }

    /** The revisions due (a closed window changed since its last rollup): the next revision of each. */
    void revisions(CachedCounter c) throws Exception {
        CounterState s = c.state;
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.REVISE)) {
                s.revision[i]++;
                s.clear(i, CounterState.REVISE);
                output.collect(CountPerCounter.ROLLUPS, stamped(rollup(c, i)));
            }
        }
    }

    /** The total if it changed, and every window changed since it was last emitted. */
    void changes(CachedCounter c) {
        CounterState s = c.state;
        if (s.totalDirty) {
            emit(CounterUpdate.total(c.id, s.total, s.totalEvents, s.negative));
            s.totalDirty = false;
        }
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.DIRTY)) {
                if (!c.policy.keeps(s.resolution(i))) continue; // restored, of a resolution no longer kept
                emit(windowUpdate(c.id, s, i, c.policy));
                s.clear(i, CounterState.DIRTY);
            }
        }
    }

    /**
     * Everything Redis shows of the counter {@code id} (the current key) as the operator holds it: the total,
     * every window it keeps (open, closed within the allowed lateness, final and not dropped yet) and the
     * sketches of its 1h and 1d windows, merged into {@code u:all} too. Read from the heap if the counter is
     * there, else from keyed state (without caching it). Returns how many updates it emitted (one key each).
     */
    int everything(String id) throws Exception {
        CachedCounter c = store.cached(id);
        CounterState s = c != null ? c.state : store.peek(id);
        if (s == null) return 0;
        NamespacePolicy policy = c != null && c.policy != null ? c.policy : policies.forCounter(id);
        emit(CounterUpdate.total(id, s.total, s.totalEvents, s.negative));
        int n = 1;
        for (int i = 0; i < s.size; i++) {
            Resolution r = s.resolution(i);
            long start = s.start[i];
            emit(windowUpdate(id, s, i, policy));
            n++;
            if ((r == Resolution.H1 || r == Resolution.D1) && s.has(i, CounterState.HAS_USERS)) {
                byte[] bytes = store.sketchBytes(c, r.label + ":" + start);
                if (bytes != null) {
                    emit(CounterUpdate.sketch(id, r, start, bytes, policy.expireAtMillis(r, start)));
                    n++;
                    // u:all holds every register of the sketches kept (see the class comment)
                    if (policy.uniquesAll()) {
                        emit(CounterUpdate.allTimeSketch(id, bytes));
                        n++;
                    }
                }
            }
        }
        return n;
    }

    /**
     * The partial's users, hashed once here (for the sketches and the Redis sink's buffer): added to the sketches
     * of its 1h and 1d windows, each to go to a key only where it may change that key's HyperLogLog (see the class
     * comment): held with the counter where a sketch decides, else emitted at once.
     */
    void users(CachedCounter c, PartialSum p) throws Exception {
        CounterState s = c.state;
        NamespacePolicy policy = c.policy;
        long[] hashes = hashes(p.users);
        // which users raised a register of the 1h and of the 1d window's sketch: null where none is kept
        boolean[] raisedHour = null;
        boolean[] raisedDay = null;
        long hourStart = 0;
        long dayStart = 0;
        for (Resolution r : UNIQUE_RESOLUTIONS) {
            if (!policy.uniques(r)) continue;
            long start = r.windowStart(p.bucket);
            long expireAt = policy.expireAtMillis(r, start);
            // The sketch in state serves the rollups' uniques of the window: kept only where its window sum is.
            if (!policy.keeps(r)) {
                emit(CounterUpdate.windowUsers(c.id, r, start, p.users, hashes, expireAt));
                continue;
            }
            int i = s.find(r, start);
            // a window's sketch exists only once it has had users: a first user's window is not read for one
            boolean mayExist = s.has(i, CounterState.HAS_USERS);
            s.set(i, CounterState.HAS_USERS);
            boolean[] raised = store.addHashes(c, sketchName(c, r, start), hashes, mayExist);
            held(c).add(r, start, start, expireAt, p.users, hashes, raised);
            if (r == Resolution.D1) {
                raisedDay = raised;
                dayStart = start;
            } else {
                raisedHour = raised;
                hourStart = start;
            }
        }
        if (!policy.uniquesAll()) return;
        boolean[] raised = raisedDay != null ? raisedDay : raisedHour;
        if (raised == null) {
            emit(CounterUpdate.allTimeUsers(c.id, p.users, hashes));
            return;
        }
        long decidedBy = raisedDay != null ? dayStart : hourStart;
        held(c).add(null, CounterUpdate.NO_WINDOW, decidedBy, 0, p.users, hashes, raised);
    }

    /** The users held for the counter's keys since its last flush, one USERS update per key; none held after. */
    void heldUsers(CachedCounter c) {
        if (c.heldUsers != null && !c.heldUsers.isEmpty()) c.heldUsers.drainTo(c.id, this::emit);
    }

    private static HeldUsers held(CachedCounter c) {
        if (c.heldUsers == null) c.heldUsers = new HeldUsers();
        return c.heldUsers;
    }

    /** Drops the sketch of window {@code i}, if it has one (the window is final). */
    void dropSketch(CachedCounter c, int i) throws Exception {
        CounterState s = c.state;
        if (s.has(i, CounterState.HAS_USERS)) store.dropSketch(c, sketchName(c, s.resolution(i), s.start[i]));
    }

    /** Redis's HyperLogLog hash of each user. */
    private static long[] hashes(String[] users) {
        long[] out = new long[users.length];
        for (int i = 0; i < users.length; i++) out[i] = RedisHyperLogLog.hash(users[i]);
        return out;
    }

    /** The state name of a window's sketch, {@code <res>:<start ms>}; the 1h and 1d names are kept in the counter. */
    private static String sketchName(CachedCounter c, Resolution r, long start) {
        int slot = r == Resolution.H1 ? 0 : r == Resolution.D1 ? 1 : -1;
        if (slot >= 0 && c.names != null && c.nameStarts[slot] == start) return c.names[slot];
        String name = r.label + ":" + start;
        if (slot >= 0) {
            if (c.names == null) {
                c.names = new String[2];
                c.nameStarts = new long[] {Long.MIN_VALUE, Long.MIN_VALUE};
            }
            c.nameStarts[slot] = start;
            c.names[slot] = name;
        }
        return name;
    }

    /** The value of window {@code i} of counter {@code id}'s state {@code s}, expiring as {@code policy} says. */
    private static CounterUpdate windowUpdate(String id, CounterState s, int i, NamespacePolicy policy) {
        Resolution r = s.resolution(i);
        long start = s.start[i];
        return CounterUpdate.window(
                id, r, start, s.sum[i], s.events[i], s.has(i, CounterState.NEGATIVE), policy.expireAtMillis(r, start));
    }

    private Rollup rollup(CachedCounter c, int i) throws Exception {
        CounterState s = c.state;
        Long uniqueUsers = null;
        if (s.has(i, CounterState.HAS_USERS)) {
            RedisHyperLogLog sketch = store.sketch(c, sketchName(c, s.resolution(i), s.start[i]));
            uniqueUsers = sketch == null ? null : sketch.count();
        }
        return new Rollup(
                c.id, s.resolution(i).label, s.start[i], s.end(i), s.sum[i], s.events[i], uniqueUsers, s.revision[i]);
    }

    private void emit(CounterUpdate u) {
        output.collect(stamped(u));
    }

    private <T> StreamRecord<T> stamped(T value) {
        return stamp == NO_TIMESTAMP ? new StreamRecord<>(value) : new StreamRecord<>(value, stamp);
    }
}
