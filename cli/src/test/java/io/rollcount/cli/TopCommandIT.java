package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.support.RedisTestSupport;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code ./rollcount top} against the real Redis: lists with bars, and one-line errors. */
class TopCommandIT {

    @Test
    void printsTheTrendingListAndTheLatestWindowTopK() {
        try (RedisTestSupport redis = new RedisTestSupport()) {
            String p = redis.prefix;
            redis.jedis.zadd(p + ":trending:post", Map.of("post:1", 40.5, "post:2", 10.0));
            redis.jedis.set(p + ":_v:{" + p + ":trending:post}", "1764000004999");
            redis.jedis.zadd(p + ":top:post:1h:1763996400", Map.of("post:9", 3.0));
            redis.jedis.zadd(p + ":top:post:1h:1764000000", Map.of("post:1", 80.0, "post:2", 20.0));
            redis.jedis.set(p + ":meta:watermark", Long.toString(Long.MAX_VALUE));

            CliRun r = CliRun.run("top", "post", "--redis", redis.url(), "--redis.key-prefix", p);
            assertThat(r.code()).as(r.err()).isZero();
            assertThat(r.out())
                    .contains("trending in post at 2025-11-24 16:00:04Z")
                    .contains("post:1  ██████████████████████████████  40.5")
                    .contains("post:2  ███████▍")
                    .contains("10.0")
                    .contains("top 2 of post in the 1h window 2025-11-24 16:00:00Z .. 2025-11-24 17:00:00Z")
                    .contains("80")
                    .doesNotContain("post:9");

            CliRun unknown = CliRun.run("top", "nosuch", "--redis", redis.url(), "--redis.key-prefix", p);
            assertThat(unknown.code()).isEqualTo(1);
            assertThat(unknown.err().strip())
                    .startsWith("rollcount: no namespace 'nosuch'")
                    .doesNotContain("\n");
        }
    }

    @Test
    void anUnreachableRedisIsOneLine() {
        CliRun r = CliRun.run("top", "post", "--redis", "redis://127.0.0.1:1");
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err().strip())
                .startsWith("rollcount: cannot reach Redis at redis://127.0.0.1:1")
                .doesNotContain("\n");
    }
}
