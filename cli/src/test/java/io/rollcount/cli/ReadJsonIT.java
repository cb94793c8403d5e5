package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.rollcount.job.support.RedisTestSupport;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code query --json} and {@code top --json} against the real Redis: one JSON object each, as documented. */
class ReadJsonIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    /** 2025-11-24 16:00:00Z, an hour's start. */
    private static final long HOUR = 1_764_000_000_000L;

    @Test
    void queryPrintsTheSeriesTotalAndUniquesAsOneObject() throws Exception {
        try (RedisTestSupport redis = new RedisTestSupport()) {
            String p = redis.prefix;
            redis.jedis.set(p + ":{post:1:likes}:total", "42");
            redis.jedis.set(p + ":{post:1:likes}:1m:" + (HOUR / 1000 + 60), "5");
            redis.jedis.set(p + ":{post:1:likes}:1m:" + (HOUR / 1000 + 180), "7");
            redis.jedis.pfadd(p + ":{post:1:likes}:u:all", "ann", "bob", "cy");
            redis.jedis.pfadd(p + ":{post:1:likes}:u:1h:" + HOUR / 1000, "ann", "bob");
            redis.jedis.set(p + ":meta:watermark", Long.toString(HOUR + 4 * 60_000 + 30_000));

            CliRun r = CliRun.run(
                    "query", "post:1:likes", "--last", "5m", "--json", "--redis", redis.url(), "--redis.key-prefix", p);
            assertThat(r.code()).as(r.err()).isZero();
            assertThat(r.out().strip()).doesNotContain("\n");
            JsonNode q = JSON.readTree(r.out());
            assertThat(q.path("counter").asText()).isEqualTo("post:1:likes");
            assertThat(q.path("prefix").asText()).isEqualTo(p);
            assertThat(q.path("total").asLong()).isEqualTo(42);
            assertThat(q.path("res").asText()).isEqualTo("1m");
            assertThat(q.path("watermark").asLong()).isEqualTo(HOUR + 270_000);
            JsonNode w = q.path("windows");
            assertThat(w).hasSize(5);
            assertThat(w.get(0).path("start").asLong()).isEqualTo(HOUR);
            assertThat(w.get(0).path("end").asLong()).isEqualTo(HOUR + 60_000);
            assertThat(w.get(0).path("sum").isNull())
                    .as("a missing key is null, not 0")
                    .isTrue();
            assertThat(w.get(1).path("sum").asLong()).isEqualTo(5);
            assertThat(w.get(3).path("sum").asLong()).isEqualTo(7);
            assertThat(q.path("uniques").path("all").asLong()).isEqualTo(3);
            assertThat(q.path("uniques").path("hour").asLong()).isEqualTo(2);
            assertThat(q.path("uniques").path("day").isNull()).isTrue();
        }
    }

    @Test
    void topPrintsTheTrendingListAndTheLatestWindowTopKAsOneObject() throws Exception {
        try (RedisTestSupport redis = new RedisTestSupport()) {
            String p = redis.prefix;
            redis.jedis.zadd(p + ":trending:post", Map.of("post:1", 40.5, "post:2", 10.0));
            redis.jedis.set(p + ":_v:{" + p + ":trending:post}", "1764000004999");
            redis.jedis.zadd(p + ":top:post:1h:" + HOUR / 1000, Map.of("post:1", 80.0, "post:2", 20.0));
            redis.jedis.set(p + ":meta:watermark", Long.toString(Long.MAX_VALUE));

            CliRun r = CliRun.run("top", "post", "--json", "--redis", redis.url(), "--redis.key-prefix", p);
            assertThat(r.code()).as(r.err()).isZero();
            JsonNode t = JSON.readTree(r.out());
            assertThat(t.path("ns").asText()).isEqualTo("post");
            assertThat(t.path("trending").path("at").asLong()).isEqualTo(1_764_000_004_999L);
            assertThat(t.path("trending").path("items").get(0).path("counter").asText())
                    .isEqualTo("post:1");
            assertThat(t.path("trending").path("items").get(0).path("score").asDouble())
                    .isEqualTo(40.5);
            assertThat(t.path("window").path("res").asText()).isEqualTo("1h");
            assertThat(t.path("window").path("start").asLong()).isEqualTo(HOUR);
            assertThat(t.path("window").path("end").asLong()).isEqualTo(HOUR + 3_600_000);
            assertThat(t.path("window").path("items")).hasSize(2);
            assertThat(t.path("window").path("items").get(1).path("counter").asText())
                    .isEqualTo("post:2");
            assertThat(t.path("window").path("items").get(1).path("score").asDouble())
                    .isEqualTo(20.0);
        }
    }
}
