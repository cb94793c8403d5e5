package io.rollcount.job.redis;

import java.io.Serializable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Tells an operator that holds values Redis shows (the counts, the lists) when Redis lost the job's data, so
 * that it writes them again: it compares {@code P:_epoch} (and in a cluster each master's epoch key, see
 * {@link RedisEpoch#keys}) with the token it read when it opened, with a {@code GET} of each per {@link #check} on a thread and a connection of its own (the operator's
 * task thread never waits for Redis). The sink's writers check the same key with every batch and make their
 * own state true again; this is the rebuild's trigger, on the side of the values.
 *
 * <p>At {@link #open} of an operator that restored its state, a missing writers' mark {@code P:_mark} (which
 * every run that wrote a count leaves) is a loss too: Redis lost its data while the job was down, and what the
 * job holds is missing there. A fresh operator just creates the epoch if it is missing.
 * While Redis cannot be reached a check does nothing; the next one tries again on a new connection.
 */
public final class RedisLossWatch implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(RedisLossWatch.class);

    private final RedisEndpoint endpoint;
    private final String epochKey;
    private final String markKey;

    private transient ExecutorService thread;
    private transient UnifiedJedis jedis;
    /** The token of each epoch key known (read or created): {@code P:_epoch}, and in a cluster one per master. */
    private transient java.util.Map<String, String> known;

    private transient AtomicBoolean lost;
    private transient Future<?> inFlight;

    public RedisLossWatch(RedisEndpoint endpoint, String keyPrefix) {
        this.endpoint = endpoint;
        this.epochKey = new RedisKeys(keyPrefix).epoch();
        this.markKey = new RedisKeys(keyPrefix).mark();
    }

    /** Starts watching: reads (or creates) the epoch on the watch's thread; a restored operator waits up to 10 s for it. */
    public void open(String name, boolean restored) {
        lost = new AtomicBoolean();
        thread = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "redis-loss-watch-" + name);
            t.setDaemon(true);
            return t;
        });
        Future<?> first = thread.submit(() -> {
            try {
                // the writers' mark exists wherever a run wrote a count under the prefix, and they only read it
                // until their first write: missing under a restored job, Redis lost its data while the job was down
                String mark = client().get(markKey);
                learn();
                if (mark == null && restored) {
                    LOG.warn(
                            "{} is missing at the start of a restored job: Redis at {} lost its data while the job was down; {} writes what it holds again",
                            markKey,
                            endpoint,
                            name);
                    lost.set(true);
                }
            } catch (JedisException e) {
                close(jedis);
                jedis = null;
                LOG.info(
                        "reading {} from Redis at {} failed ({}); the next check tries again",
                        epochKey,
                        endpoint,
                        e.toString());
            }
        });
        inFlight = first;
        if (!restored) return;
        // a restored operator learns of a loss while the job was down before its first record (within a bound)
        try {
            first.get(10, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            LOG.info("reading {} from Redis at {} took over 10 s; the next check looks again", epochKey, endpoint);
        }
    }

    /**
     * Starts a check unless one is under way; returns true once for each loss found since the last call (the
     * caller then writes everything it holds again).
     */
    public boolean check() {
        if (inFlight == null || inFlight.isDone()) inFlight = thread.submit(this::compare);
        return lost.getAndSet(false);
    }

    /** Returns true once for each loss found since the last call, without starting a check. */
    public boolean lossSeen() {
        return lost.getAndSet(false);
    }

    /**
     * The epoch keys of the slot map now: a key not known yet (the first check, a master that joined, a slot
     * map that changed) is read, or created, and known from now on.
     */
    private java.util.List<String> learn() {
        java.util.List<String> keys = RedisEpoch.keys(client(), epochKey);
        java.util.Map<String, String> next = new java.util.HashMap<>();
        for (String k : keys) {
            String token = known == null ? null : known.get(k);
            next.put(k, token != null ? token : RedisEpoch.ensure(client(), k));
        }
        known = next;
        return keys;
    }

    private void compare() {
        try {
            if (known == null) {
                learn();
                return;
            }
            java.util.Map<String, String> before = known;
            java.util.List<String> keys = learn();
            java.util.List<String> gone = new java.util.ArrayList<>();
            for (String k : keys) {
                String was = before.get(k);
                if (was == null) continue; // new to this watch: learned, nothing to compare
                String now = client().get(k);
                if (!was.equals(now)) {
                    gone.add(k);
                    known.put(k, RedisEpoch.ensure(client(), k));
                }
            }
            if (!gone.isEmpty()) {
                LOG.info("Redis at {} lost data: epoch keys {} gone or changed", endpoint, gone);
                lost.set(true);
            }
        } catch (JedisException e) {
            close(jedis);
            jedis = null;
        }
    }

    private UnifiedJedis client() {
        if (jedis == null) jedis = endpoint.client();
        return jedis;
    }

    public void close() {
        if (thread != null) thread.shutdownNow();
        close(jedis);
        jedis = null;
    }

    private static void close(UnifiedJedis j) {
        if (j == null) return;
        try {
            j.close();
        } catch (RuntimeException e) {
            // closing a broken connection
        }
    }
}
