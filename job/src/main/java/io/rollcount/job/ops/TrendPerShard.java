package io.rollcount.job.ops;

import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.TrendCandidates;
import io.rollcount.job.model.TrendWeight;
import io.rollcount.sketches.CountMinSketch;
import io.rollcount.sketches.RankedItem;
import io.rollcount.sketches.TrendingSketch;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.PrimitiveArrayTypeInfo;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Trending, first phase: keyed by a trending shard ({@link #shardOf}: a hash of the counter id modulo
 * {@link #SHARDS}), one {@link TrendingSketch} per shard (a decayed conservative-update Count-Min sketch
 * and a Space-Saving summary on one event-time clock), fed with the positive trending weight of each
 * partial sum ({@link TrendWeight}: {@link PartialSum#trend}, forward-decayed to its bucket start, so adding it at the bucket
 * start equals adding every event at its own time). Negative deltas never enter: they never lower a score.
 *
 * <p><b>State.</b> The sketches live on the heap while the job runs (a RocksDB read and write of tens of
 * kilobytes per partial sum would dominate the job) and go into keyed {@code ValueState<byte[]>} (one
 * value per shard: 8 bytes of the latest bucket seen, then {@link TrendingSketch#toBytes()}) in
 * {@link #snapshotState}, only for shards that changed since the last snapshot. Being keyed state with a
 * fixed number of keys, it is redistributed by key group when the parallelism changes; after a restore
 * every shard of this subtask's key groups is read back once, in {@link #open}.
 *
 * <p><b>Bounds.</b> Count-Min width 1088, depth 4 (epsilon 0.0025, delta 0.02), 34.8 KB
 * dense per shard; Space-Saving capacity {@code max(400, 4 * topk)} (about 50 KB at 400 with 40-byte
 * counter ids). So at most {@value #SHARDS} x ~85 KB, about 11 MB of heap for the whole job whatever the
 * parallelism, and as much state (less while the Count-Min sketch is sparse). Per shard, every counter
 * whose decayed count exceeds {@code N_shard / (capacity + 1)} is a candidate, with its true decayed
 * count in {@code [lower, score]}, {@code score <= count + 0.0025 * N_shard} with probability 0.98.
 *
 * <p><b>Output.</b> Every {@code emitIntervalMillis} of processing time (while the watermark or the
 * sketches change) and at the end of input, each shard's candidates with scores decayed to "now" =
 * this operator's watermark (event time, so a backfill trends as the live run did). At the end of a
 * bounded input the watermark is +infinity; scores are then decayed to the end of the latest 5-second
 * bucket seen instead, which makes the final lists independent of when watermarks happened to be sent.
 */
public final class TrendPerShard extends AbstractStreamOperator<TrendCandidates>
        implements OneInputStreamOperator<TrendWeight, TrendCandidates>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    /** Number of trending shards: fixed, since it is the key space of the state. */
    public static final int SHARDS = 128;

    static final double EPSILON = 0.0025;
    static final double DELTA = 0.02;
    static final long SEED = 0x7e4d1c5aL;
    private static final String STATE = "trending-sketch";

    private final long halfLifeMillis;
    private final int capacity;
    private final long emitIntervalMillis;

    private transient ValueState<byte[]> stored;
    private transient Map<Integer, Shard> shards;
    private transient long watermark;
    private transient long emittedAtWatermark;
    private transient boolean changed;

    /** One shard's sketch and bookkeeping. */
    private static final class Shard {
        TrendingSketch sketch;
        long latestBucket = Long.MIN_VALUE;
        boolean dirty;
    }

    public TrendPerShard(long halfLifeMillis, int topk, long emitIntervalMillis) {
        this.halfLifeMillis = halfLifeMillis;
        this.capacity = capacityFor(topk);
        this.emitIntervalMillis = emitIntervalMillis;
    }

    public static int capacityFor(int topk) {
        return Math.max(TrendingSketch.DEFAULT_CAPACITY, 4 * topk);
    }

    /** The trending shard of a counter: a 64-bit hash of its id modulo {@link #SHARDS}. */
    public static int shardOf(String counter) {
        return (int) Math.floorMod(CountMinSketch.hash(counter), (long) SHARDS);
    }

    @Override
    public void open() throws Exception {
        super.open();
        stored = getPartitionedState(
                new ValueStateDescriptor<>(STATE, PrimitiveArrayTypeInfo.BYTE_PRIMITIVE_ARRAY_TYPE_INFO));
        shards = new HashMap<>();
        watermark = Long.MIN_VALUE;
        emittedAtWatermark = Long.MIN_VALUE;
        // Read back every shard this subtask owns after a restore (at most SHARDS values).
        var task = getRuntimeContext().getTaskInfo();
        int maxParallelism = task.getMaxNumberOfParallelSubtasks();
        KeyGroupRange range = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                maxParallelism, task.getNumberOfParallelSubtasks(), task.getIndexOfThisSubtask());
        List<Integer> keys = new ArrayList<>();
        try (Stream<Object> s = getKeyedStateBackend().getKeys(STATE, VoidNamespace.INSTANCE)) {
            s.forEach(k -> {
                if (range.contains(KeyGroupRangeAssignment.assignToKeyGroup(k, maxParallelism))) keys.add((Integer) k);
            });
        }
        for (Integer k : keys) {
            setCurrentKey(k);
            shard(k);
        }
        changed = !keys.isEmpty();
        scheduleEmit();
    }

    private void scheduleEmit() {
        long now = getProcessingTimeService().getCurrentProcessingTime();
        getProcessingTimeService().registerTimer(now + emitIntervalMillis, t -> {
            if (watermark != Long.MIN_VALUE && (changed || watermark != emittedAtWatermark)) emit(watermark);
            scheduleEmit();
        });
    }

    /** The shard of the current key, read from keyed state on first use. */
    private Shard shard(Integer key) throws Exception {
        Shard s = shards.get(key);
        if (s != null) return s;
        s = new Shard();
        byte[] bytes = stored.value();
        if (bytes == null) {
            s.sketch = new TrendingSketch(capacity, EPSILON, DELTA, SEED, halfLifeMillis);
        } else {
            ByteBuffer b = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            s.latestBucket = b.getLong(0);
            s.sketch = TrendingSketch.fromBytes(Arrays.copyOfRange(bytes, 8, bytes.length));
        }
        shards.put(key, s);
        return s;
    }

    @Override
    public void processElement(StreamRecord<TrendWeight> record) throws Exception {
        TrendWeight p = record.getValue();
        Shard s = shard((Integer) getCurrentKey());
        if (p.bucket > s.latestBucket) {
            s.latestBucket = p.bucket;
            s.dirty = true;
        }
        if (p.trend > 0) {
            s.sketch.update(p.counter, p.trend, p.bucket);
            s.dirty = true;
            changed = true;
        }
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        if (mark.getTimestamp() != Long.MAX_VALUE) watermark = Math.max(watermark, mark.getTimestamp());
        super.processWatermark(mark);
    }

    @Override
    public void endInput() {
        long latest = Long.MIN_VALUE;
        for (Shard s : shards.values()) latest = Math.max(latest, s.latestBucket);
        if (latest == Long.MIN_VALUE) return;
        emit(Math.max(watermark, latest + Resolution.S5.sizeMillis - 1));
    }

    private void emit(long now) {
        StreamRecord<TrendCandidates> reuse = new StreamRecord<>(null);
        for (Map.Entry<Integer, Shard> e : shards.entrySet()) {
            List<RankedItem> top = e.getValue().sketch.topK(capacity, now);
            if (top.isEmpty()) continue;
            TrendCandidates c = new TrendCandidates();
            c.shard = e.getKey();
            c.at = now;
            int n = top.size();
            c.counters = new String[n];
            c.scores = new double[n];
            c.lowers = new double[n];
            for (int i = 0; i < n; i++) {
                RankedItem r = top.get(i);
                c.counters[i] = r.item();
                c.scores[i] = r.score();
                c.lowers[i] = r.lower();
            }
            output.collect(reuse.replace(c));
        }
        changed = false;
        emittedAtWatermark = now;
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        for (Map.Entry<Integer, Shard> e : shards.entrySet()) {
            Shard s = e.getValue();
            if (!s.dirty) continue;
            setCurrentKey(e.getKey());
            byte[] sketch = s.sketch.toBytes();
            byte[] bytes = new byte[8 + sketch.length];
            ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).putLong(0, s.latestBucket);
            System.arraycopy(sketch, 0, bytes, 8, sketch.length);
            stored.update(bytes);
            s.dirty = false;
        }
    }
}
