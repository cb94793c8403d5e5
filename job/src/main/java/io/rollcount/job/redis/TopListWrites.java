package io.rollcount.job.redis;

import io.rollcount.job.model.CounterId;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.TopList;
import io.rollcount.job.policy.Policies;
import org.apache.flink.api.common.functions.MapFunction;

/**
 * A {@link TopList} as the atomic, version-checked replace of its sorted set: {@code rc:trending:<ns>}
 * (expiring {@link #TRENDING_TTL_MILLIS} after its last write) or {@code rc:top:<ns>:<res>:<start>} (with its version key, the window's fixed expiry: its end
 * plus the retention). The version is the list's
 * {@code at} (the watermark it reflects), under {@link RedisKeys#versionOfGlobal}, so a list replayed
 * after a restart never replaces a newer one; the writes of one key must reach one sink subtask in order
 * (key the stream by {@link RedisWrite#key}), so that of two lists of equal {@code at} the later wins.
 */
public final class TopListWrites implements MapFunction<TopList, RedisWrite> {
    private static final long serialVersionUID = 1L;

    /**
     * A trending list (and its version key) expires this long after its last write: 7 days, so that the list
     * of a namespace that left the trending cap goes away. (Not a window key: no fixed expiry.)
     */
    public static final long TRENDING_TTL_MILLIS = 7L * 24 * 3600 * 1000;

    private final RedisKeys keys;
    /** A namespace's window lists expire as its window sums do (its policy's retention); null: the defaults. */
    private final Policies policies;

    public TopListWrites(RedisKeys keys) {
        this(keys, null);
    }

    public TopListWrites(RedisKeys keys, Policies policies) {
        this.keys = keys;
        this.policies = policies;
    }

    @Override
    public RedisWrite map(TopList t) {
        boolean window = TopList.WINDOW.equals(t.kind);
        Resolution r = window ? Resolution.ofLabel(t.res) : null;
        String key = window ? keys.top(t.ns, r, t.start) : keys.trending(t.ns);
        return RedisWrite.zset(
                key,
                keys.versionOfGlobal(key),
                t.at,
                t.counters,
                t.scores,
                window ? t.start : RedisWrite.NO_WINDOW,
                window ? expireAt(t.ns, r, t.start) : System.currentTimeMillis() + TRENDING_TTL_MILLIS);
    }

    private long expireAt(String ns, Resolution r, long start) {
        if (policies == null || CounterId.ALL_NAMESPACES.equals(ns)) return r.expireAtMillis(start);
        return policies.forNamespace(ns).expireAtMillis(r, start);
    }
}
