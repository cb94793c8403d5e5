import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.resps.Tuple;

/**
 * Reads Rollcount's counts from Redis as a dashboard would, with Jedis. A single-file program:
 *
 * <pre>java -cp JEDIS_AND_ITS_DEPENDENCIES examples/java/ReadCounts.java redis://127.0.0.1:6379 rc post:1:likes</pre>
 *
 * Prints one JSON object: the counter's total, its last hour of 1m windows before the job's watermark, its unique
 * users of the watermark's day, and the namespace's latest 1h window top-K list. See the README, "Reading the counts".
 */
public final class ReadCounts {
    public static void main(String[] args) {
        String url = args[0];
        String p = args[1];
        String c = args[2];
        try (UnifiedJedis r = RedisClient.create(java.net.URI.create(url))) {
            // the job's watermark (epoch ms); after a bounded run it is Long.MAX_VALUE: every window final
            String wm = r.get(p + ":meta:watermark");
            long end = wm == null || Long.parseLong(wm) == Long.MAX_VALUE ? System.currentTimeMillis() : Long.parseLong(wm);

            // the last hour of 1m windows: one MGET, every key of one counter is in one Redis Cluster slot ({C})
            long last = end / 60_000 * 60; // epoch seconds: keys name their window by its start in seconds
            List<String> keys = new ArrayList<>();
            for (int i = 59; i >= 0; i--) keys.add(p + ":{" + c + "}:1m:" + (last - 60L * i));
            List<String> sums = r.mget(keys.toArray(String[]::new));
            StringBuilder windows = new StringBuilder();
            for (int i = 0; i < 60; i++) {
                if (i > 0) windows.append(',');
                long start = (last - 60L * (59 - i)) * 1000;
                windows.append("{\"start\":").append(start).append(",\"sum\":").append(sums.get(i)).append('}');
            }

            // unique users of the watermark's day: PFCOUNT of the day's HyperLogLog
            String dayKey = p + ":{" + c + "}:u:1d:" + end / 86_400_000 * 86_400;
            String uniquesDay = r.exists(dayKey) ? Long.toString(r.pfcount(dayKey)) : "null";

            // the namespace's latest 1h window top-K: the newest top key at or before the watermark's hour
            String ns = c.contains(":") ? c.substring(0, c.indexOf(':')) : c;
            long hour = end / 3_600_000 * 3_600;
            StringBuilder top = new StringBuilder();
            for (long h = hour; h > hour - 5 * 3_600; h -= 3_600) {
                List<Tuple> items = r.zrevrangeWithScores(p + ":top:" + ns + ":1h:" + h, 0, 9);
                if (items.isEmpty()) continue;
                for (Tuple t : items) {
                    if (top.length() > 0) top.append(',');
                    top.append("{\"counter\":\"").append(t.getElement()).append("\",\"score\":").append(t.getScore()).append('}');
                }
                break;
            }
            String total = r.get(p + ":{" + c + "}:total");
            System.out.println("{\"counter\":\"" + c + "\",\"total\":" + total + ",\"windows\":[" + windows
                    + "],\"uniques_day\":" + uniquesDay + ",\"top\":[" + top + "]}");
        }
    }
}
