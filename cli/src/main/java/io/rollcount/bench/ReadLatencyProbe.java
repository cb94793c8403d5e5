package io.rollcount.bench;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.RedisKeys;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import redis.clients.jedis.Jedis;

/**
 * A dashboard reading Redis while a run writes it. The reader runs in a small JVM of its own (this class's
 * {@link #main}), so that neither the job's garbage-collection pauses nor its CPU accounting ({@link JobCpu})
 * mix with the reads; it shares the machine's cores with the job and Redis, as a dashboard on the same host
 * would. On one connection it issues one call every {@link #PAUSE_MILLIS} ms, alternately
 * {@code GET P:{C}:total} and an {@code MGET} of the 60 {@code 1m} window keys of the hour that ends with the
 * workload's last minute, over counters that alternate hot ones (most events) and cold ones (rare), and
 * reports each call's latency (sending the command to having decoded the reply). The first
 * {@link #WARMUP_READS} calls warm the reader's JIT up and are not reported; the job starts after them,
 * and only the calls made between the run's first event and its end count.
 */
final class ReadLatencyProbe implements AutoCloseable {
    static final long PAUSE_MILLIS = 5;
    static final int WARMUP_READS = 400;

    private final Process process;
    /** (wall-clock ms at the call's start, latency ms) of each reported call. */
    private final List<double[]> calls = new ArrayList<>();

    private final Thread collector;
    private final CountDownLatch ready = new CountDownLatch(1);

    /**
     * Starts the reader and returns once it has warmed up.
     *
     * @param counters hot and cold counters, alternating
     * @param lastEventTs the event time the hour of {@code 1m} windows ends with
     */
    ReadLatencyProbe(String host, int port, String prefix, List<String> counters, long lastEventTs, Path log)
            throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-cp",
                System.getProperty("java.class.path"),
                ReadLatencyProbe.class.getName(),
                host,
                String.valueOf(port),
                prefix,
                String.valueOf(lastEventTs)));
        cmd.addAll(counters);
        process = new ProcessBuilder(cmd).redirectError(log.toFile()).start();
        collector = new Thread(this::collect, "bench-dashboard-reader-output");
        collector.setDaemon(true);
        collector.start();
        if (!ready.await(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IOException("the dashboard reader did not start within 60 s; see " + log);
        }
    }

    private void collect() {
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.US_ASCII))) {
            String line;
            while ((line = in.readLine()) != null) {
                if (line.equals("ready")) {
                    ready.countDown();
                    continue;
                }
                String[] f = line.split(" ");
                double[] call = {Double.parseDouble(f[0]), Double.parseDouble(f[1]), Double.parseDouble(f[2])};
                synchronized (calls) {
                    calls.add(call);
                }
            }
        } catch (IOException | NumberFormatException e) {
            // the process ended or wrote something else: stop() reports its exit status
        } finally {
            ready.countDown();
        }
    }

    /** What {@link #stop} returns: per reported call, its latency and how late the reader woke up before it (ms). */
    record Reads(double[] latencies, double[] stalls) {}

    /**
     * Stops the reader (end of its standard input) and returns, for every reported call that started between
     * {@code fromMillis} and {@code toMillis} (wall clock: the run's first event and its end), its latency in
     * ms and the stall before it: how much longer than {@link #PAUSE_MILLIS} the reader's sleep before the
     * call took. A stall is time the reader was runnable and not run (the machine's scheduling, not Redis):
     * the same delays hit a call that is under way, so read latencies near the stalls' own percentiles say
     * the machine, not the writes, sets them.
     */
    Reads stop(long fromMillis, long toMillis) throws IOException, InterruptedException {
        process.getOutputStream().close();
        if (!process.waitFor(30, TimeUnit.SECONDS)) process.destroyForcibly();
        collector.join(10_000);
        if (process.exitValue() != 0)
            throw new IllegalStateException("the dashboard reader failed with exit status " + process.exitValue());
        synchronized (calls) {
            List<double[]> in = calls.stream()
                    .filter(c -> c[0] >= fromMillis && c[0] <= toMillis)
                    .toList();
            return new Reads(
                    in.stream().mapToDouble(c -> c[1]).toArray(),
                    in.stream().mapToDouble(c -> c[2]).toArray());
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroy();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    /**
     * The reader: {@code host port prefix lastEventTs counter...}; on standard output one line per call, its
     * start (epoch ms), its latency (ms) and how late its sleep before it ended (ms), until standard input ends.
     */
    public static void main(String[] args) throws Exception {
        String host = args[0];
        int port = Integer.parseInt(args[1]);
        RedisKeys keys = new RedisKeys(args[2]);
        long lastMinute = Resolution.M1.windowStart(Long.parseLong(args[3]));
        List<String> totals = new ArrayList<>();
        List<String[]> hours = new ArrayList<>();
        for (int i = 4; i < args.length; i++) {
            totals.add(keys.total(args[i]));
            String[] hour = new String[60];
            for (int k = 0; k < 60; k++)
                hour[k] = keys.window(args[i], Resolution.M1, lastMinute - (59 - k) * Resolution.M1.sizeMillis);
            hours.add(hour);
        }
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // until the parent closes it
                }
            } catch (IOException ignored) {
                // the parent is gone
            }
        });
        stdin.setDaemon(true);
        stdin.start();
        PrintStream out = new PrintStream(
                new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.US_ASCII);
        try (Jedis jedis = new Jedis(host, port)) {
            double lateMillis = 0;
            for (int call = 0; stdin.isAlive(); call++) {
                int c = (call / 2) % totals.size();
                long startMillis = System.currentTimeMillis();
                long start = System.nanoTime();
                if (call % 2 == 0) jedis.get(totals.get(c));
                else jedis.mget(hours.get(c));
                long nanos = System.nanoTime() - start;
                if (call == WARMUP_READS) {
                    out.println("ready");
                    out.flush();
                } else if (call > WARMUP_READS) {
                    out.println(startMillis + " " + nanos / 1_000 / 1000.0 + " " + lateMillis);
                    if (call % 50 == 0) out.flush();
                }
                long slept = System.nanoTime();
                Thread.sleep(PAUSE_MILLIS);
                lateMillis = Math.max(0, (System.nanoTime() - slept) / 1_000 - PAUSE_MILLIS * 1000) / 1000.0;
            }
        }
        out.flush();
    }
}
