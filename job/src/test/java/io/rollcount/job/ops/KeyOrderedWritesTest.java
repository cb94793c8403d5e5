package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.junit.jupiter.api.Test;

/** {@link KeyOrderedWrites}: the latest value per key, written in key group, length and key order. */
class KeyOrderedWritesTest {
    private static final int MAX_PARALLELISM = 128;

    private static List<String> writeOut(KeyOrderedWrites w) throws Exception {
        List<String> written = new ArrayList<>();
        w.writeTo((key, value) -> written.add(key + "=" + value));
        return written;
    }

    @Test
    void holdsTheLatestValueOfEachKey() throws Exception {
        var w = new KeyOrderedWrites(4, MAX_PARALLELISM);
        assertThat(w.get("a")).isNull();
        w.put("a", 1);
        w.put("b", 2);
        w.put("a", 3);
        assertThat(w.get("a")).isEqualTo(3L);
        assertThat(w.get("b")).isEqualTo(2L);
        assertThat(w.size()).isEqualTo(2);
        assertThat(writeOut(w)).containsExactlyInAnyOrder("a=3", "b=2");
        assertThat(w.size()).isZero();
        assertThat(w.get("a")).as("written out").isNull();
    }

    @Test
    void writesInKeyGroupThenLengthThenKeyOrder() throws Exception {
        var w = new KeyOrderedWrites(1_000, MAX_PARALLELISM);
        List<String> keys = new ArrayList<>();
        for (int i = 999; i >= 0; i--) {
            String key = "counter-" + (i % 37) + "\u0000" + Integer.toHexString(i * 7919);
            keys.add(key);
            w.put(key, i);
        }
        List<String> written = new ArrayList<>();
        w.writeTo((key, value) -> written.add(key));
        keys.sort((x, y) -> {
            int gx = KeyGroupRangeAssignment.assignToKeyGroup(x, MAX_PARALLELISM);
            int gy = KeyGroupRangeAssignment.assignToKeyGroup(y, MAX_PARALLELISM);
            if (gx != gy) return Integer.compare(gx, gy);
            if (x.length() != y.length()) return Integer.compare(x.length(), y.length());
            return x.compareTo(y);
        });
        assertThat(written).containsExactlyElementsOf(keys);
    }

    @Test
    void aFullBufferTakesNoNewKeyButUpdatesAHeldOne() throws Exception {
        var w = new KeyOrderedWrites(2, MAX_PARALLELISM);
        w.put("a", 1);
        w.put("b", 2);
        assertThat(w.isFull()).isTrue();
        w.put("b", 5);
        assertThatThrownBy(() -> w.put("c", 3)).isInstanceOf(IllegalStateException.class);
        assertThat(writeOut(w)).containsExactlyInAnyOrder("a=1", "b=5");
        w.put("c", 3);
        assertThat(writeOut(w)).containsExactly("c=3");
    }
}
