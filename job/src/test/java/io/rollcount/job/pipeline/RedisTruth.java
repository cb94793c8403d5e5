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
 * to the ground truth (with its expiry), every unique-users key counting as a PFADD-built one (and the hours
 * of a day merging to the day), the final watermark, and no other key but bookkeeping and namespace lists.
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
        for (String key : redis.keys()) {
            if (bookkeeping.matcher(key).matches() || key.equals(redis.prefix + ":meta:watermark")) continue;
            // Trending and window top-K sorted sets: checked by TrendingIT.
            if (key.startsWith(redis.prefix + ":top:") || key.startsWith(redis.prefix + ":trending:")) continue;
            if (uniques.containsKey(key)) {
                // Byte compatibility through the whole job: Redis counts our sketch exactly as a PFADD-built one.
                String scratch = redis.prefix + ":_scratch";
                redis.jedis.del(scratch);
                redis.jedis.pfadd(scratch, uniques.get(key).toArray(String[]::new));
                assertThat(redis.jedis.pfcount(key)).as("PFCOUNT " + key).isEqualTo(redis.jedis.pfcount(scratch));
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
        assertThat(redis.jedis.get(redis.prefix + ":meta:watermark")).as("the watermark after the end of input: every window final")
                .isEqualTo(Long.toString(Long.MAX_VALUE));
        assertThat(unexpected.size()).as("keys that should not exist, e.g. " + first(unexpected)).isZero();
        assertThat(uniquesSeen).as("every uniques key exists").isEqualTo(uniques.size());
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
            assertThat(redis.jedis.pfcount(scratch)).as("PFMERGE of the hours of " + daily).isEqualTo(redis.jedis.pfcount(daily));
            redis.jedis.del(scratch);
            merged++;
        }
        assertThat(merged).isPositive();
        Map<String, String> wrong = new HashMap<>();
        expected.forEach((k, v) -> {
            if (!v.equals(actual.get(k))) wrong.put(k, "expected " + v + " got " + actual.get(k));
        });
        assertThat(wrong.size()).as("keys with a wrong value (of " + expected.size() + "), e.g. " + first(wrong.entrySet())).isZero();
        // Window keys expire per resolution; totals never.
        String someTotal = expected.keySet().stream().filter(k -> k.endsWith(":total")).findFirst().orElseThrow();
        assertThat(redis.jedis.pttl(someTotal)).isEqualTo(-1L);
        for (Resolution r : Resolution.all()) {
            String k = expected.keySet().stream().filter(key -> key.contains("}:" + r.label + ":")).findFirst().orElseThrow();
            assertThat(redis.jedis.pttl(k)).as("ttl of " + k).isBetween(r.ttlMillis - 600_000, r.ttlMillis);
        }
    }

    static String first(java.util.Collection<?> items) {
        return items.stream().limit(10).map(String::valueOf).toList().toString();
    }
}
