package io.rollcount.cli;

import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.RedisKeys;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import redis.clients.jedis.commands.JedisCommands;

/**
 * The live view of {@code ./rollcount demo}, refreshed every second: events in and out per second, consumer lag,
 * checkpoints, Redis commands, the hottest counters with sparklines of their last 5 s windows, and the head of
 * the trending list. On a terminal it redraws the screen; otherwise it prints one line per refresh.
 */
final class DemoView {
    static final int HOT = 10;
    static final int SPARK_WINDOWS = 12;

    private final PrintWriter out;
    private final JedisCommands jedis;
    private final RedisKeys keys;
    private final EventGenerator workload;
    private final long started;
    private final Duration runFor;
    private final String bootstrap;
    private final String redis;
    private final String prefix;
    private final int counters;
    private final boolean terminal = System.console() != null && !"dumb".equals(System.getenv("TERM"));
    /** {nanos, produced, read} of every refresh. */
    private final List<long[]> samples = new ArrayList<>();
    /** Redis commands sent by every refresh. */
    private final List<Long> commandSamples = new ArrayList<>();

    /**
     * A view of the demo started at {@code started} (System.nanoTime) for {@code runFor}, reading its counters
     * from Redis under {@code prefix}.
     */
    DemoView(
            PrintWriter out,
            JedisCommands jedis,
            EventGenerator workload,
            long started,
            Duration runFor,
            String bootstrap,
            String redis,
            String prefix,
            int counters) {
        this.out = out;
        this.jedis = jedis;
        this.keys = new RedisKeys(prefix);
        this.workload = workload;
        this.started = started;
        this.runFor = runFor;
        this.bootstrap = bootstrap;
        this.redis = redis;
        this.prefix = prefix;
        this.counters = counters;
    }

    /** {nanos, produced, read} of every refresh so far. */
    List<long[]> samples() {
        return samples;
    }

    /**
     * Shows the figures of this second, with the rates over the last 3 s (the job's accumulators arrive with
     * heartbeats, about once a second) and the hot counters and trending list read from Redis now; returns the
     * seconds since the start.
     */
    double refresh(long now, long produced, long read, long lag, long commands, CheckpointStats checkpoints) {
        samples.add(new long[] {now, produced, read});
        commandSamples.add(commands);
        int back = Math.max(0, samples.size() - 4);
        long[] then = back == 0 && samples.size() < 4 ? new long[] {started, 0, 0} : samples.get(back);
        long commandsThen = back == 0 && samples.size() < 4 ? 0 : commandSamples.get(back);
        double secs = Math.max(1e-3, (now - then[0]) / 1e9);
        View v = new View(
                (now - started) / 1e9,
                runFor.toSeconds(),
                (produced - then[1]) / secs,
                (read - then[2]) / secs,
                produced,
                read,
                lag,
                checkpoints.completedCount(),
                checkpoints.lastDuration(),
                (commands - commandsThen) / secs,
                commands,
                hotCounters(jedis, keys, workload),
                trending(jedis, keys));
        if (terminal) {
            out.print("\033[H\033[2J");
            out.print(v.frame(bootstrap, redis, prefix, counters));
        } else {
            out.println(v.line());
        }
        out.flush();
        return v.elapsed;
    }

    /** Consumer lag: end offsets of the topic minus the group's committed offsets (committed at each checkpoint); -1 when unknown. */
    static long lag(Admin admin, String group) {
        try {
            List<TopicPartition> parts = new ArrayList<>();
            for (int p = 0; p < DemoCommand.PARTITIONS; p++) parts.add(new TopicPartition(DemoCommand.TOPIC, p));
            var ends = admin.listOffsets(parts.stream().collect(Collectors.toMap(tp -> tp, tp -> OffsetSpec.latest())))
                    .all()
                    .get(2, TimeUnit.SECONDS);
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata()
                    .get(2, TimeUnit.SECONDS);
            long lag = 0;
            for (TopicPartition tp : parts) {
                OffsetAndMetadata c = committed.get(tp);
                lag += ends.get(tp).offset() - (c == null ? 0 : c.offset());
            }
            return lag;
        } catch (Exception e) {
            return -1;
        }
    }

    /** The hottest counters (ranks 0..9 of the workload): total and the last 12 closed 5 s windows, from Redis. */
    static List<Hot> hotCounters(JedisCommands jedis, RedisKeys keys, EventGenerator workload) {
        long size = Resolution.S5.sizeMillis;
        long current = Resolution.S5.windowStart(System.currentTimeMillis());
        List<String> names = new ArrayList<>();
        for (int rank = 0; rank < HOT; rank++) {
            String c = workload.counterId(rank);
            names.add(keys.total(c));
            for (int i = SPARK_WINDOWS; i >= 1; i--) names.add(keys.window(c, Resolution.S5, current - i * size));
        }
        List<String> values = new ArrayList<>();
        try {
            // one MGET per counter: its keys share a Redis Cluster slot
            int perCounter = names.size() / HOT;
            for (int i = 0; i < names.size(); i += perCounter)
                values.addAll(jedis.mget(names.subList(i, i + perCounter).toArray(String[]::new)));
        } catch (RuntimeException e) {
            return List.of();
        }
        List<Hot> hot = new ArrayList<>();
        int k = 0;
        for (int rank = 0; rank < HOT; rank++) {
            String total = values.get(k++);
            long[] series = new long[SPARK_WINDOWS];
            for (int i = 0; i < SPARK_WINDOWS; i++) {
                String v = values.get(k++);
                series[i] = v == null ? 0 : Long.parseLong(v);
            }
            hot.add(new Hot(workload.counterId(rank), total == null ? null : Long.parseLong(total), series));
        }
        return hot;
    }

    record Hot(String counter, Long total, long[] windows) {}

    /** The head of the trending list across namespaces ({@code rc:trending:_all}), as "counter score". */
    static List<String> trending(JedisCommands jedis, RedisKeys keys) {
        try {
            List<String> out = new ArrayList<>();
            for (var t : jedis.zrevrangeWithScores(keys.trending("_all"), 0, TRENDING - 1)) {
                out.add(String.format("%-22s %,14.1f", t.getElement(), t.getScore()));
            }
            return out;
        } catch (RuntimeException e) {
            return List.of();
        }
    }

    private static final int TRENDING = 5;

    /** One refresh of the view. */
    record View(
            double elapsed,
            long duration,
            double inPerSecond,
            double outPerSecond,
            long produced,
            long read,
            long lag,
            long checkpoints,
            long lastCheckpointMillis,
            double commandsPerSecond,
            long commands,
            List<Hot> hot,
            List<String> trending) {

        String frame(String bootstrap, String redis, String prefix, int counters) {
            StringBuilder sb = new StringBuilder();
            sb.append(String.format(
                    "rollcount demo   viral workload, %,d counters   Kafka %s   Redis %s (prefix %s)%n",
                    counters, bootstrap, redis, prefix));
            sb.append(String.format("%.0f s of %d s   Ctrl-C stops%n%n", elapsed, duration));
            sb.append(String.format("events in     %,10.0f /s   produced %,d%n", inPerSecond, produced));
            sb.append(String.format("events out    %,10.0f /s   read by the job %,d%n", outPerSecond, read));
            sb.append(String.format(
                    "consumer lag  %10s      committed by the job at its last checkpoint; not yet read %,d%n",
                    lag < 0 ? "?" : String.format("%,d", lag), Math.max(0, produced - read)));
            sb.append(String.format(
                    "checkpoints   %,10d      last took %s%n",
                    checkpoints, lastCheckpointMillis < 0 ? "-" : lastCheckpointMillis + " ms"));
            sb.append(String.format("Redis         %,10.0f /s   commands sent %,d%n%n", commandsPerSecond, commands));
            sb.append(String.format(
                    "%-4s %-22s %14s   %s%n", "rank", "hottest counters", "total", "last 60 s in 5 s windows"));
            for (int i = 0; i < hot.size(); i++) {
                Hot h = hot.get(i);
                long max = java.util.Arrays.stream(h.windows()).max().orElse(0);
                sb.append(String.format(
                        "%4d %-22s %14s   %s  max %,d%n",
                        i,
                        h.counter(),
                        h.total() == null ? "-" : String.format("%,d", h.total()),
                        Sparkline.of(h.windows()),
                        max));
            }
            sb.append(String.format("%ntrending now (decayed score, half-life 1 h; rc:trending:_all)%n"));
            if (trending.isEmpty()) sb.append("     (not yet written)\n");
            for (int i = 0; i < trending.size(); i++) sb.append(String.format("%4d %s%n", i, trending.get(i)));
            return sb.toString();
        }

        String line() {
            Hot top = hot.isEmpty() ? null : hot.get(0);
            return String.format(
                            "rollcount demo: %3.0f s  in %,.0f/s  out %,.0f/s  produced %,d  read %,d  consumer lag %s  checkpoints %d (last %s)  Redis %,.0f cmd/s%s",
                            elapsed,
                            inPerSecond,
                            outPerSecond,
                            produced,
                            read,
                            lag < 0 ? "?" : String.format("%,d", lag),
                            checkpoints,
                            lastCheckpointMillis < 0 ? "-" : lastCheckpointMillis + " ms",
                            commandsPerSecond,
                            top == null
                                    ? ""
                                    : String.format(
                                            "  %s total %s %s",
                                            top.counter(),
                                            top.total() == null ? "-" : String.format("%,d", top.total()),
                                            Sparkline.of(top.windows())))
                    + (trending.isEmpty()
                            ? ""
                            : "  trending #1 " + trending.get(0).replaceAll("\\s+", " "));
        }
    }
}
