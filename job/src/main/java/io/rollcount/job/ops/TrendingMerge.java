package io.rollcount.job.ops;

import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.TopList;
import io.rollcount.job.model.TrendCandidates;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;

/**
 * Trending, second phase (parallelism 1): keeps the latest candidates of every trending shard
 * ({@link TrendPerShard}) and, every {@code publishIntervalMillis} of processing time when something new
 * arrived and at the end of input, ranks them into the top {@code topk} per namespace and for
 * {@value CounterId#ALL_NAMESPACES}. Shards own disjoint counters, so ranking the union is the whole merge; candidates of
 * different shards decayed to different times are brought to the latest of those times first (an exact
 * rescaling by {@code 2^(-(at - at_shard) / halfLife)}). The list's {@code at} is that time.
 *
 * <p><b>State.</b> The latest candidates per shard, in operator list state (at most {@code SHARDS x
 * capacity} items, about 51,000 with the defaults, a few MB), so that after a restore the first lists are
 * complete rather than made of the shards that happened to report first.
 *
 * <p><b>Namespaces.</b> At most {@code maxNamespaces} namespaces have lists of their own ({@link NamespaceCap},
 * first come; {@code --trending.max-namespaces}); the counters of the others are ranked in {@value CounterId#ALL_NAMESPACES}
 * only. And only namespaces <em>touched</em> since the last publication are published again: those where a
 * shard's new candidates differ from its previous ones other than by decay (a counter's score changed
 * beyond rounding, or a counter came or went). Decay alone does not change the order of a list, so an
 * untouched list in Redis stays right, with the scores of its version's time. {@value CounterId#ALL_NAMESPACES} is published
 * every time something changed, and every list at the end of input. So 50,000 namespaces cost at most
 * {@code maxNamespaces} lists, written only when they change, instead of 50,000 lists every second.
 *
 * <p>A namespace whose counters all left the shards' summaries keeps its last list in Redis (not deleted)
 * until its key expires, 7 days after its last write.
 */
public final class TrendingMerge extends AbstractStreamOperator<TopList>
        implements OneInputStreamOperator<TrendCandidates, TopList>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    private final int topk;
    private final double halfLifeMillis;
    private final long publishIntervalMillis;
    private final NamespaceCap cap;

    private transient Map<Integer, TrendCandidates> latest;
    private transient ListState<TrendCandidates> stored;
    private transient boolean changed;
    /** When the lists were last published (epoch ms of processing time; the operator's start before that). */
    private transient volatile long publishedAt;
    /** Namespaces whose candidates changed (other than by decay) since the last publication. */
    private transient Set<String> touched;
    /** Watches Redis for a loss of its data: then every list is published again at once; null: no watch. */
    private LossWatch lossWatch;

    public TrendingMerge(int topk, long halfLifeMillis, long publishIntervalMillis) {
        this(topk, halfLifeMillis, publishIntervalMillis, Integer.MAX_VALUE);
    }

    public TrendingMerge(int topk, long halfLifeMillis, long publishIntervalMillis, int maxNamespaces) {
        this.topk = topk;
        this.halfLifeMillis = halfLifeMillis;
        this.publishIntervalMillis = publishIntervalMillis;
        this.cap = new NamespaceCap(maxNamespaces, "trending-namespaces");
    }

    /** After a loss of Redis's data ({@code watch}), every namespace's list and {@value CounterId#ALL_NAMESPACES} are published again. Returns this operator. */
    public TrendingMerge rebuildingAfterLoss(LossWatch watch) {
        this.lossWatch = watch;
        return this;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        stored = context.getOperatorStateStore()
                .getListState(
                        new ListStateDescriptor<>("trending-candidates", TypeInformation.of(TrendCandidates.class)));
        latest = new HashMap<>();
        for (TrendCandidates c : stored.get()) latest.merge(c.shard, c, (a, b) -> a.at >= b.at ? a : b);
        cap.initializeState(context);
        touched = new HashSet<>();
    }

    @Override
    public void open() throws Exception {
        super.open();
        changed = false;
        publishedAt = getProcessingTimeService().getCurrentProcessingTime();
        RollcountMetrics.trendingListAge(getMetricGroup(), () -> publishedAt);
        if (lossWatch != null) lossWatch.open("trending-merge", false);
        schedule();
    }

    private void schedule() {
        long now = getProcessingTimeService().getCurrentProcessingTime();
        getProcessingTimeService().registerTimer(now + publishIntervalMillis, t -> {
            if (lossWatch != null && lossWatch.check() && !latest.isEmpty()) publish(true);
            else if (changed) publish(false);
            schedule();
        });
    }

    @Override
    public void processElement(StreamRecord<TrendCandidates> record) {
        TrendCandidates c = record.getValue();
        TrendCandidates before = latest.get(c.shard);
        if (before == null || c.at >= before.at) {
            latest.put(c.shard, c);
            touch(before, c);
            changed = true;
        }
    }

    /** Adds to {@link #touched} the namespaces whose candidates in this shard changed other than by decay. */
    private void touch(TrendCandidates before, TrendCandidates now) {
        Map<String, Double> old = new HashMap<>(before == null ? 0 : before.counters.length * 2);
        if (before != null) {
            double f = halfLifeMillis > 0 ? Math.pow(2.0, -(double) (now.at - before.at) / halfLifeMillis) : 1;
            for (int i = 0; i < before.counters.length; i++) old.put(before.counters[i], before.scores[i] * f);
        }
        for (int i = 0; i < now.counters.length; i++) {
            Double was = old.remove(now.counters[i]);
            double score = now.scores[i];
            if (was == null || Math.abs(was - score) > 1e-9 * Math.max(Math.abs(score), Double.MIN_NORMAL)) {
                touched.add(CounterId.namespaceOf(now.counters[i]));
            }
        }
        for (String gone : old.keySet()) touched.add(CounterId.namespaceOf(gone));
    }

    @Override
    public void close() throws Exception {
        if (lossWatch != null) lossWatch.close();
        super.close();
    }

    @Override
    public void endInput() {
        if (!latest.isEmpty()) publish(true);
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        stored.update(new ArrayList<>(latest.values()));
        cap.snapshotState();
    }

    record Item(String counter, double score, double lower) {}

    /**
     * Ranks the latest candidates into one list for {@value CounterId#ALL_NAMESPACES} and one per namespace with a place
     * ({@link NamespaceCap}) that was touched since the last publication, or every such namespace if
     * {@code everyNamespace}.
     */
    private void publish(boolean everyNamespace) {
        long at = Long.MIN_VALUE;
        for (TrendCandidates c : latest.values()) at = Math.max(at, c.at);
        long now = getProcessingTimeService().getCurrentProcessingTime();
        Map<String, List<Item>> byNs = new TreeMap<>();
        if (everyNamespace) {
            for (TrendCandidates c : latest.values())
                for (String counter : c.counters) touched.add(CounterId.namespaceOf(counter));
        }
        // first come: the touched namespaces in order, so that which ones get a place does not depend on hashing
        for (String ns : new TreeSet<>(touched)) {
            if (cap.admit(ns, now)) byNs.put(ns, new ArrayList<>());
        }
        List<Item> all = new ArrayList<>();
        for (TrendCandidates c : latest.values()) {
            double f = halfLifeMillis > 0 ? Math.pow(2.0, -(double) (at - c.at) / halfLifeMillis) : 1;
            for (int i = 0; i < c.counters.length; i++) {
                Item item = new Item(c.counters[i], c.scores[i] * f, c.lowers[i] * f);
                String ns = CounterId.namespaceOf(item.counter);
                List<Item> list = byNs.get(ns);
                if (list != null) list.add(item);
                all.add(item);
            }
        }
        StreamRecord<TopList> reuse = new StreamRecord<>(null);
        for (Map.Entry<String, List<Item>> e : byNs.entrySet()) {
            // a touched namespace whose counters all left the summaries keeps its last list (see above)
            if (!e.getValue().isEmpty()) output.collect(reuse.replace(list(e.getKey(), e.getValue(), at)));
        }
        output.collect(reuse.replace(list(CounterId.ALL_NAMESPACES, all, at)));
        touched.clear();
        changed = false;
        publishedAt = now;
    }

    /** Best first: higher score, then counter id (a total order, so lists do not depend on arrival order). */
    private static final Comparator<Item> RANK =
            (a, b) -> a.score != b.score ? Double.compare(b.score, a.score) : a.counter.compareTo(b.counter);

    /** The best {@code k} items, best first: a selection in O(n log k), not a sort of all (up to 51,000) candidates. */
    static List<Item> best(List<Item> items, int k) {
        PriorityQueue<Item> kept = new PriorityQueue<>(k + 1, RANK.reversed()); // head: the worst kept
        for (Item item : items) {
            if (kept.size() < k) {
                kept.add(item);
            } else if (RANK.compare(item, kept.peek()) < 0) {
                kept.poll();
                kept.add(item);
            }
        }
        List<Item> best = new ArrayList<>(kept);
        best.sort(RANK);
        return best;
    }

    private TopList list(String ns, List<Item> all, long at) {
        List<Item> items = best(all, topk);
        int n = items.size();
        TopList t = new TopList();
        t.ns = ns;
        t.kind = TopList.TRENDING;
        t.at = at;
        t.counters = new String[n];
        t.scores = new double[n];
        t.estimates = new double[n];
        for (int i = 0; i < n; i++) {
            Item item = items.get(i);
            t.counters[i] = item.counter;
            t.scores[i] = item.score;
            // Rescaling the bound and the score separately can put the bound one ulp above the score.
            t.estimates[i] = Math.min(item.lower, item.score);
        }
        return t;
    }
}
