package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keys Redis rejected for good (WRONGTYPE for a key of another type under the prefix, in a plain reply or
 * among the script's per-key errors): each reported once (a WARN line, {@code redisRejected},
 * {@code redisFirstRejected}), kept in the writer's checkpointed state with the start of the earliest rejected
 * window, below which the writer holds the watermark it publishes. The I/O thread adds rejections; the mailbox
 * thread reads them for a checkpoint (after the batch in flight completed): the set is concurrent and the held
 * watermark {@code volatile}.
 */
public final class Rejections {
    private static final Logger LOG = LoggerFactory.getLogger(Rejections.class);
    /**
     * Distinct rejected keys remembered (and checkpointed) at most: beyond, a further key is still counted
     * (again at each of its rejections, since it is not remembered) but no longer logged.
     */
    public static final int MAX_REPORTED_KEYS = 10_000;

    private final RedisEndpoint endpoint;
    private final String watermarkKey;
    private final SinkMetrics metrics;
    /** Keys already reported as rejected, so that each is logged and counted once. */
    private final Set<String> keys = ConcurrentHashMap.newKeySet();
    /**
     * The start (epoch ms) of the earliest window a key of which Redis rejected, or {@code Long.MAX_VALUE}:
     * the watermark this writer publishes stays at or below it, so that {@code rc:meta:watermark} never says
     * final a window whose value is not in Redis.
     */
    private volatile long heldWatermark = Long.MAX_VALUE;

    public Rejections(RedisEndpoint endpoint, String watermarkKey, SinkMetrics metrics) {
        this.endpoint = endpoint;
        this.watermarkKey = watermarkKey;
        this.metrics = metrics;
    }

    /** Keeps the rejections of a restored state. */
    public void restore(long heldWatermark, Collection<String> keys) {
        this.heldWatermark = Math.min(this.heldWatermark, heldWatermark);
        this.keys.addAll(keys);
    }

    /** The watermark the writer holds its published one below, {@code Long.MAX_VALUE} for none. */
    public long heldWatermark() {
        return heldWatermark;
    }

    /** The keys reported so far (at most {@link #MAX_REPORTED_KEYS}). */
    public List<String> keys() {
        return new ArrayList<>(keys);
    }

    public boolean isEmpty() {
        return heldWatermark == Long.MAX_VALUE && keys.isEmpty();
    }

    /**
     * A key Redis rejected for good (its write cannot succeed on retry: a key of another type under the
     * prefix, say): logged and counted once per key; a window's key holds the watermark below that window.
     */
    public void rejected(String key, String error) {
        if (error.endsWith(".")) error = error.substring(0, error.length() - 1);
        long start = RedisKeys.windowStartMillis(key);
        if (start != Long.MIN_VALUE && start < heldWatermark) heldWatermark = start;
        if (keys.contains(key)) return;
        boolean listed = keys.size() < MAX_REPORTED_KEYS;
        if (listed) keys.add(key);
        metrics.keysRejected.inc();
        if (metrics.firstRejected == null) metrics.firstRejected = key + " (" + error + ")";
        if (listed) {
            LOG.warn(
                    "Redis at {} rejected key {} for good: {}. Every other key is still written; this one is not{}.",
                    endpoint,
                    key,
                    error,
                    start != Long.MIN_VALUE
                            ? ", and " + watermarkKey + " stays below its window (start " + start + " ms)"
                            : "");
        } else if (keys.size() == MAX_REPORTED_KEYS) {
            LOG.warn(
                    "Redis at {} rejected more than {} keys; more are counted in the metric redisRejected, not logged",
                    endpoint,
                    MAX_REPORTED_KEYS);
        }
    }
}
