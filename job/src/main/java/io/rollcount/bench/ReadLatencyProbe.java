package io.rollcount.bench;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.RedisKeys;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.Jedis;

/**
 * A dashboard reading Redis while a run writes it: a thread of its own, on a connection of its own, that
 * issues one call every {@link #PAUSE_MILLIS} ms, alternately {@code GET P:{C}:total} and an {@code MGET}
 * of the 60 {@code 1m} window keys of the hour that ends with the workload's last minute, over a list of
 * counters that alternates hot ones (most events) and cold ones (rare), and keeps each call's latency
 * (from sending the command to having decoded the reply). Its CPU is left out of the job's ({@link JobCpu}).
 */
final class ReadLatencyProbe implements AutoCloseable {
    static final long PAUSE_MILLIS = 5;

    private final Jedis jedis;
    private final List<String> totals = new ArrayList<>();
    private final List<String[]> hours = new ArrayList<>();
    private final List<Double> millis = new ArrayList<>();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile String error;

    /**
     * @param counters hot and cold counters, alternating
     * @param lastEventTs the event time the hour of {@code 1m} windows ends with
     */
    ReadLatencyProbe(String host, int port, RedisKeys keys, List<String> counters, long lastEventTs) {
        long lastMinute = Resolution.M1.windowStart(lastEventTs);
        for (String c : counters) {
            totals.add(keys.total(c));
            String[] hour = new String[60];
            for (int k = 0; k < 60; k++) hour[k] = keys.window(c, Resolution.M1, lastMinute - (59 - k) * Resolution.M1.sizeMillis);
            hours.add(hour);
        }
        this.jedis = new Jedis(host, port);
        this.thread = new Thread(this::loop, "bench-dashboard-reader");
        thread.setDaemon(true);
        JobCpu.exclude(thread);
        thread.start();
    }

    private void loop() {
        int call = 0;
        while (running) {
            int c = (call / 2) % totals.size();
            long start = System.nanoTime();
            try {
                if (call % 2 == 0) jedis.get(totals.get(c));
                else jedis.mget(hours.get(c));
            } catch (RuntimeException e) {
                error = e.getMessage();
                return;
            }
            double ms = (System.nanoTime() - start) / 1e6;
            synchronized (millis) {
                millis.add(ms);
            }
            call++;
            try {
                Thread.sleep(PAUSE_MILLIS);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /** Stops the reader and returns every call's latency in ms. */
    double[] stop() throws InterruptedException {
        running = false;
        thread.join(10_000);
        if (error != null) throw new IllegalStateException("the dashboard reader failed: " + error);
        synchronized (millis) {
            return millis.stream().mapToDouble(Double::doubleValue).toArray();
        }
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join(10_000);
        JobCpu.include(thread);
        jedis.close();
    }
}
