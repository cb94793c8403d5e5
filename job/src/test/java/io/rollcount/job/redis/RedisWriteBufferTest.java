package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.redis.internal.RedisWriteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Coalescing of buffered writes per key (the writes themselves are tested against Redis). */
class RedisWriteBufferTest {

    @Test
    void hasTagAgreesWithHashTag() {
        List<String> keys = List.of(
                "rc:{a}:total",
                "rc:{ab}:total",
                "rc:{a}b}:x",
                "rc:{}:x",
                "rc:x",
                "{a}",
                "{a",
                "rc:{a:b}:u:all",
                "rc:{a}:{b}",
                "x{a}y",
                "rc:{a}");
        for (String key : keys) {
            for (String tag : List.of("a", "ab", "a:b", "b", "a}b")) {
                assertThat(RedisWriteBuffer.hasTag(key, tag))
                        .as(key + " / " + tag)
                        .isEqualTo(tag.equals(RedisWriteBuffer.hashTag(key)));
            }
        }
    }

    @Test
    void coalescesPerKeyUsersIntoOneSetAndPutsMaxWritesLast() {
        RedisKeys keys = new RedisKeys("rc");
        RedisWriteBuffer buffer = new RedisWriteBuffer();
        buffer.add(RedisWrite.max(keys.watermark(), 5));
        for (String counter : List.of("a", "b", "a")) {
            String key = keys.total(counter);
            buffer.add(RedisWrite.count(
                    key,
                    keys.versionOf(counter, key),
                    1,
                    counter.equals("a") && buffer.keys() > 2 ? 2 : 1,
                    true,
                    RedisWrite.NO_WINDOW,
                    0));
            buffer.add(RedisWrite.users(
                    keys.uniquesAll(counter), new String[] {"u1", "u-" + buffer.keys()}, RedisWrite.NO_WINDOW, 0));
        }
        buffer.add(RedisWrite.max(keys.watermark(), 3));
        assertThat(buffer.keys()).isEqualTo(5);
        List<RedisWrite> out = buffer.drain();
        assertThat(out.stream().map(w -> w.key))
                .containsExactly("rc:{a}:total", "rc:{a}:u:all", "rc:{b}:total", "rc:{b}:u:all", "rc:meta:watermark");
        assertThat(out.get(1).users).containsExactlyInAnyOrder("u1", "u-2", "u-5");
        assertThat(out.get(0).version).isEqualTo(2);
        assertThat(out.get(4).value).isEqualTo(5);
        assertThat(buffer.isEmpty()).isTrue();
        assertThat(buffer.bytes()).isZero();
    }

    @Test
    void aKeyWrittenOnceKeepsItsUsersAndTheBytesCountTheSameEitherWay() {
        RedisWriteBuffer buffer = new RedisWriteBuffer();
        buffer.add(RedisWrite.users("rc:{a}:u:all", new String[] {"u1", "u22"}, RedisWrite.NO_WINDOW, 0));
        long once = buffer.bytes();
        assertThat(once).isEqualTo(2 + 16 + 3 + 16);
        buffer.add(RedisWrite.users("rc:{a}:u:all", new String[] {"u22", "u333"}, RedisWrite.NO_WINDOW, 0));
        assertThat(buffer.bytes()).isEqualTo(once + 4 + 16);
        assertThat(buffer.drain().get(0).users).containsExactlyInAnyOrder("u1", "u22", "u333");
        assertThat(buffer.takeCoalesced()).isEqualTo(1);

        // the next flush's map: the same rules, a key written once passes its users as they came
        String[] users = {"u9", "u8"};
        buffer.add(RedisWrite.users("rc:{b}:u:all", users, RedisWrite.NO_WINDOW, 0));
        buffer.add(RedisWrite.users("rc:{c}:u:all", new String[] {"u7"}, RedisWrite.NO_WINDOW, 0));
        buffer.add(RedisWrite.users("rc:{c}:u:all", new String[] {"u7"}, RedisWrite.NO_WINDOW, 0));
        assertThat(buffer.takeCoalesced()).isEqualTo(1);
        List<RedisWrite> out = buffer.drain();
        assertThat(out.get(0).users).containsExactly("u9", "u8");
        assertThat(out.get(1).users).containsExactly("u7");
        assertThat(buffer.bytes()).isZero();
    }

    @Test
    void aWriteThatRestoresAMissingKeyStaysOneThroughTheBuffer() {
        RedisWriteBuffer buffer = new RedisWriteBuffer();
        buffer.add(RedisWrite.count("rc:{a}:1m:60", "rc:{a}:_v:1m:60", 3, 3, true, 60_000, 1)
                .restoringMissing());
        assertThat(buffer.drain().get(0).restoresMissing).isTrue();
    }
}
