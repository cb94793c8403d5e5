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
    public static final Comparator<Entry> BEST_FIRST = (a, b) -> rank(a.sum, a.counter, b.sum, b.counter);

    /** The ranking of {@link #BEST_FIRST}, without an {@link Entry} for the first: negative where it ranks higher. */
    static int rank(long sum, String counter, long otherSum, String otherCounter) {
        int bySum = Long.compare(otherSum, sum);
        return bySum != 0 ? bySum : counter.compareTo(otherCounter);
    }

    /** A counter and its window sum. */
    public record Entry(String counter, long sum) {}

    private final int topk;
    /** Each namespace's list length, 0 for none (--policies); null: {@link #topk} for all. */
    private final Policies policies;

    /** The open windows by resolution (its ordinal), then start. */
    private transient Map<Long, Window>[] windows;
    /** The window of the latest sum: closes come in runs of one window. */
    private transient Window last;

    /** The lists of one window: {@value CounterId#ALL_NAMESPACES}'s and each namespace's. */
    private static final class Window {
        final Resolution res;
        final long start;
        final Group all;
        final Map<String, Group> byNamespace = new HashMap<>();

        Window(Resolution res, long start) {
            this.res = res;
            this.start = start;
            this.all = new Group(CounterId.ALL_NAMESPACES, res, start);
        }
    }

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

        /** Keeps the counter if it is among the best {@code k}; a full list compares with its worst first. */
        void offer(String counter, long sum, int k) {
            if (k <= 0) return;
            if (heap.size() >= k) {
                Entry worst = heap.peek();
                if (rank(sum, counter, worst.sum, worst.counter) >= 0) return;
            }
            heap.add(new Entry(counter, sum));
            if (heap.size() > k) heap.poll();
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
    @SuppressWarnings("unchecked")
    public void open() throws Exception {
        super.open();
        windows = new Map[Resolution.values().length];
        for (int i = 0; i < windows.length; i++) windows[i] = new HashMap<>();
    }

    @Override
    public void processElement(StreamRecord<WindowSum> record) {
        WindowSum w = record.getValue();
        String ns = CounterId.namespaceOf(w.counter);
        int k = policies == null ? topk : policies.forNamespace(ns).topk();
        if (k <= 0) return;
        Window window = window(Resolution.ofLabel(w.res), w.start);
        Group g = window.byNamespace.get(ns);
        if (g == null) window.byNamespace.put(ns, g = new Group(ns, window.res, window.start));
        g.offer(w.counter, w.sum, k);
        window.all.offer(w.counter, w.sum, topk);
    }

    private Window window(Resolution res, long start) {
        if (last != null && last.res == res && last.start == start) return last;
        last = windows[res.ordinal()].computeIfAbsent(start, x -> new Window(res, x));
        return last;
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
        StreamRecord<WindowTop> reuse = new StreamRecord<>(null);
        for (Map<Long, Window> open : windows) {
            for (Iterator<Window> it = open.values().iterator(); it.hasNext(); ) {
                Window w = it.next();
                if (w.start + w.res.sizeMillis - 1 > watermark) continue;
                for (Group g : w.byNamespace.values()) output.collect(reuse.replace(list(g)));
                output.collect(reuse.replace(list(w.all)));
                it.remove();
                if (w == last) last = null;
            }
        }
    }

    private static WindowTop list(Group g) {
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
        return t;
    }
}
