package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Grouping of buffered writes into script calls (the writes themselves are tested against Redis). */
class RedisWriteBufferTest {

    @Test
    void hasTagAgreesWithHashTag() {
        List<String> keys = List.of("rc:{a}:total", "rc:{ab}:total", "rc:{a}b}:x", "rc:{}:x", "rc:x", "{a}", "{a", "rc:{a:b}:u:all",
                "rc:{a}:{b}", "x{a}y", "rc:{a}");
        for (String key : keys) {
            for (String tag : List.of("a", "ab", "a:b", "b", "a}b")) {
                assertThat(RedisWriteBuffer.hasTag(key, tag)).as(key + " / " + tag).isEqualTo(tag.equals(RedisWriteBuffer.hashTag(key)));
            }
        }
    }

    @Test
    void oneCallPerCounterWhateverTheOrderOfItsKeys() {
        RedisKeys keys = new RedisKeys("rc");
        RedisWriteBuffer buffer = new RedisWriteBuffer("rc");
        List<String> order = new ArrayList<>();
        for (String counter : List.of("a", "b", "a", "c", "b")) {
            String key = keys.window(counter, io.rollcount.job.model.Resolution.M1, order.size() * 60_000L);
            order.add(key);
            buffer.add(RedisWrite.count(key, keys.versionOf(counter, key), 1, 1, true, 0));
            buffer.add(RedisWrite.growingHll(keys.uniquesAll(counter), new io.rollcount.sketches.RedisHyperLogLog().toRedisBytes(), 0));
        }
        List<RedisApplyScript.Call> calls = buffer.drain(1000);
        assertThat(calls).hasSize(3);
        assertThat(calls.stream().map(c -> c.firstKey)).containsExactly("rc:{a}:1m:0", "rc:{b}:1m:60", "rc:{c}:1m:180");
        assertThat(calls.stream().map(c -> c.writes)).containsExactly(3, 3, 2);
        // the scratch key of a counter's HLL merges is its own
        for (RedisApplyScript.Call c : calls) {
            String tag = RedisWriteBuffer.hashTag(c.firstKey);
            assertThat(c.keys.stream().map(String::new)).contains("rc:{" + tag + "}:_tmp");
        }
    }
}
