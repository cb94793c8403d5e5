package io.rollcount.job.ops;

import io.rollcount.job.model.TopList;
import io.rollcount.job.model.TrendCandidates;
import io.rollcount.job.redis.RedisKeys;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.PriorityQueue;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
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
 * {@value #ALL}. Shards own disjoint counters, so ranking the union is the whole merge; candidates of
 * different shards decayed to different times are brought to the latest of those times first (an exact
 * rescaling by {@code 2^(-(at - at_shard) / halfLife)}). The list's {@code at} is that time.
 *
 * <p><b>State.</b> The latest candidates per shard, in operator list state (at most {@code SHARDS x
 * capacity} items, about 51,000 with the defaults, a few MB), so that after a restore the first lists are
 * complete rather than made of the shards that happened to report first.
 *
 * <p>A namespace whose counters all left the shards' summaries keeps its last list in Redis (not deleted).
 */
public final class TrendingMerge extends AbstractStreamOperator<TopList>
        implements OneInputStreamOperator<TrendCandidates, TopList>, BoundedOneInput {
    private static final long serialVersionUID = 1L;
    public static final String ALL = "_all";

    private final int topk;
    private final double halfLifeMillis;
    private final long publishIntervalMillis;

    private transient Map<Integer, TrendCandidates> latest;
    private transient ListState<TrendCandidates> stored;
    private transient boolean changed;

    public TrendingMerge(int topk, long halfLifeMillis, long publishIntervalMillis) {
        this.topk = topk;
        this.halfLifeMillis = halfLifeMillis;
        this.publishIntervalMillis = publishIntervalMillis;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        stored = context.getOperatorStateStore().getListState(
                new ListStateDescriptor<>("trending-candidates", TypeInformation.of(TrendCandidates.class)));
        latest = new HashMap<>();
        for (TrendCandidates c : stored.get()) latest.merge(c.shard, c, (a, b) -> a.at >= b.at ? a : b);
    }

    @Override
    public void open() throws Exception {
        super.open();
        changed = false;
        schedule();
    }

    private void schedule() {
        long now = getProcessingTimeService().getCurrentProcessingTime();
        getProcessingTimeService().registerTimer(now + publishIntervalMillis, t -> {
            if (changed) publish();
            schedule();
        });
    }

    @Override
    public void processElement(StreamRecord<TrendCandidates> record) {
        TrendCandidates c = record.getValue();
        TrendCandidates before = latest.get(c.shard);
        if (before == null || c.at >= before.at) {
            latest.put(c.shard, c);
            changed = true;
        }
    }

    @Override
    public void endInput() {
        if (!latest.isEmpty()) publish();
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        stored.update(new ArrayList<>(latest.values()));
    }

    record Item(String counter, double score, double lower) {}

    /** Ranks the latest candidates into one list per namespace and one for {@value #ALL}. */
    private void publish() {
        long at = Long.MIN_VALUE;
        for (TrendCandidates c : latest.values()) at = Math.max(at, c.at);
        Map<String, List<Item>> byNs = new TreeMap<>();
        List<Item> all = new ArrayList<>();
        for (TrendCandidates c : latest.values()) {
            double f = halfLifeMillis > 0 ? Math.pow(2.0, -(double) (at - c.at) / halfLifeMillis) : 1;
            for (int i = 0; i < c.counters.length; i++) {
                Item item = new Item(c.counters[i], c.scores[i] * f, c.lowers[i] * f);
                byNs.computeIfAbsent(RedisKeys.namespaceOf(item.counter), k -> new ArrayList<>()).add(item);
                all.add(item);
            }
        }
        StreamRecord<TopList> reuse = new StreamRecord<>(null);
        for (Map.Entry<String, List<Item>> e : byNs.entrySet()) output.collect(reuse.replace(list(e.getKey(), e.getValue(), at)));
        output.collect(reuse.replace(list(ALL, all, at)));
        changed = false;
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
