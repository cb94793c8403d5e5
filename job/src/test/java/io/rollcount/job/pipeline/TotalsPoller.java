package io.rollcount.job.pipeline;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import redis.clients.jedis.Jedis;

/**
 * Reads some Redis keys every 20 ms while a job runs, as a dashboard would, and records every value that is
 * lower than one seen before (keys of counters that only ever receive positive deltas must never go back).
 */
final class TotalsPoller implements AutoCloseable {
    final Map<String, Long> maxSeen = new ConcurrentHashMap<>();
    final List<String> decreases = Collections.synchronizedList(new ArrayList<>());
    final AtomicLong polls = new AtomicLong();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final Thread thread;

    TotalsPoller(String host, int port, List<String> keys) {
        String[] k = keys.toArray(String[]::new);
        thread = new Thread(() -> {
            try (Jedis j = new Jedis(host, port)) {
                while (running.get()) {
                    List<String> values = j.mget(k);
                    for (int i = 0; i < k.length; i++) {
                        if (values.get(i) == null) continue;
                        long v = Long.parseLong(values.get(i));
                        Long before = maxSeen.get(k[i]);
                        if (before != null && v < before) decreases.add(k[i] + ": " + before + " -> " + v);
                        if (before == null || v > before) maxSeen.put(k[i], v);
                    }
                    polls.incrementAndGet();
                    Thread.sleep(20);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "totals-poller");
        thread.setDaemon(true);
        thread.start();
    }

    @Override
    public void close() throws InterruptedException {
        running.set(false);
        thread.join(10_000);
    }
}
