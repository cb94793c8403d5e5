package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** {@link RocksDbKeyOrder}: the order of the bytes Flink's RocksDB backend stores for String keys. */
class RocksDbKeyOrderTest {

    /** A key as the RocksDB backend's key bytes start: the key group (big-endian), then StringSerializer's bytes. */
    private static byte[] storedBytes(String key, int keyGroups) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(64);
        int group = KeyGroupRangeAssignment.assignToKeyGroup(key, keyGroups);
        if (keyGroups > 128) out.writeShort(group);
        else out.writeByte(group);
        StringSerializer.INSTANCE.serialize(key, out);
        return out.getCopyOfBuffer();
    }

    private static List<String> keys(int n, long seed) {
        Random random = new Random(seed);
        List<String> keys = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            // counter \0 event id, as deduplication's keys; lengths vary so both parts of the order matter
            keys.add("c" + random.nextInt(1_000) + '\u0000'
                    + Long.toString(random.nextLong() >>> random.nextInt(60), 36));
        }
        return keys;
    }

    /** Both ways of grouping: fewer keys than key groups (a sort of longs), and more (a counting sort). */
    @ParameterizedTest
    @CsvSource({"50, 128", "5000, 128", "300, 32768", "40000, 32768", "1, 128", "0, 128"})
    void ordersAsTheStoredBytes(int n, int keyGroups) throws Exception {
        List<String> keys = keys(n, n * 31L + keyGroups);
        String[] sorted = RocksDbKeyOrder.sorted(keys, keyGroups);

        List<String> expected = new ArrayList<>(keys);
        expected.sort((a, b) -> {
            try {
                return Arrays.compareUnsigned(storedBytes(a, keyGroups), storedBytes(b, keyGroups));
            } catch (Exception e) {
                throw new AssertionError(e);
            }
        });
        assertThat(sorted).containsExactlyElementsOf(expected);
    }

    @Test
    void keepsRepeatedKeys() {
        String[] sorted = RocksDbKeyOrder.sorted(List.of("b", "a", "b", "a"), 128);
        assertThat(sorted).hasSize(4).containsOnly("a", "b");
    }
}
