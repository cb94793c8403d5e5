package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.junit.jupiter.api.Test;

/** {@link KeyGroupKeys}: one key per key group of the range, assigned to it by Flink, the same in every run. */
class KeyGroupKeysTest {
    @Test
    void eachKeyGroupOfTheRangeHasItsOwnKeyTheSameInEveryRun() {
        for (int maxParallelism : new int[] {3, 128, 4096}) {
            KeyGroupRange range = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(maxParallelism, 3, 1);
            KeyGroupKeys keys = new KeyGroupKeys("\u0002", range, maxParallelism);
            KeyGroupKeys again = new KeyGroupKeys("\u0002", range, maxParallelism);
            Set<String> seen = new HashSet<>();
            for (int group : range) {
                String key = keys.of(group);
                assertThat(KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism))
                        .isEqualTo(group);
                assertThat(key).startsWith("\u0002").isEqualTo(again.of(group));
                assertThat(seen.add(key)).isTrue();
            }
        }
    }

    @Test
    void aRescaledRangeFindsTheSameKeyForAKeyGroup() {
        KeyGroupRange whole = KeyGroupRange.of(0, 127);
        KeyGroupRange half = KeyGroupRange.of(64, 127);
        KeyGroupKeys all = new KeyGroupKeys("\u0002", whole, 128);
        KeyGroupKeys part = new KeyGroupKeys("\u0002", half, 128);
        for (int group : half) assertThat(part.of(group)).isEqualTo(all.of(group));
    }
}
