package io.rollcount.job.ops;

import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.TopList;
import io.rollcount.job.model.WindowTop;
import io.rollcount.job.policy.Policies;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.util.Collector;

/**
 * Window top-K, second phase: keyed by (resolution, window start, namespace) ({@link WindowTop#groupKey}),
 * it merges the local lists of {@link LocalWindowTopK} into the top {@code topk} and emits it, as a
 * {@link TopList} of kind {@code window}, when the watermark (the minimum over all its inputs) passes the
 * window's end: every local list of that window has arrived by then, since each was sent before the
 * watermark that closed its window. Then its state is cleared.
 *
 * <p><b>State:</b> per window still open here, one list of at most {@code topk} (counter, sum) pairs; a
 * window's lists arrive just before the watermark that fires it, so few are held at a time.
 */
public final class WindowTopMerge extends KeyedProcessFunction<String, WindowTop, TopList> {
    private static final long serialVersionUID = 1L;

    private final int topk;
    /** Each namespace's list length (--policies); null: {@link #topk} for all. */
    private final Policies policies;

    private transient ValueState<WindowTop> state;

    public WindowTopMerge(int topk) {
        this(topk, null);
    }

    /** @param topk the length of the {@value CounterId#ALL_NAMESPACES} lists; the namespaces' from their policies */
    public WindowTopMerge(int topk, Policies policies) {
        this.topk = topk;
        this.policies = policies;
    }

    @Override
    public void open(OpenContext ctx) {
        state = getRuntimeContext()
                .getState(new ValueStateDescriptor<>("window-top", TypeInformation.of(WindowTop.class)));
    }

    @Override
    public void processElement(WindowTop in, Context ctx, Collector<TopList> out) throws Exception {
        WindowTop acc = state.value();
        if (acc == null) {
            ctx.timerService().registerEventTimeTimer(in.start + Resolution.ofLabel(in.res).sizeMillis - 1);
            state.update(in);
            return;
        }
        List<LocalWindowTopK.Entry> all = new ArrayList<>(acc.counters.length + in.counters.length);
        for (int i = 0; i < acc.counters.length; i++) all.add(new LocalWindowTopK.Entry(acc.counters[i], acc.sums[i]));
        for (int i = 0; i < in.counters.length; i++) {
            LocalWindowTopK.Entry e = new LocalWindowTopK.Entry(in.counters[i], in.sums[i]);
            // A counter sent twice (a local list flushed early and again) keeps its latest sum.
            all.removeIf(x -> x.counter().equals(e.counter()));
            all.add(e);
        }
        all.sort(LocalWindowTopK.BEST_FIRST);
        int k = policies == null || CounterId.ALL_NAMESPACES.equals(acc.ns)
                ? topk
                : policies.forNamespace(acc.ns).topk();
        int n = Math.min(k, all.size());
        acc.counters = new String[n];
        acc.sums = new long[n];
        for (int i = 0; i < n; i++) {
            acc.counters[i] = all.get(i).counter();
            acc.sums[i] = all.get(i).sum();
        }
        state.update(acc);
    }

    @Override
    public void onTimer(long timestamp, OnTimerContext ctx, Collector<TopList> out) throws Exception {
        WindowTop acc = state.value();
        if (acc == null) return;
        TopList t = new TopList();
        t.ns = acc.ns;
        t.kind = TopList.WINDOW;
        t.res = acc.res;
        t.start = acc.start;
        t.at = timestamp;
        int n = acc.counters.length;
        t.counters = acc.counters;
        t.scores = new double[n];
        t.estimates = new double[n];
        for (int i = 0; i < n; i++) t.scores[i] = t.estimates[i] = acc.sums[i];
        out.collect(t);
        state.clear();
    }
}
