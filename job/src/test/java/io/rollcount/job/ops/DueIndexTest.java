package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.apache.flink.api.common.typeutils.base.StringSerializer;
import org.apache.flink.runtime.state.CompositeKeySerializationUtils;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.SerializedCompositeKeyBuilder;
import org.junit.jupiter.api.Test;

class DueIndexTest {

    @Test
    void idsDueTogetherComeInTheOrderOfTheirRocksDbKeys() {
        for (int keyGroups : new int[] {128, 4096}) {
            Random random = new Random(keyGroups);
            ArrayList<String> ids = new ArrayList<>();
            for (int i = 0; i < 20_000; i++) ids.add(randomId(random));
            String[] expected = ids.toArray(String[]::new);
            Arrays.sort(expected, (a, b) -> Arrays.compareUnsigned(rocksDbKey(a, keyGroups), rocksDbKey(b, keyGroups)));

            DueIndex due = new DueIndex(keyGroups);
            for (String id : ids) due.add(60_000, id);
            due.add(120_000, "later");
            List<String> polled = new ArrayList<>();
            DueIndex.Entry e;
            while ((e = due.pollDue(60_000)) != null) {
                assertThat(e.at()).isEqualTo(60_000);
                polled.add(e.id());
            }
            assertThat(polled).as("%d key groups", keyGroups).containsExactly(expected);
            assertThat(due.size()).isEqualTo(1);
            assertThat(due.pollDue(120_000).id()).isEqualTo("later");
            assertThat(due.pollDue(Long.MAX_VALUE)).isNull();
        }
    }

    @Test
    void dueTimesComeEarliestFirstAndOnlyWhenTheWatermarkReachesThem() {
        DueIndex due = new DueIndex(128);
        due.add(300, "c");
        due.add(100, "a");
        due.add(200, "b");
        assertThat(due.pollDue(99)).isNull();
        assertThat(due.pollDue(250)).isEqualTo(new DueIndex.Entry(100, "a"));
        assertThat(due.pollDue(250)).isEqualTo(new DueIndex.Entry(200, "b"));
        assertThat(due.pollDue(250)).isNull();
        assertThat(due.size()).isEqualTo(1);
    }

    /** Counter ids as users make them: ASCII of several lengths, digits and separators. */
    private static String randomId(Random random) {
        String alphabet = "abcdefghijklmnopqrstuvwxyz0123456789:_-.";
        int length = 1 + random.nextInt(30);
        StringBuilder b = new StringBuilder(length);
        for (int i = 0; i < length; i++) b.append(alphabet.charAt(random.nextInt(alphabet.length())));
        return b.toString();
    }

    /** The bytes that lead a keyed state's RocksDB key: key group, then the serialized key. */
    private static byte[] rocksDbKey(String id, int keyGroups) {
        int prefixBytes = CompositeKeySerializationUtils.computeRequiredBytesInKeyGroupPrefix(keyGroups);
        SerializedCompositeKeyBuilder<String> builder =
                new SerializedCompositeKeyBuilder<>(StringSerializer.INSTANCE, prefixBytes, 32);
        try {
            builder.setKeyAndKeyGroup(id, KeyGroupRangeAssignment.assignToKeyGroup(id, keyGroups));
            return builder.build();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
