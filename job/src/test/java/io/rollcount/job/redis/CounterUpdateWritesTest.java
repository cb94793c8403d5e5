package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.Resolution;
import org.junit.jupiter.api.Test;

class CounterUpdateWritesTest {
    private static final long START = 1_764_000_000_000L;

    private final CounterUpdateWrites writes = new CounterUpdateWrites(new RedisKeys("rc"));

    @Test
    void aCountIsItsKeyWithTheVersionKeyOfTheContract() {
        RedisWrite total = writes.map(CounterUpdate.total("post:1", 7, 3, false));
        assertThat(total.key).isEqualTo("rc:{post:1}:total");
        assertThat(total.versionKey()).isEqualTo("rc:{post:1}:_v:total");
        assertThat(total.monotone).isTrue();

        RedisWrite window = writes.map(CounterUpdate.window("post:1", Resolution.M5, START, -2, 4, true, START + 9));
        assertThat(window.key).isEqualTo("rc:{post:1}:5m:1764000000");
        assertThat(window.versionKey()).isEqualTo("rc:{post:1}:_v:5m:1764000000");
        assertThat(window.monotone).isFalse();
        assertThat(window.expireAtMillis).isEqualTo(START + 9);
        // the same write as one given its version key
        assertThat(window)
                .isEqualTo(RedisWrite.count(
                        "rc:{post:1}:5m:1764000000", "rc:{post:1}:_v:5m:1764000000", -2, 4, false, START, START + 9));
    }

    @Test
    void aCounterIdWithBracesAndColonsKeepsItsVersionKeyAfterItsBase() {
        // the base is the counter's {C}: however the id looks, "_v:" goes in after it
        RedisWrite w = writes.map(CounterUpdate.window("a}:b{:c", Resolution.H1, START, 5, 1, false, START + 1));
        assertThat(w.key).isEqualTo("rc:{a}:b{:c}:1h:1764000000");
        assertThat(w.versionKey()).isEqualTo("rc:{a}:b{:c}:_v:1h:1764000000");
        assertThat(w.versionKey()).isEqualTo(new RedisKeys("rc").versionOf("a}:b{:c", w.key));
    }

    @Test
    void usersAndSketchesGoToTheUniquesKeysAndHaveNoVersionKey() {
        RedisWrite all = writes.map(CounterUpdate.allTimeUsers("post:1", new String[] {"u1"}));
        assertThat(all.key).isEqualTo("rc:{post:1}:u:all");
        assertThat(all.versionKey()).isNull();
        RedisWrite hour = writes.map(CounterUpdate.windowUsers("post:1", Resolution.H1, START, new String[] {"u1"}, 9));
        assertThat(hour.key).isEqualTo("rc:{post:1}:u:1h:1764000000");
        assertThat(hour.versionKey()).isNull();
        // another counter, then back: each key of its own counter
        RedisWrite other = writes.map(CounterUpdate.sketch("post:2", Resolution.D1, START, new byte[] {1}, 9));
        assertThat(other.key).isEqualTo("rc:{post:2}:u:1d:1764000000");
        RedisWrite again = writes.map(CounterUpdate.windowUsers("post:1", Resolution.D1, START, new String[] {"u"}, 9));
        assertThat(again.key).isEqualTo(new RedisKeys("rc").uniques("post:1", Resolution.D1, START));
    }

    @Test
    void aBaseOutsideItsKeyIsRefused() {
        assertThatThrownBy(() -> RedisWrite.counterCount("rc:{a}:total", 0, 1, 1, true, RedisWrite.NO_WINDOW, 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("base length 0");
        assertThatThrownBy(() -> RedisWrite.counterCount("rc:{a}:total", 13, 1, 1, true, RedisWrite.NO_WINDOW, 0))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
