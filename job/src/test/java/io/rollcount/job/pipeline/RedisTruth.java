package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Resolution;
import io.rollcount.job.support.RedisTestSupport;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * What a finished bounded run must leave in Redis, whatever its source: every total and window sum equal
 * to the ground truth, every unique-users key byte for byte what PFADD of its true users builds (and the
 * hours of a day merging to the day), every window key (sums, version keys, uniques, top lists) expiring
 * exactly at its window's end plus retention and every other contract key never, the final watermark, and
 * no other key but bookkeeping and namespace lists.
 */
final class RedisTruth {
    private RedisTruth() {}

    static void assertEquals(RedisTestSupport redis, GroundTruth truth) {
        Map<String, Long> expected = truth.redisKeys(redis.prefix);
        Pattern bookkeeping = Pattern.compile(Pattern.quote(redis.prefix) + ":(\\{[^}]*\\}:)?_.*");
        Map<String, Long> actual = new HashMap<>();
        List<String> unexpected = new ArrayList<>();
        Map<String, java.util.Set<String>> uniques = truth.uniquesKeys(redis.prefix);
        int uniquesSeen = 0;
        List<String> uniquesDiffering = new ArrayList<>();
        List<String> wrongExpiry = new ArrayList<>();
        int windowKeys = 0;
        for (String key : redis.keys()) {
            // Expiry is a function of the window: its end plus the retention, exactly; keys of no window never expire.
            long expiry = expiryOf(key);
            if (expiry != Long.MIN_VALUE) {
                long at = redis.jedis.pexpireTime(key);
                if (at != expiry) wrongExpiry.add(key + " expires at " + at + ", expected " + expiry);
                if (expiry > 0) windowKeys++;
            }
            if (bookkeeping.matcher(key).matches() || key.startsWith(redis.prefix + ":meta:")) continue;
            // Trending and window top-K sorted sets: checked by TrendingIT.
            if (key.startsWith(redis.prefix + ":top:") || key.startsWith(redis.prefix + ":trending:")) continue;
            if (uniques.containsKey(key)) {
                // Byte for byte what PFADD of the key's true users builds.
                String scratch = redis.prefix + ":_scratch";
                redis.jedis.del(scratch);
                redis.jedis.pfadd(scratch, uniques.get(key).toArray(String[]::new));
                if (!samePfaddBytes(redis.jedis, key, scratch)) uniquesDiffering.add(key);
                redis.jedis.del(scratch);
                uniquesSeen++;
                continue;
            }
            if (!expected.containsKey(key)) {
                unexpected.add(key);
                continue;
            }
            actual.put(key, Long.parseLong(redis.jedis.get(key)));
        }
        assertThat(redis.jedis.get(redis.prefix + ":meta:watermark"))
                .as("the watermark after the end of input: every window final")
                .isEqualTo(Long.toString(Long.MAX_VALUE));
        assertThat(unexpected.size())
                .as("keys that should not exist, e.g. " + first(unexpected))
                .isZero();
        assertThat(uniquesSeen).as("every uniques key exists").isEqualTo(uniques.size());
        assertThat(uniquesDiffering)
                .as("uniques keys (of " + uniquesSeen + ") not byte for byte what PFADD of their users builds")
                .isEmpty();
        assertThat(wrongExpiry)
                .as("keys with a wrong expiry, of " + windowKeys + " window keys")
                .isEmpty();
        assertThat(windowKeys).isGreaterThan(expected.size() / 2);
        // PFMERGE of a day's hourly keys counts as the daily key does.
        int merged = 0;
        for (String daily : uniques.keySet()) {
            if (!daily.contains("}:u:1d:") || merged >= 50) continue;
            String base = daily.substring(0, daily.indexOf("u:1d:"));
            long dayStart = Long.parseLong(daily.substring(daily.lastIndexOf(':') + 1));
            List<String> hourly = new ArrayList<>();
            for (int h = 0; h < 24; h++) {
                String k = base + "u:1h:" + (dayStart + h * 3600L);
                if (redis.jedis.exists(k)) hourly.add(k);
            }
            String scratch = redis.prefix + ":_merged";
            redis.jedis.del(scratch);
            redis.jedis.pfmerge(scratch, hourly.toArray(String[]::new));
            assertThat(redis.jedis.pfcount(scratch))
                    .as("PFMERGE of the hours of " + daily)
                    .isEqualTo(redis.jedis.pfcount(daily));
            redis.jedis.del(scratch);
            merged++;
        }
        assertThat(merged).isPositive();
        Map<String, String> wrong = new HashMap<>();
        expected.forEach((k, v) -> {
            if (!v.equals(actual.get(k))) wrong.put(k, "expected " + v + " got " + actual.get(k));
        });
        assertThat(wrong.size())
                .as("keys with a wrong value (of " + expected.size() + "), e.g. " + first(wrong.entrySet()))
                .isZero();
    }

    /**
     * Whether the HyperLogLog at {@code key} is byte for byte the one at {@code reference}. PFCOUNT, a read,
     * caches the count it computed in bytes 8..15 of the header (and clears the "stale" bit PFADD sets), so
     * a key a reader counted (a test's poller, a dashboard) differs there from a reference nobody counted:
     * where only those bytes differ, both are counted once and compared again, whole.
     */
    static boolean samePfaddBytes(redis.clients.jedis.Jedis j, String key, String reference) {
        byte[] ref = j.get(reference.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        byte[] value = j.get(key.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        if (java.util.Arrays.equals(ref, value)) return true;
        if (ref == null || value == null || ref.length != value.length || ref.length < 16) return false;
        if (!java.util.Arrays.equals(ref, 0, 8, value, 0, 8)
                || !java.util.Arrays.equals(ref, 16, ref.length, value, 16, value.length)) {
            return false;
        }
        j.pfcount(key);
        j.pfcount(reference);
        return java.util.Arrays.equals(
                j.get(reference.getBytes(java.nio.charset.StandardCharsets.UTF_8)),
                j.get(key.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
    }

    /**
     * When a key must expire (epoch ms): a window key ({@code ...:<res>:<start seconds>}: a sum, its version
     * key, a uniques key, a top list and its version key) at the window's end plus its retention; a key of no
     * window of the contract (a total, {@code u:all}, the watermark, the mark) never (-1);
     * {@code Long.MIN_VALUE} for keys that expire by their own rule (lease, per-writer watermarks, trending
     * lists a week after their last write).
     */
    static long expiryOf(String key) {
        // a sorted set's version key names its sorted set as its hash tag ({@code P:_v:{P:top:...}}): it expires with
        // it
        int tag = key.indexOf(":_v:{");
        if (tag >= 0 && key.endsWith("}")) return expiryOf(key.substring(tag + 5, key.length() - 1));
        int last = key.lastIndexOf(':');
        int before = key.lastIndexOf(':', last - 1);
        String label = key.substring(before + 1, last);
        String start = key.substring(last + 1);
        for (Resolution r : Resolution.all()) {
            if (r.label.equals(label) && start.matches("-?\\d+")) return r.expireAtMillis(Long.parseLong(start) * 1000);
        }
        if (key.contains(":_lease") || key.contains(":_wm:") || key.contains(":_job") || key.contains(":trending:"))
            return Long.MIN_VALUE;
        return -1;
    }

    static String first(java.util.Collection<?> items) {
        return items.stream().limit(10).map(String::valueOf).toList().toString();
    }
}
