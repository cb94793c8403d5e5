package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisEpoch;
import io.rollcount.job.util.IoThreadOnly;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;

/**
 * Sees a loss of Redis's data (a restart without persistence, a failover to a lagging replica, {@code FLUSHALL}):
 * the first pipeline of each batch begins with {@code GET P:_epoch} ({@link RedisEpoch}; in a cluster also a
 * {@code GET} of each master's {@code P:_epoch:{n}}), compared with the token read at the first connection.
 */
public final class EpochWatch implements RetryingConnection.Listener {
    private final String epochKey;
    private final SinkMetrics metrics;
    /**
     * The token of each epoch key this writer knows ({@code P:_epoch}, and in a cluster one per master, see
     * {@link RedisEpoch#keys}), read (or created) at its first connection, and for a key new to it at a later
     * connection (the slot map changed); null before the first. Kept across connections, so that a key gone
     * while the writer reconnected is still seen gone.
     */
    @IoThreadOnly
    private Map<String, String> known;
    /** The epoch keys of the slot map at the last connection, checked with each batch. */
    @IoThreadOnly
    private List<String> keys = List.of();
    /** The epoch keys that {@link #check} found gone or changed since the last {@link #renewLost}. */
    @IoThreadOnly
    private final List<String> lost = new ArrayList<>();

    public EpochWatch(String epochKey, SinkMetrics metrics) {
        this.epochKey = epochKey;
        this.metrics = metrics;
    }

    /**
     * The epoch keys of the slot map now ({@link RedisEpoch#keys}); each one this writer does not know yet is
     * read, or created, and known from now on. A key it knew keeps the token it knew: the next batch compares.
     */
    @Override
    public void connected(UnifiedJedis j) {
        List<String> now = RedisEpoch.keys(j, epochKey);
        if (now.size() > 1) metrics.commands(1);
        Map<String, String> k = known == null ? new HashMap<>() : known;
        for (String key : now) {
            if (k.containsKey(key)) continue;
            metrics.commands(2);
            k.put(key, RedisEpoch.ensure(j, key));
        }
        known = k;
        keys = now;
    }

    /** Queues a {@code GET} of every epoch key in the pipeline (none before the first connection). */
    public Map<String, Response<String>> queue(AbstractPipeline p) {
        Map<String, Response<String>> gets = new LinkedHashMap<>();
        if (known != null) for (String k : keys) gets.put(k, p.get(k));
        return gets;
    }

    /** Compares the replies of {@link #queue}; returns whether a key is gone or changed. */
    public boolean check(Map<String, Response<String>> gets) {
        boolean changed = false;
        for (Map.Entry<String, Response<String>> e : gets.entrySet()) {
            if (!Objects.equals(known.get(e.getKey()), e.getValue().get())) {
                changed = true;
                if (!lost.contains(e.getKey())) lost.add(e.getKey());
            }
        }
        return changed;
    }

    /** Creates the lost epoch keys anew and knows their new tokens; returns those keys. */
    public List<String> renewLost(UnifiedJedis j) {
        List<String> renewed = new ArrayList<>(lost);
        lost.clear();
        for (String k : renewed) {
            metrics.commands(2);
            known.put(k, RedisEpoch.ensure(j, k));
        }
        return renewed;
    }
}
