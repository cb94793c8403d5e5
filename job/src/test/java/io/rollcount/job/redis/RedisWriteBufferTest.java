package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.redis.internal.RedisWriteBuffer;
import io.rollcount.sketches.RedisHyperLogLog;
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
    void sketchesOfOneKeyGoOutAsOneOfEveryRegistersLargestValue() {
        RedisHyperLogLog day1 = new RedisHyperLogLog();
        RedisHyperLogLog day2 = new RedisHyperLogLog();
        RedisHyperLogLog both = new RedisHyperLogLog();
        for (int i = 0; i < 3_000; i++) {
            (i % 2 == 0 ? day1 : day2).add("u" + i);
            both.add("u" + i);
        }
        RedisWriteBuffer buffer = new RedisWriteBuffer();
        buffer.add(RedisWrite.sketch("rc:{a}:u:all", day1.toRedisBytes(), RedisWrite.NO_WINDOW, 0));
        buffer.add(RedisWrite.users("rc:{a}:u:all", new String[] {"u1"}, RedisWrite.NO_WINDOW, 0));
        buffer.add(RedisWrite.sketch("rc:{a}:u:all", day2.toRedisBytes(), RedisWrite.NO_WINDOW, 0));
        long bytes = buffer.bytes();
        List<RedisWrite> out = buffer.drain();
        assertThat(out).hasSize(2);
        RedisWrite sketch = out.stream()
                .filter(w -> w.kind == RedisWrite.SKETCH)
                .findFirst()
                .orElseThrow();
        RedisHyperLogLog merged = RedisHyperLogLog.fromRedisBytes(sketch.sketch);
        for (int r = 0; r < RedisHyperLogLog.REGISTERS; r++) {
            assertThat(merged.register(r)).as("register " + r).isEqualTo(both.register(r));
        }
        assertThat(sketch.windowStart).isEqualTo(RedisWrite.NO_WINDOW);
        assertThat(sketch.expireAtMillis).isZero();
        assertThat(bytes).isEqualTo(2 + 16 + sketch.sketch.length);
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

    @Test
    void usersOfOneRedisHyperLogLogHashGoOutOnceAndHashesGivenOrNotAgree() {
        // two users whose hashes are equal set the same register of Redis's HyperLogLog: one of them is sent
        RedisWriteBuffer buffer = new RedisWriteBuffer();
        buffer.add(RedisWrite.users("rc:{a}:u:all", new String[] {"u1", "u2"}, RedisWrite.NO_WINDOW, 0)
                .withUserHashes(new long[] {7, 9}));
        buffer.add(RedisWrite.users("rc:{a}:u:all", new String[] {"u3", "u2", "u4"}, RedisWrite.NO_WINDOW, 0)
                .withUserHashes(new long[] {7, 9, 0}));
        assertThat(buffer.drain().get(0).users).containsExactly("u1", "u2", "u4");

        // without hashes the buffer hashes as Redis does: the same users go out as with Redis's hashes given
        String[] first = {"alice", "bob"};
        String[] second = {"bob", "carol", "alice", "dave"};
        buffer.add(RedisWrite.users("rc:{b}:u:all", first, RedisWrite.NO_WINDOW, 0));
        buffer.add(RedisWrite.users("rc:{b}:u:all", second, RedisWrite.NO_WINDOW, 0));
        buffer.add(
                RedisWrite.users("rc:{c}:u:all", first, RedisWrite.NO_WINDOW, 0).withUserHashes(redisHashes(first)));
        buffer.add(RedisWrite.users("rc:{c}:u:all", second, RedisWrite.NO_WINDOW, 0)
                .withUserHashes(redisHashes(second)));
        List<RedisWrite> out = buffer.drain();
        assertThat(out.get(0).users).containsExactly("alice", "bob", "carol", "dave");
        assertThat(out.get(1).users).containsExactly(out.get(0).users);

        // hashes that do not match the users one for one are refused, not trusted
        assertThatThrownBy(() -> buffer.add(RedisWrite.users("rc:{d}:u:all", first, RedisWrite.NO_WINDOW, 0)
                        .withUserHashes(new long[] {1})))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("USERS write with 2 users but 1 hashes for key rc:{d}:u:all");
    }

    @Test
    void writesAreHeldAsTheyCameAndACoalescedUsersKeyGoesOutAsANewWrite() {
        RedisWriteBuffer buffer = new RedisWriteBuffer();
        RedisWrite count = RedisWrite.count("rc:{a}:total", "rc:{a}:_v:total", 3, 3, true, RedisWrite.NO_WINDOW, 0);
        RedisWrite once = RedisWrite.users("rc:{a}:u:all", new String[] {"u1"}, RedisWrite.NO_WINDOW, 0);
        String[] firstUsers = {"u1", "u2"};
        RedisWrite first = RedisWrite.users("rc:{b}:u:1h:0", firstUsers, 0, 3_600_000);
        RedisWrite second = RedisWrite.users("rc:{b}:u:1h:0", new String[] {"u3"}, 0, 3_600_000);
        for (RedisWrite w : List.of(count, once, first, second)) buffer.add(w);
        List<RedisWrite> out = buffer.drain();
        assertThat(out.get(0)).isSameAs(count);
        assertThat(out.get(1)).isSameAs(once);
        RedisWrite merged = out.get(2);
        assertThat(merged).isNotSameAs(first).isNotSameAs(second);
        assertThat(merged.users).containsExactly("u1", "u2", "u3");
        assertThat(merged.windowStart).isZero();
        assertThat(merged.expireAtMillis).isEqualTo(3_600_000);
        assertThat(first.users).isSameAs(firstUsers).containsExactly("u1", "u2");
    }

    private static long[] redisHashes(String[] users) {
        long[] out = new long[users.length];
        for (int i = 0; i < users.length; i++) out[i] = RedisHyperLogLog.hash(users[i]);
        return out;
    }
}
