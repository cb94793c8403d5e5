package io.rollcount.cli;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisNodes;
import java.io.PrintStream;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.Tuple;

/**
 * {@code ./rollcount top <ns> [--res 1h]}: a namespace's trending list ({@code rc:trending:<ns>}) and its
 * latest window top-K ({@code rc:top:<ns>:<res>:<start>}), read from Redis, with bars. {@code _all} is the
 * list across namespaces.
 */
@Command(
        name = "top",
        mixinStandardHelpOptions = true,
        description =
                "Print a namespace's trending list and its latest window top-K (with bars), read from Redis. Namespace _all: across namespaces.")
final class TopCommand implements Callable<Integer> {
    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'").withZone(ZoneOffset.UTC);
    private static final int BAR_WIDTH = 30;

    @Parameters(
            index = "0",
            paramLabel = "NS",
            description = "The namespace (a counter's text before its first ':'), or _all.")
    String ns;

    @Option(
            names = "--res",
            defaultValue = "1h",
            description = "Window resolution of the top-K: 1m, 1h or 1d (default: ${DEFAULT-VALUE}).")
    String res;

    @Option(
            names = "--limit",
            defaultValue = "10",
            description = "How many items of each list to print (default: ${DEFAULT-VALUE}).")
    int limit;

    @Option(names = "--json", description = "Print one JSON object (fields: see the README, Reading the counts).")
    boolean json;

    @picocli.CommandLine.Mixin
    RedisReadOptions redisOptions = new RedisReadOptions();

    @Override
    public Integer call() {
        Resolution r = Resolution.ofLabel(res);
        if (r != Resolution.M1 && r != Resolution.H1 && r != Resolution.D1) {
            throw new IllegalArgumentException("no window top-K at resolution " + res + ": expected 1m, 1h or 1d");
        }
        if (limit < 1) throw new IllegalArgumentException("--limit must be at least 1");
        RedisKeys keys = redisOptions.keys();
        RedisEndpoint endpoint = redisOptions.endpoint();
        try (UnifiedJedis jedis = redisOptions.client()) {
            String trendingKey = keys.trending(ns);
            List<Tuple> trending = jedis.zrevrangeWithScores(trendingKey, 0, limit - 1);
            Long start = latestWindow(jedis, endpoint, keys, r);
            if (trending.isEmpty() && start == null) {
                System.err.println("rollcount: no namespace '" + ns + "' in Redis at " + endpoint + " (no key "
                        + trendingKey + " and no " + keys.topHead(ns, r) + "* key)");
                return 1;
            }
            PrintStream out = System.out;
            String at = jedis.get(keys.versionOfGlobal(trendingKey));
            if (json) {
                List<Tuple> top =
                        start == null ? List.of() : jedis.zrevrangeWithScores(keys.top(ns, r, start), 0, limit - 1);
                out.println(json(r, at, trending, start, top));
                return 0;
            }
            out.printf(
                    "trending in %s%s%n",
                    ns,
                    at == null ? "" : " at " + TIME.format(Instant.ofEpochMilli(Long.parseLong(at))) + " (event time)");
            if (trending.isEmpty()) out.println("  (no trending list yet)");
            else print(out, trending, "%.1f");
            out.println();
            if (start == null) {
                out.printf("no closed %s window of %s yet%n", r.label, ns);
            } else {
                String key = keys.top(ns, r, start);
                List<Tuple> top = jedis.zrevrangeWithScores(key, 0, limit - 1);
                out.printf(
                        "top %d of %s in the %s window %s .. %s%n",
                        top.size(),
                        ns,
                        r.label,
                        TIME.format(Instant.ofEpochMilli(start)),
                        TIME.format(Instant.ofEpochMilli(start + r.sizeMillis)));
                print(out, top, "%.0f");
            }
            return 0;
        }
    }

    /**
     * {@code {"ns","prefix","trending":{"at","items":[{"counter","score"}]},"window":{"res","start","end",
     * "items":[{"counter","score"}]}}}: times in epoch milliseconds ({@code at} the event time of the trending
     * list, null where unknown); {@code window} null when no window of the resolution has closed; items best
     * first, at most {@code --limit}.
     */
    private String json(Resolution r, String at, List<Tuple> trending, Long start, List<Tuple> top) {
        byte[] bytes = io.rollcount.job.model.Json.write(g -> {
            g.writeStartObject();
            g.writeStringField("ns", ns);
            g.writeStringField("prefix", redisOptions.redisKeyPrefix);
            g.writeObjectFieldStart("trending");
            if (at == null) g.writeNullField("at");
            else g.writeNumberField("at", Long.parseLong(at));
            items(g, trending);
            g.writeEndObject();
            if (start == null) {
                g.writeNullField("window");
            } else {
                g.writeObjectFieldStart("window");
                g.writeStringField("res", r.label);
                g.writeNumberField("start", start);
                g.writeNumberField("end", start + r.sizeMillis);
                items(g, top);
                g.writeEndObject();
            }
            g.writeEndObject();
        });
        return new String(bytes, java.nio.charset.StandardCharsets.UTF_8);
    }

    private static void items(com.fasterxml.jackson.core.JsonGenerator g, List<Tuple> items)
            throws java.io.IOException {
        g.writeArrayFieldStart("items");
        for (Tuple t : items) {
            g.writeStartObject();
            g.writeStringField("counter", t.getElement());
            g.writeNumberField("score", t.getScore());
            g.writeEndObject();
        }
        g.writeEndArray();
    }

    /** Start (epoch ms) of the latest window with a top-K key: just behind the watermark first, else a scan. */
    private Long latestWindow(UnifiedJedis jedis, RedisEndpoint endpoint, RedisKeys keys, Resolution r) {
        String wm = jedis.get(keys.watermark());
        if (wm != null && Long.parseLong(wm) != Long.MAX_VALUE) {
            long s = r.windowStart(Long.parseLong(wm));
            for (int i = 0; i < 5; i++, s -= r.sizeMillis) {
                if (jedis.exists(keys.top(ns, r, s))) return s;
            }
        }
        String pattern = keys.topPattern(ns, r);
        Long[] best = {null};
        // every master of a Redis Cluster: SCAN sees one node's keys
        RedisNodes.scan(endpoint, pattern, (node, page) -> {
            for (String k : page) {
                try {
                    long s = Long.parseLong(k.substring(k.lastIndexOf(':') + 1)) * 1000;
                    if (best[0] == null || s > best[0]) best[0] = s;
                } catch (NumberFormatException e) {
                    // not a window key
                }
            }
        });
        return best[0];
    }

    static void print(PrintStream out, List<Tuple> items, String scoreFormat) {
        double max = items.stream().mapToDouble(Tuple::getScore).max().orElse(0);
        int width = items.stream().mapToInt(t -> t.getElement().length()).max().orElse(0);
        for (int i = 0; i < items.size(); i++) {
            Tuple t = items.get(i);
            out.printf(
                    "%4d  %-" + width + "s  %-" + BAR_WIDTH + "s  " + scoreFormat + "%n",
                    i + 1,
                    t.getElement(),
                    bar(t.getScore(), max),
                    t.getScore());
        }
    }

    /** A bar of up to {@value #BAR_WIDTH} cells, in eighths of a cell. */
    static String bar(double value, double max) {
        if (!(max > 0) || !(value > 0)) return "";
        int eighths = (int) Math.round(value / max * BAR_WIDTH * 8);
        StringBuilder sb = new StringBuilder();
        for (int i = 0; i < eighths / 8; i++) sb.append('█');
        if (eighths % 8 > 0) sb.append(" ▏▎▍▌▋▊▉".charAt(eighths % 8));
        return sb.toString();
    }
}
