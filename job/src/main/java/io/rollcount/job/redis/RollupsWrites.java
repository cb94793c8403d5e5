package io.rollcount.job.redis;

import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.RollupsReading.Window;
import io.rollcount.job.redis.internal.RedisApplyScript;
import io.rollcount.job.redis.internal.RedisErrors;
import io.rollcount.job.redis.internal.RedisScript;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;

/**
 * The Redis side of a {@link RollupsRebuild}: the guarded writes of the windows a {@link RollupsReading} read
 * (with the 5m windows derived from their 1m windows, and the window top-K lists), and their writing, through the
 * job's script, in pipelined round trips.
 */
final class RollupsWrites {
    private static final Logger LOG = LoggerFactory.getLogger(RollupsRebuild.class);
    /** Script calls per pipeline round trip. */
    private static final int CALLS_PER_SYNC = 500;
    /** Counters per script call on a single server (a Redis Cluster takes one: a call must touch one slot). */
    private static final int COUNTERS_PER_CALL = 64;

    private final RollupsRebuild rebuild;
    private final RollupsReading reading;
    /** Windows passed over by {@link #writes} because their keys have expired. */
    long expired;

    RollupsWrites(RollupsRebuild rebuild, RollupsReading reading) {
        this.rebuild = rebuild;
        this.reading = reading;
    }

    /** How many top-K lists among the writes (their groups' names start with a NUL). */
    static long lists(Map<String, List<RedisWrite>> writes) {
        return writes.keySet().stream().filter(k -> k.startsWith("\0")).count();
    }

    /**
     * The guarded writes of the windows read (with the 5m windows derived from their 1m windows), grouped per
     * counter and per top-K list; only those whose window is in {@code changed} (a derived 5m window: one of its
     * 1m windows; a list: one of its windows), unless {@code changed} is null.
     */
    Map<String, List<RedisWrite>> writes(Set<String> changed) {
        Map<String, Window> latest = new HashMap<>(reading.latest);
        long now = System.currentTimeMillis();
        derive5m(latest, changed);
        RedisKeys keys = new RedisKeys(rebuild.keyPrefix);
        Map<String, List<RedisWrite>> byCounter = new LinkedHashMap<>();
        long expired = 0;
        for (Map.Entry<String, Window> e : latest.entrySet()) {
            Window w = e.getValue();
            if (w.start < reading.fromMillis || w.start >= reading.toMillis) continue;
            long at = rebuild.policies
                    .forNamespace(CounterId.namespaceOf(w.counter))
                    .expireAtMillis(w.res, w.start);
            if (at <= now) {
                expired++;
                continue;
            }
            if (changed != null && !changed.contains(e.getKey())) continue;
            String base = keys.counterBase(w.counter);
            String suffix = RedisKeys.windowSuffix(w.res, w.start);
            byCounter
                    .computeIfAbsent(w.counter, c -> new ArrayList<>())
                    .add(RedisWrite.count(
                                    base + suffix,
                                    RedisKeys.versionKey(base, suffix),
                                    w.sum,
                                    w.events,
                                    true,
                                    w.start,
                                    at)
                            .restoringMissing());
        }
        this.expired = expired;
        topLists(latest.values(), reading.fromMillis, reading.toMillis, now, keys, byCounter, changed);
        return byCounter;
    }

    /**
     * Adds to {@code latest} the 5m windows derived from its 1m windows (unless the topic has 5m windows of its own),
     * and to {@code changed} (unless null) those of them one of whose 1m windows changed.
     */
    private void derive5m(Map<String, Window> latest, Set<String> changed) {
        // 5m windows: the sum of their 1m windows (contract: every 5m window is five 1m windows), for those the
        // job's watermark had passed (a rollup of a window ending at or after theirs was read): a 1m window still
        // open is in no rollup, and a sum of the others would be short
        Map<String, Window> derived = new HashMap<>();
        Set<String> changedDerived = new HashSet<>();
        for (Window w : latest.values()) {
            if (w.res != Resolution.M1) continue;
            long start = Resolution.M5.windowStart(w.start);
            if (start + Resolution.M5.sizeMillis > reading.closedUpTo) continue;
            String id = RollupsReading.id(w.counter, Resolution.M5, start);
            if (latest.containsKey(id)) continue; // the topic has 5m windows of its own (--rollups.resolutions 5m)
            Window f = derived.computeIfAbsent(id, k -> new Window(w.counter, Resolution.M5, start));
            f.sum += w.sum;
            f.events += w.events;
            f.revision = 0;
            if (changed != null && changed.contains(RollupsReading.id(w.counter, w.res, w.start)))
                changedDerived.add(id);
        }
        latest.putAll(derived);
        if (changed != null) changed.addAll(changedDerived);
    }

    /**
     * The window top-K lists ({@code P:top:<ns>:<res>:<start>}, 1m, 1h and 1d: the resolutions the job ranks) as
     * the job wrote them when each window closed: the top {@code k} counters of the namespace by the window's
     * sum at its close (revision 0), best first, ties by counter id; {@code k} the namespace policy's top-K
     * (none: no list, and not in {@code _all} either), {@code --topk} for {@code _all}. Versioned with the
     * watermark the job's list reflects (the window's last millisecond), so a list the job wrote since stays.
     * With more namespaces than {@code --trending.max-namespaces} (which ones the job listed depends on the
     * order it first saw them), only the {@code _all} lists. Returns how many lists; their writes go into
     * {@code out}, one group per list.
     */
    private long topLists(
            Collection<Window> windows,
            long fromMillis,
            long toMillis,
            long now,
            RedisKeys keys,
            Map<String, List<RedisWrite>> out,
            Set<String> changed) {
        ListGroups groups = listGroups(windows, fromMillis, toMillis, changed);
        boolean perNamespace = groups.namespaces() <= rebuild.maxNamespaces;
        if (!perNamespace) {
            LOG.warn(
                    "counter-rollups holds {} namespaces, more than --trending.max-namespaces {}: only the {} top-K lists are rebuilt",
                    groups.namespaces(),
                    rebuild.maxNamespaces,
                    CounterId.ALL_NAMESPACES);
        }
        long lists = 0;
        for (Map.Entry<String, List<Window>> e : groups.byList().entrySet()) {
            if (changed != null && !groups.changed().contains(e.getKey())) continue;
            String[] f = e.getKey().split("\n");
            String ns = f[0];
            if (!perNamespace && !ns.equals(CounterId.ALL_NAMESPACES)) continue;
            Resolution r = Resolution.ofLabel(f[1]);
            long start = Long.parseLong(f[2]);
            long expireAt = ns.equals(CounterId.ALL_NAMESPACES)
                    ? r.expireAtMillis(start)
                    : rebuild.policies.forNamespace(ns).expireAtMillis(r, start);
            if (expireAt <= now) continue;
            String key = keys.top(ns, r, start);
            out.computeIfAbsent("\0" + key, x -> new ArrayList<>())
                    .add(topList(ns, e.getValue(), key, keys, r, start, expireAt));
            lists++;
        }
        return lists;
    }

    /**
     * The windows of each top-K list ({@code <ns>\n<res>\n<start>}, {@code _all} too), the lists one of whose
     * windows is in {@code changed}, and how many namespaces have lists.
     */
    private record ListGroups(Map<String, List<Window>> byList, Set<String> changed, int namespaces) {}

    private ListGroups listGroups(Collection<Window> windows, long fromMillis, long toMillis, Set<String> changed) {
        Map<String, List<Window>> byList = new LinkedHashMap<>();
        Set<String> changedLists = new HashSet<>();
        Set<String> namespaces = new HashSet<>();
        for (Window w : windows) {
            if (w.res != Resolution.M1 && w.res != Resolution.H1 && w.res != Resolution.D1) continue;
            if (w.firstSum == null || w.start < fromMillis || w.start >= toMillis) continue;
            String ns = CounterId.namespaceOf(w.counter);
            if (rebuild.policies.forNamespace(ns).topk() <= 0) continue;
            namespaces.add(ns);
            byList.computeIfAbsent(ns + "\n" + w.res.label + "\n" + w.start, k -> new ArrayList<>())
                    .add(w);
            byList.computeIfAbsent(
                            CounterId.ALL_NAMESPACES + "\n" + w.res.label + "\n" + w.start, k -> new ArrayList<>())
                    .add(w);
            if (changed != null && changed.contains(RollupsReading.id(w.counter, w.res, w.start))) {
                changedLists.add(ns + "\n" + w.res.label + "\n" + w.start);
                changedLists.add(CounterId.ALL_NAMESPACES + "\n" + w.res.label + "\n" + w.start);
            }
        }
        return new ListGroups(byList, changedLists, namespaces.size());
    }

    /** The write of one top-K list: its namespace's top {@code k} windows by their sum at close, best first. */
    private RedisWrite topList(
            String ns, List<Window> ws, String key, RedisKeys keys, Resolution r, long start, long expireAt) {
        int k = ns.equals(CounterId.ALL_NAMESPACES)
                ? rebuild.topk
                : rebuild.policies.forNamespace(ns).topk();
        ws.sort(Comparator.<Window>comparingLong(w -> -w.firstSum).thenComparing(w -> w.counter));
        int n = Math.min(k, ws.size());
        String[] members = new String[n];
        double[] scores = new double[n];
        for (int i = 0; i < n; i++) {
            members[i] = ws.get(i).counter;
            scores[i] = ws.get(i).firstSum;
        }
        return RedisWrite.zset(
                        key, keys.versionOfGlobal(key), start + r.sizeMillis - 1, members, scores, start, expireAt)
                .restoringMissing();
    }

    /** Guarded writes, per counter, pipelined; returns {written, skipped}. */
    long[] write(Map<String, List<RedisWrite>> byCounter) {
        long[] counts = new long[2];
        try (UnifiedJedis j = rebuild.endpoint.client()) {
            RedisApplyScript.SCRIPT.loadOn(j);
            int perCall = rebuild.endpoint.cluster() ? 1 : COUNTERS_PER_CALL;
            List<RedisApplyScript.Call> calls = new ArrayList<>();
            RedisApplyScript.Call c = null;
            int inCall = 0;
            for (List<RedisWrite> ws : byCounter.values()) {
                if (c == null || inCall >= perCall) {
                    c = new RedisApplyScript.Call();
                    calls.add(c);
                    inCall = 0;
                }
                for (RedisWrite w : ws) c.add(w);
                inCall++;
            }
            for (int from = 0; from < calls.size(); from += CALLS_PER_SYNC) {
                writeCalls(j, calls.subList(from, Math.min(calls.size(), from + CALLS_PER_SYNC)), counts);
            }
        }
        return counts;
    }

    /** One round trip of script calls (and one more for those a node answered NOSCRIPT to); adds to {written, skipped}. */
    private void writeCalls(UnifiedJedis j, List<RedisApplyScript.Call> slice, long[] counts) {
        List<Response<Object>> replies = new ArrayList<>(slice.size());
        try (AbstractPipeline p = j.pipelined()) {
            for (RedisApplyScript.Call call : slice) replies.add(RedisApplyScript.SCRIPT.evalsha(p, call));
            p.sync();
        }
        List<RedisApplyScript.Call> again = new ArrayList<>();
        for (int i = 0; i < slice.size(); i++) {
            try {
                count(slice.get(i), replies.get(i).get(), counts);
            } catch (JedisDataException e) {
                if (!RedisErrors.isNoScript(e)) throw e;
                again.add(slice.get(i));
            }
        }
        if (again.isEmpty()) return;
        List<Response<Object>> evals = RedisApplyScript.SCRIPT.evalAgain(j, again);
        for (int i = 0; i < again.size(); i++) count(again.get(i), evals.get(i).get(), counts);
    }

    private void count(RedisApplyScript.Call call, Object result, long[] counts) {
        RedisScript.ApplyReply reply = RedisScript.ApplyReply.decode(result, call.firstKey, rebuild.endpoint);
        counts[0] += reply.applied();
        counts[1] += reply.skipped();
        List<String> rejected = reply.rejected();
        for (int k = 0; k + 1 < rejected.size(); k += 2) {
            LOG.warn("Redis at {} rejected key {}: {}", rebuild.endpoint, rejected.get(k), rejected.get(k + 1));
        }
    }
}
