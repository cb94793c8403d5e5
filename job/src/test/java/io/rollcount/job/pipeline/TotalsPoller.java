package io.rollcount.job.pipeline;

import io.rollcount.job.redis.RedisEndpoint;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import redis.clients.jedis.UnifiedJedis;

/**
 * Reads some Redis keys every 20 ms while a job runs, as a dashboard would, and records every value that is
 * lower than one seen before (keys of counters that only ever receive positive deltas must never go back).
 * One GET per key, so that the keys may live in different slots of a Redis Cluster; an error (a failover,
 * a slot moving) is counted, the client made anew, and polling goes on.
 */
final class TotalsPoller implements AutoCloseable {
    final Map<String, Long> maxSeen = new ConcurrentHashMap<>();
    final List<String> decreases = Collections.synchronizedList(new ArrayList<>());
    final AtomicLong polls = new AtomicLong();
    final AtomicLong errors = new AtomicLong();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final Thread thread;

    /** Polls one Redis server. */
    TotalsPoller(String host, int port, List<String> keys) {
        this(() -> RedisEndpoint.parse("redis://" + host + ":" + port).client(), keys);
    }

    /** Polls through clients that {@code connect} makes (a single server's or a Redis Cluster's). */
    TotalsPoller(Supplier<? extends UnifiedJedis> connect, List<String> keys) {
        thread = new Thread(
                () -> {
                    UnifiedJedis c = connect.get();
                    try {
                        while (running.get()) {
                            try {
                                for (String k : keys) {
                                    String value = c.get(k);
                                    if (value == null) continue;
                                    long v = Long.parseLong(value);
                                    Long before = maxSeen.get(k);
                                    if (before != null && v < before) decreases.add(k + ": " + before + " -> " + v);
                                    if (before == null || v > before) maxSeen.put(k, v);
                                }
                                polls.incrementAndGet();
                            } catch (RuntimeException e) {
                                errors.incrementAndGet();
                                c.close();
                                c = connect.get();
                            }
                            Thread.sleep(20);
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    } finally {
                        c.close();
                    }
                },
                "totals-poller");
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public void close() throws InterruptedException {
        running.set(false);
        thread.join(10_000);
    }
}
