package io.rollcount.cli;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.parse.EventParser;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.util.Durations;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import redis.clients.jedis.UnifiedJedis;

/**
 * {@code ./rollcount query <counter> [--res 1m] [--last 1h] [--json]}: a counter's series, total and uniques from
 * Redis; with {@code --json} one JSON object (its fields: {@link #json}).
 */
@Command(
        name = "query",
        mixinStandardHelpOptions = true,
        description =
                "Print a counter's window series (with a sparkline), its total and its unique users, read from Redis.")
final class QueryCommand implements Callable<Integer> {
    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'").withZone(ZoneOffset.UTC);

    @Parameters(index = "0", paramLabel = "COUNTER", description = "The counter id, e.g. post:123:likes.")
    String counter;

    @Option(
            names = "--res",
            defaultValue = "1m",
            description = "Resolution: 5s, 1m, 5m, 1h or 1d (default: ${DEFAULT-VALUE}).")
    String res;

    @Option(
            names = "--last",
            defaultValue = "1h",
            description = "How far back from the job's watermark (default: ${DEFAULT-VALUE}).")
    String last;

    @Option(names = "--json", description = "Print one JSON object (fields: see the README, Reading the counts).")
    boolean json;

    @Mixin
    RedisReadOptions redisOptions = new RedisReadOptions();

    @Override
    public Integer call() {
        String problem = EventParser.counterProblem(counter);
        if (problem != null) throw new IllegalArgumentException("not a counter id: " + problem);
        Resolution r = Resolution.ofLabel(res);
        long span = Durations.parse(last).toMillis();
        int points = (int) Math.min(2000, Math.max(1, span / r.sizeMillis));
        RedisKeys keys = redisOptions.keys();
        RedisEndpoint endpoint = redisOptions.endpoint();
        try (UnifiedJedis jedis = redisOptions.client()) {
            String total = jedis.get(keys.total(counter));
            if (total == null) {
                System.err.println("rollcount: no counter '" + counter + "' in Redis at " + endpoint + " (key "
                        + keys.total(counter) + " does not exist)");
                return 1;
            }
            String wm = jedis.get(keys.watermark());
            // No watermark yet, or the end of a bounded run (every window final): up to now.
            long end = wm != null && Long.parseLong(wm) != Long.MAX_VALUE
                    ? Long.parseLong(wm)
                    : System.currentTimeMillis();
            long lastStart = r.windowStart(end);
            List<Long> starts = new ArrayList<>();
            for (int i = points - 1; i >= 0; i--) starts.add(lastStart - i * r.sizeMillis);
            String[] windowKeys =
                    starts.stream().map(s -> keys.window(counter, r, s)).toArray(String[]::new);
            // one MGET per counter: every key of a counter shares its hash tag, so its slot in a Redis Cluster
            List<String> values = jedis.mget(windowKeys);
            if (json) {
                System.out.println(json(keys, jedis, r, wm, end, starts, values, total));
                return 0;
            }
            long[] series = new long[values.size()];
            for (int i = 0; i < series.length; i++)
                series[i] = values.get(i) == null ? 0 : Long.parseLong(values.get(i));
            System.out.printf("%s  total %s%n", counter, total);
            System.out.printf(
                    "%s windows from %s to %s (watermark %s)%n",
                    r.label,
                    TIME.format(Instant.ofEpochMilli(starts.get(0))),
                    TIME.format(Instant.ofEpochMilli(lastStart + r.sizeMillis)),
                    wm == null
                            ? "unknown"
                            : Long.parseLong(wm) == Long.MAX_VALUE
                                    ? "end of input"
                                    : TIME.format(Instant.ofEpochMilli(end)));
            System.out.println(Sparkline.of(series) + "  max "
                    + java.util.Arrays.stream(series).max().orElse(0));
            for (int i = Math.max(0, series.length - 10); i < series.length; i++) {
                System.out.printf("  %s  %,d%n", TIME.format(Instant.ofEpochMilli(starts.get(i))), series[i]);
            }
            long all = pfcount(jedis, keys.uniquesAll(counter));
            if (all >= 0) {
                System.out.printf(
                        "unique users: all time %,d, this hour %,d, today %,d%n",
                        all,
                        Math.max(
                                0,
                                pfcount(jedis, keys.uniques(counter, Resolution.H1, Resolution.H1.windowStart(end)))),
                        Math.max(
                                0,
                                pfcount(jedis, keys.uniques(counter, Resolution.D1, Resolution.D1.windowStart(end)))));
            } else {
                System.out.println("unique users: none recorded (no event carried a user)");
            }
            return 0;
        }
    }

    /**
     * {@code {"counter","prefix","total","res","watermark","windows":[{"start","end","sum"}],"uniques":{"all",
     * "hour","day"}}}: times in epoch milliseconds; {@code watermark} null when Redis holds none; a window's
     * {@code sum} null where its key is missing (no event in it, expired, or a resolution the policy does not
     * keep); each {@code uniques} field null where no sketch exists ({@code hour} and {@code day}: the windows
     * of the watermark).
     */
    private String json(
            RedisKeys keys,
            UnifiedJedis jedis,
            Resolution r,
            String wm,
            long end,
            List<Long> starts,
            List<String> values,
            String total) {
        long hour = pfcount(jedis, keys.uniques(counter, Resolution.H1, Resolution.H1.windowStart(end)));
        long day = pfcount(jedis, keys.uniques(counter, Resolution.D1, Resolution.D1.windowStart(end)));
        long all = pfcount(jedis, keys.uniquesAll(counter));
        byte[] bytes = io.rollcount.job.model.Json.write(g -> {
            g.writeStartObject();
            g.writeStringField("counter", counter);
            g.writeStringField("prefix", redisOptions.redisKeyPrefix);
            g.writeNumberField("total", Long.parseLong(total));
            g.writeStringField("res", r.label);
            if (wm == null) g.writeNullField("watermark");
            else g.writeNumberField("watermark", Long.parseLong(wm));
            g.writeArrayFieldStart("windows");
            for (int i = 0; i < starts.size(); i++) {
                g.writeStartObject();
                g.writeNumberField("start", starts.get(i));
                g.writeNumberField("end", starts.get(i) + r.sizeMillis);
                if (values.get(i) == null) g.writeNullField("sum");
                else g.writeNumberField("sum", Long.parseLong(values.get(i)));
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeObjectFieldStart("uniques");
            for (var f : List.of(
                    java.util.Map.entry("all", all),
                    java.util.Map.entry("hour", hour),
                    java.util.Map.entry("day", day))) {
                if (f.getValue() < 0) g.writeNullField(f.getKey());
                else g.writeNumberField(f.getKey(), f.getValue());
            }
            g.writeEndObject();
            g.writeEndObject();
        });
        return new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    }

    private static long pfcount(UnifiedJedis jedis, String key) {
        return jedis.exists(key) ? jedis.pfcount(key) : -1;
    }
}
