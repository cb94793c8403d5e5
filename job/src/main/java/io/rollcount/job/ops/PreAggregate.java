package io.rollcount.job.ops;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.parse.EventParser;
import io.rollcount.job.policy.Policies;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.util.OutputTag;

/**
 * Combines increments per {@code (counter, 5-second bucket)} in each subtask before the shuffle by
 * counter, so that a viral counter reaches its keyed subtask as a few partial sums per flush instead of
 * every event, and RocksDB sees one state access per partial sum instead of one per event.
 *
 * <p>Exactly-once without state of its own: the buffer is emptied
 * <ul>
 *   <li>in {@link #prepareSnapshotPreBarrier} (before the checkpoint barrier goes downstream, so every
 *       event before the barrier is in downstream state when the checkpoint completes);</li>
 *   <li>before a watermark is forwarded (buffered partials must not fall behind the watermark and turn late);</li>
 *   <li>when the buffer holds {@code maxEntries} partials, and every {@code flushIntervalMillis} of processing time;</li>
 *   <li>at the end of a bounded input.</li>
 * </ul>
 *
 * <p>Partial sums go on in the order of their first event (insertion order), so the order in which one
 * source reader read a counter's events is the order in which its partial sums reach the counter. A
 * partial sum never overflows: one that cannot take the next delta ({@link PartialSum#fits}) is sent on
 * at once and a new one takes the delta; whether the counter's total or a window can still take a partial
 * sum is {@link CountPerCounter}'s decision ({@code overflow} dead letters).
 *
 * <p>It also applies the lateness rule: an event more than the allowed lateness behind this operator's
 * watermark (the minimum over all its inputs, so the job's watermark, never ahead of it) goes to
 * {@link #LATE} with reason {@code late}, carrying its raw payload. Downstream operators see a watermark
 * no later than this one, so every accepted partial still finds its windows open there.
 *
 * <p><b>Idleness.</b> That holds only if the keyed operator's watermark is the minimum over every
 * subtask of this one, so this operator never marks its output idle. Flink's watermark valve leaves an idle
 * input out of the minimum; when the input becomes active again behind the valve's output watermark it stays
 * out ("unaligned") until it catches up, while its records are processed at once. Were a subtask of this
 * operator to go idle and come back with partials accepted against its own, older watermark, the counting
 * operator, its watermark taken from the other subtasks alone, could already have dropped their 5 s windows
 * as final: counted in the longer windows and the total but not in the 5 s window, and not dead-lettered.
 * Not going idle costs no progress: every subtask
 * takes the deduplication operator's output, which is fed by every source subtask, so a subtask of this
 * operator has all its inputs idle only when every source subtask is idle, and then the valve in front of
 * it still advances its watermark to the largest of its inputs', which goes on as a watermark.
 */
public final class PreAggregate extends AbstractStreamOperator<PartialSum>
        implements OneInputStreamOperator<Event, PartialSum>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    public static final OutputTag<Event> LATE = new OutputTag<>("late") {};
    public static final String COUNTED = "events.counted";

    /** A partial sum carries at most this many distinct users; past it, it is sent on at once. */
    static final int MAX_USERS_PER_PARTIAL = 4096;

    private final long lateness;
    private final int maxEntries;
    private final long flushIntervalMillis;
    private final double halfLifeMillis;
    /** Namespaces whose policy keeps no uniques (--policies) send no users on; null: all do. */
    private final Policies policies;

    private transient Map<BucketKey, Acc> buffer;
    private transient BucketKey probe;
    /** An event's trending weight per unit of delta by its offset in its bucket ({@link PartialSum#trendWeights}). */
    private transient double[] trendWeights;

    private transient long watermark;
    private transient LongCounter late;
    private transient LongCounter counted;
    private transient Counter partialSums;

    public PreAggregate(
            long allowedLatenessMillis, int maxEntries, long flushIntervalMillis, long trendingHalfLifeMillis) {
        this(allowedLatenessMillis, maxEntries, flushIntervalMillis, trendingHalfLifeMillis, null);
    }

    /** @param policies the partial sums of a namespace whose policy keeps no uniques carry no users (null: all carry them) */
    public PreAggregate(
            long allowedLatenessMillis,
            int maxEntries,
            long flushIntervalMillis,
            long trendingHalfLifeMillis,
            Policies policies) {
        this.lateness = allowedLatenessMillis;
        this.maxEntries = maxEntries;
        this.flushIntervalMillis = flushIntervalMillis;
        this.halfLifeMillis = trendingHalfLifeMillis;
        this.policies = policies;
    }

    @Override
    public void open() throws Exception {
        super.open();
        buffer = new LinkedHashMap<>(Math.min(maxEntries, 1 << 16) * 2);
        probe = new BucketKey();
        trendWeights = PartialSum.trendWeights(halfLifeMillis);
        watermark = Long.MIN_VALUE;
        late = getRuntimeContext().getLongCounter(JobAccumulators.deadLetters(EventParser.LATE));
        counted = getRuntimeContext().getLongCounter(JobAccumulators.COUNTED);
        RollcountMetrics.counter(getMetricGroup(), RollcountMetrics.EVENTS_LATE, late);
        RollcountMetrics.deadLetters(getMetricGroup(), EventParser.LATE, late);
        RollcountMetrics.counter(getMetricGroup(), RollcountMetrics.EVENTS_COUNTED, counted);
        partialSums = RollcountMetrics.counter(getMetricGroup(), RollcountMetrics.PARTIAL_SUMS);
        RollcountMetrics.eventTimeLag(getMetricGroup(), () -> watermark);
        scheduleFlush();
    }

    private void scheduleFlush() {
        long now = getProcessingTimeService().getCurrentProcessingTime();
        getProcessingTimeService().registerTimer(now + flushIntervalMillis, t -> {
            flush();
            scheduleFlush();
        });
    }

    @Override
    public void processElement(StreamRecord<Event> record) {
        Event e = record.getValue();
        if (isLate(e.ts, watermark, lateness)) {
            late.add(1);
            output.collect(
                    LATE,
                    new StreamRecord<>(e.deadLetter(
                            EventParser.LATE,
                            "ts " + e.ts + " is " + (watermark - e.ts) + " ms behind the watermark " + watermark
                                    + ", more than the allowed lateness of " + lateness + " ms")));
            return;
        }
        counted.add(1);
        long bucket = Resolution.S5.windowStart(e.ts);
        probe.counter = e.counter;
        probe.bucket = bucket;
        Acc acc = buffer.get(probe);
        if (acc != null && !acc.partial.fits(e.delta)) {
            // the partial is full (its sum would leave the 64-bit range): it goes on as it is, a new one
            // takes this event, so combining never overflows; the counter decides what still fits
            buffer.remove(probe);
            emit(acc, new StreamRecord<>(null));
            acc = null;
        }
        if (acc == null) {
            acc = new Acc(new PartialSum(e.counter, bucket));
            acc.keepUsers = policies == null || policies.forCounter(e.counter).anyUniques();
            buffer.put(new BucketKey(e.counter, bucket), acc);
        }
        acc.partial.add(e.delta, e.ts, trendWeights);
        if (e.user != null && acc.keepUsers) {
            acc.addUser(e.user);
            if (acc.userCount() >= MAX_USERS_PER_PARTIAL) {
                buffer.remove(probe);
                emit(acc, new StreamRecord<>(null));
            }
        }
        if (buffer.size() >= maxEntries) flush();
    }

    /**
     * Whether an event of time {@code ts} is late against {@code watermark}: more than {@code latenessMillis} behind
     * it ({@link Long#MIN_VALUE}: no watermark yet, nothing is late).
     */
    static boolean isLate(long ts, long watermark, long latenessMillis) {
        return watermark != Long.MIN_VALUE && ts < watermark - latenessMillis;
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        flush();
        watermark = mark.getTimestamp();
        super.processWatermark(mark);
    }

    /**
     * Never forwarded: this operator's output is never marked idle (see the class comment, <b>Idleness</b>).
     * It still follows its inputs' statuses for its own watermark: Flink's valve in front of it leaves idle
     * inputs out of the minimum and, when its last input goes idle, hands it the largest of their
     * watermarks, which {@link #processWatermark} takes and forwards as usual.
     */
    @Override
    public void processWatermarkStatus(WatermarkStatus status) {}

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        flush();
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    @Override
    public void endInput() {
        flush();
    }

    private void flush() {
        if (buffer.isEmpty()) return;
        StreamRecord<PartialSum> reuse = new StreamRecord<>(null);
        for (Acc acc : buffer.values()) emit(acc, reuse);
        buffer.clear();
    }

    private void emit(Acc acc, StreamRecord<PartialSum> reuse) {
        PartialSum p = acc.partial;
        p.users = acc.users();
        output.collect(reuse.replace(p, p.bucket));
        partialSums.inc();
    }

    /**
     * A partial sum being built, and its distinct users: in an array while they are few (most partials have one to
     * a few users, and an array of them is less garbage than a set), in a set past that.
     */
    private static final class Acc {
        /** Distinct users kept in {@link #few} before they go to {@link #many}. */
        static final int FEW = 8;

        final PartialSum partial;
        String[] few;
        int fewCount;
        HashSet<String> many;
        /** The counter's namespace keeps unique users (its policy). */
        boolean keepUsers = true;

        Acc(PartialSum partial) {
            this.partial = partial;
        }

        void addUser(String user) {
            if (many != null) {
                many.add(user);
                return;
            }
            if (few == null) few = new String[2];
            for (int i = 0; i < fewCount; i++) if (few[i].equals(user)) return;
            if (fewCount == FEW) {
                many = new HashSet<>(Arrays.asList(few));
                many.add(user);
                few = null;
                return;
            }
            if (fewCount == few.length) few = Arrays.copyOf(few, FEW);
            few[fewCount++] = user;
        }

        int userCount() {
            return many != null ? many.size() : fewCount;
        }

        String[] users() {
            if (many != null) return many.toArray(PartialSum.NO_USERS);
            if (fewCount == 0) return PartialSum.NO_USERS;
            return fewCount == few.length ? few : Arrays.copyOf(few, fewCount);
        }
    }

    /** A (counter, bucket) map key; one mutable instance probes the map so a hit allocates nothing. */
    private static final class BucketKey {
        String counter;
        long bucket;

        BucketKey() {}

        BucketKey(String counter, long bucket) {
            this.counter = counter;
            this.bucket = bucket;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof BucketKey k && k.bucket == bucket && k.counter.equals(counter);
        }

        @Override
        public int hashCode() {
            return counter.hashCode() * 31 + Long.hashCode(bucket);
        }
    }

    @Override
    public String toString() {
        return "PreAggregate{" + Objects.toString(maxEntries) + "}";
    }
}
