package io.rollcount.job.redis.internal;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class LongHashSetTest {

    @Test
    void agreesWithAHashSetThroughGrowthIncludingZeroAndEqualLowBits() {
        LongHashSet set = new LongHashSet(1);
        HashSet<Long> expected = new HashSet<>();
        SplittableRandom random = new SplittableRandom(42);
        for (int i = 0; i < 50_000; i++) {
            // a third share their low 32 bits (what a user of the set may keep constant), some repeat, some are 0
            long h = switch (i % 3) {
                case 0 -> random.nextLong();
                case 1 -> (random.nextLong(1_000) << 32) | 0xBEEFL;
                default -> random.nextLong(2_000) - 1_000;
            };
            assertThat(set.add(h)).isEqualTo(expected.add(h));
        }
        assertThat(set.size()).isEqualTo(expected.size());
        for (long h : expected) assertThat(set.contains(h)).isTrue();
        for (int i = 0; i < 10_000; i++) {
            long h = random.nextLong();
            assertThat(set.contains(h)).isEqualTo(expected.contains(h));
        }
        assertThat(set.contains(0)).isTrue();
        assertThat(set.add(0)).isFalse();
    }
}
