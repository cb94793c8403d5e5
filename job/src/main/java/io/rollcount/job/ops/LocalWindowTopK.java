package io.rollcount.job.ops;

import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.WindowSum;
import io.rollcount.job.model.WindowTop;
import io.rollcount.job.policy.Policies;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Window top-K, first phase: chained after {@link CountPerCounter} (same parallelism, forward), it keeps
 * the top {@code topk} closed-window sums ({@link CountPerCounter#CLOSED_WINDOWS}) of its own counters per
 * (namespace, resolution, window start) and per ({@value CounterId#ALL_NAMESPACES}, resolution, window start),
 * and sends each such local list on before it forwards the watermark that closed the window.
 *
 * <p>Exact: each counter is counted in exactly one subtask, so every member of the global top K is in
 * the local top K of its subtask, and the union of the local lists holds the global top K (recall 1.0).
 * A list sent early (at a checkpoint barrier, or twice for one window) keeps this property: an item of the
 * global top K is in the top K of any subset that holds it.
 *
 * <p><b>State:</b> none. Closed windows arrive inside the call that forwards the watermark closing them,
 * so the buffer is empty between records; it is still flushed in {@link #prepareSnapshotPreBarrier} and at
 * the end of input. While it holds something: at most {@code topk} entries per open list.
 */
public final class LocalWindowTopK extends AbstractStreamOperator<WindowTop>
        implements OneInputStreamOperator<WindowSum, WindowTop>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    /** Best first: larger sum, then smaller counter id. */
    public static final Comparator<Entry> BEST_FIRST =
            Comparator.<Entry>comparingLong(e -> -e.sum).thenComparing(e -> e.counter);

    /** A counter and its window sum. */
    public record Entry(String counter, long sum) {}

    private final int topk;
    /** Each namespace's list length, 0 for none (--policies); null: {@link #topk} for all. */
    private final Policies policies;

    private transient Map<String, Group> groups;

    private static final class Group {
        final String ns;
        final Resolution res;
        final long start;
        /** Worst first, so the worst is dropped when more than topk are held. */
        final PriorityQueue<Entry> heap = new PriorityQueue<>(BEST_FIRST.reversed());

        Group(String ns, Resolution res, long start) {
            this.ns = ns;
            this.res = res;
            this.start = start;
        }
    }

    public LocalWindowTopK(int topk) {
        this(topk, null);
    }

    /**
     * @param topk the length of the {@value CounterId#ALL_NAMESPACES} lists
     * @param policies the length of each namespace's lists; a namespace with none ({@code topk: false}) puts
     *     its counters in no list, {@value CounterId#ALL_NAMESPACES} neither
     */
    public LocalWindowTopK(int topk, Policies policies) {
        this.topk = topk;
        this.policies = policies;
    }

    @Override
    public void open() throws Exception {
        super.open();
        groups = new HashMap<>();
    }

    @Override
    public void processElement(StreamRecord<WindowSum> record) {
        WindowSum w = record.getValue();
        Resolution res = Resolution.ofLabel(w.res);
        Entry e = new Entry(w.counter, w.sum);
        String ns = CounterId.namespaceOf(w.counter);
        int k = policies == null ? topk : policies.forNamespace(ns).topk();
        if (k <= 0) return;
        offer(ns, res, w.start, e, k);
        offer(CounterId.ALL_NAMESPACES, res, w.start, e, topk);
    }

    private void offer(String ns, Resolution res, long start, Entry e, int k) {
        Group g = groups.computeIfAbsent(res.label + ":" + start + ":" + ns, x -> new Group(ns, res, start));
        g.heap.add(e);
        if (g.heap.size() > k) g.heap.poll();
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        flush(mark.getTimestamp());
        super.processWatermark(mark);
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        flush(Long.MAX_VALUE);
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    @Override
    public void endInput() {
        flush(Long.MAX_VALUE);
    }

    /** Sends on every list whose window ended at or before the watermark (end - 1 <= watermark). */
    private void flush(long watermark) {
        if (groups.isEmpty()) return;
        StreamRecord<WindowTop> reuse = new StreamRecord<>(null);
        for (Iterator<Group> it = groups.values().iterator(); it.hasNext(); ) {
            Group g = it.next();
            if (g.start + g.res.sizeMillis - 1 > watermark) continue;
            List<Entry> entries = new ArrayList<>(g.heap);
            entries.sort(BEST_FIRST);
            WindowTop t = new WindowTop();
            t.ns = g.ns;
            t.res = g.res.label;
            t.start = g.start;
            t.counters = new String[entries.size()];
            t.sums = new long[entries.size()];
            for (int i = 0; i < entries.size(); i++) {
                t.counters[i] = entries.get(i).counter();
                t.sums[i] = entries.get(i).sum();
            }
            output.collect(reuse.replace(t));
            it.remove();
        }
    }
}
