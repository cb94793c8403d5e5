package io.rollcount.job.ops;

import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.Rollup;
import io.rollcount.job.model.WindowSum;
import io.rollcount.sketches.RedisHyperLogLog;
import org.apache.flink.api.common.state.MapState;
import org.apache.flink.api.common.state.MapStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.api.common.typeinfo.Types;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisWrite;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;
import org.apache.flink.util.OutputTag;

/**
 * The exact counts of one counter, keyed by counter id: all five resolutions and the all-time total in
 * one {@link CounterState}, so each partial sum costs one state read and one write (not one window
 * operator per resolution over the same stream).
 *
 * <p>Outputs, on the main stream, versioned {@link RedisWrite}s (the version is the number of events in
 * the value, so after a restart a replayed older value never overwrites a newer one):
 * <ul>
 *   <li>the total and every changed open window, at most once per flush interval (processing time,
 *       default 1 s) per changed counter;</li>
 *   <li>a window again when the watermark passes its end (closed: revision 0 goes to {@link #ROLLUPS})
 *       and when it passes end plus the allowed lateness (final: its state is dropped).</li>
 * </ul>
 * A late event within the allowed lateness that changes a closed window makes a new revision, emitted at
 * the next flush. The lateness rule itself is applied upstream ({@link PreAggregate}), against a
 * watermark never behind this operator's, so a partial sum always finds its windows here.
 */
public final class CountPerCounter extends KeyedProcessFunction<String, PartialSum, RedisWrite> {
    private static final long serialVersionUID = 1L;

    public static final OutputTag<Rollup> ROLLUPS = new OutputTag<>("rollups") {};
    /** Sums of closed 1m, 1h and 1d windows, for the window top-K per namespace. */
    public static final OutputTag<WindowSum> CLOSED_WINDOWS = new OutputTag<>("closed-windows") {};

    private static final String ALL_TIME = "all";

    private final RedisKeys keys;
    private final long lateness;
    private final long flushIntervalMillis;
    private transient ValueState<CounterState> state;
    /** Unique-users sketches in Redis's own format: "all", and "1h:<start>" / "1d:<start>" of open windows. */
    private transient MapState<String, byte[]> uniques;

    public CountPerCounter(RedisKeys keys, long allowedLatenessMillis, long flushIntervalMillis) {
        this.keys = keys;
        this.lateness = allowedLatenessMillis;
        this.flushIntervalMillis = flushIntervalMillis;
    }

    @Override
    public void open(OpenContext ctx) {
        state = getRuntimeContext().getState(new ValueStateDescriptor<>("counter", TypeInformation.of(CounterState.class)));
        uniques = getRuntimeContext().getMapState(new MapStateDescriptor<>("uniques", Types.STRING,
                PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
    }

    @Override
    public void processElement(PartialSum p, Context ctx, Collector<RedisWrite> out) throws Exception {
        CounterState s = state.value();
        if (s == null) s = new CounterState();
        for (Resolution r : Resolution.all()) {
            long start = r.windowStart(p.bucket);
            int i = s.find(r, start);
            if (i < 0) {
                i = s.add(r, start);
                // one event-time timer per counter, at its earliest due time (see onTimer), not two per window
                long due = start + r.sizeMillis - 1;
                if (due < s.nextTimer) {
                    ctx.timerService().registerEventTimeTimer(due);
                    s.nextTimer = due;
                }
            }
            s.sum[i] = Math.addExact(s.sum[i], p.sum);
            s.events[i] += p.events;
            s.set(i, CounterState.DIRTY);
            if (p.negative) s.set(i, CounterState.NEGATIVE);
            if (s.has(i, CounterState.CLOSED)) s.set(i, CounterState.REVISE);
        }
        if (p.users.length > 0) addUsers(s, p);
        s.total = Math.addExact(s.total, p.sum);
        s.totalEvents += p.events;
        s.negative |= p.negative;
        s.totalDirty = true;
        if (!s.flushPending) {
            long now = ctx.timerService().currentProcessingTime();
            ctx.timerService().registerProcessingTimeTimer((now / flushIntervalMillis + 1) * flushIntervalMillis);
            s.flushPending = true;
        }
        state.update(s);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<RedisWrite> out) throws Exception {
        CounterState s = state.value();
        if (s == null) return;
        String counter = ctx.getCurrentKey();
        if (ctx.timeDomain() == org.apache.flink.streaming.api.TimeDomain.PROCESSING_TIME) {
            s.flushPending = false;
            reviseChangedWindows(counter, s, ctx);
            writeDirty(counter, s, out);
        } else {
            // Everything due by the current watermark, not only by this timer: when a watermark passes several
            // due times at once (a close and an end of lateness, several resolutions, the end of input) one
            // state read and write does them all, instead of one per due time.
            long watermark = Math.max(timestamp, ctx.timerService().currentWatermark());
            for (int i = 0; i < s.size; i++) {
                if (!s.has(i, CounterState.CLOSED) && watermark >= s.end(i) - 1) {
                    s.set(i, CounterState.CLOSED);
                    s.clear(i, CounterState.REVISE);
                    ctx.output(ROLLUPS, rollup(counter, s, i));
                    Resolution r = s.resolution(i);
                    if (r == Resolution.M1 || r == Resolution.H1 || r == Resolution.D1) {
                        ctx.output(CLOSED_WINDOWS, new WindowSum(counter, r.label, s.start[i], s.sum[i]));
                    }
                }
            }
            reviseChangedWindows(counter, s, ctx);
            writeDirty(counter, s, out);
            for (int i = s.size - 1; i >= 0; i--) {
                if (watermark >= s.end(i) + lateness) {
                    if (s.has(i, CounterState.HAS_USERS)) uniques.remove(uniquesName(s.resolution(i), s.start[i]));
                    s.remove(i);
                }
            }
            // The next due time: a window's close (end - 1) or, once closed, its end of lateness. Timers at or
            // before the current watermark registered here fire in this same watermark advance.
            long next = Long.MAX_VALUE;
            for (int i = 0; i < s.size; i++) {
                next = Math.min(next, s.has(i, CounterState.CLOSED) ? s.end(i) + lateness : s.end(i) - 1);
            }
            if (next != Long.MAX_VALUE) ctx.timerService().registerEventTimeTimer(next);
            s.nextTimer = next;
        }
        state.update(s);
    }

    /** Adds the partial's user hashes to the all-time, 1h and 1d sketches; marks those that changed. */
    private void addUsers(CounterState s, PartialSum p) throws Exception {
        if (addHashes(ALL_TIME, p.users)) s.usersDirty = true;
        for (Resolution r : UNIQUE_RESOLUTIONS) {
            int i = s.find(r, r.windowStart(p.bucket));
            s.set(i, CounterState.HAS_USERS);
            if (addHashes(uniquesName(r, s.start[i]), p.users)) s.set(i, CounterState.USERS_DIRTY);
        }
    }

    private static final Resolution[] UNIQUE_RESOLUTIONS = {Resolution.H1, Resolution.D1};

    private static String uniquesName(Resolution r, long start) {
        return r.label + ":" + start;
    }

    private boolean addHashes(String name, long[] hashes) throws Exception {
        byte[] bytes = uniques.get(name);
        RedisHyperLogLog hll = bytes == null ? new RedisHyperLogLog() : RedisHyperLogLog.fromRedisBytes(bytes);
        boolean changed = bytes == null;
        for (long h : hashes) changed |= hll.addHash(h);
        if (changed) uniques.put(name, hll.toRedisBytes());
        return changed;
    }

    private Long uniquesOf(CounterState s, int i) throws Exception {
        if (!s.has(i, CounterState.HAS_USERS)) return null;
        byte[] bytes = uniques.get(uniquesName(s.resolution(i), s.start[i]));
        return bytes == null ? null : RedisHyperLogLog.fromRedisBytes(bytes).count();
    }

    private void reviseChangedWindows(String counter, CounterState s, Context ctx) throws Exception {
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.REVISE)) {
                s.revision[i]++;
                s.clear(i, CounterState.REVISE);
                ctx.output(ROLLUPS, rollup(counter, s, i));
            }
        }
    }

    private void writeDirty(String counter, CounterState s, Collector<RedisWrite> out) throws Exception {
        if (s.totalDirty) {
            String key = keys.total(counter);
            out.collect(RedisWrite.count(key, keys.versionOf(counter, key), s.total, s.totalEvents, !s.negative, 0));
            s.totalDirty = false;
        }
        for (int i = 0; i < s.size; i++) {
            if (s.has(i, CounterState.DIRTY)) {
                Resolution r = s.resolution(i);
                String key = keys.window(counter, r, s.start[i]);
                out.collect(RedisWrite.count(key, keys.versionOf(counter, key), s.sum[i], s.events[i],
                        !s.has(i, CounterState.NEGATIVE), r.ttlMillis));
                s.clear(i, CounterState.DIRTY);
            }
            if (s.has(i, CounterState.USERS_DIRTY)) {
                Resolution r = s.resolution(i);
                byte[] sketch = uniques.get(uniquesName(r, s.start[i]));
                if (sketch != null) out.collect(RedisWrite.hll(keys.uniques(counter, r, s.start[i]), sketch, r.ttlMillis));
                s.clear(i, CounterState.USERS_DIRTY);
            }
        }
        if (s.usersDirty) {
            byte[] sketch = uniques.get(ALL_TIME);
            if (sketch != null) out.collect(RedisWrite.hll(keys.uniquesAll(counter), sketch, 0));
            s.usersDirty = false;
        }
    }

    private Rollup rollup(String counter, CounterState s, int i) throws Exception {
        return new Rollup(counter, s.resolution(i).label, s.start[i], s.end(i), s.sum[i], s.events[i], uniquesOf(s, i), s.revision[i]);
    }
}
