package io.rollcount.job.redis;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.model.TopList;
import org.apache.flink.api.common.functions.MapFunction;

/**
 * A {@link TopList} as the atomic, version-checked replace of its sorted set: {@code rc:trending:<ns>}
 * (no expiry) or {@code rc:top:<ns>:<res>:<start>} (the window's expiry). The version is the list's
 * {@code at} (the watermark it reflects), under {@link RedisKeys#versionOfGlobal}, so a list replayed
 * after a restart never replaces a newer one; the writes of one key must reach one sink subtask in order
 * (key the stream by {@link RedisWrite#key}), so that of two lists of equal {@code at} the later wins.
 */
public final class TopListWrites implements MapFunction<TopList, RedisWrite> {
    private static final long serialVersionUID = 1L;

    /** A trending list (and its version key) expires this long after its last write: 7 days. */
    public static final long TRENDING_TTL_MILLIS = 7L * 24 * 3600 * 1000;

    private final RedisKeys keys;

    public TopListWrites(RedisKeys keys) {
        this.keys = keys;
    }

    @Override
    public RedisWrite map(TopList t) {
        boolean window = TopList.WINDOW.equals(t.kind);
        Resolution r = window ? Resolution.ofLabel(t.res) : null;
        String key = window ? keys.top(t.ns, r, t.start) : keys.trending(t.ns);
        return RedisWrite.zset(key, keys.versionOfGlobal(key), t.at, t.counters, t.scores, window ? r.ttlMillis : TRENDING_TTL_MILLIS);
    }
}
