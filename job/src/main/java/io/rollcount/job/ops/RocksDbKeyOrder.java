package io.rollcount.job.ops;

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/**
 * The order in which Flink's RocksDB backend stores the state of {@code String} keys: key group first (the key's
 * leading bytes), then {@code StringSerializer}'s bytes, that is length, then characters (exact for keys of ASCII
 * characters shorter than 127; other keys come in an order as good as any, which only costs speed). Reads or
 * writes in this order touch RocksDB's blocks and memtable next to each other.
 */
final class RocksDbKeyOrder {
    /** The order of {@code StringSerializer}'s bytes: length, then characters. */
    static final Comparator<String> SERIALIZED_ORDER = (a, b) -> {
        int c = Integer.compare(a.length(), b.length());
        return c != 0 ? c : a.compareTo(b);
    };

    private RocksDbKeyOrder() {}

    /**
     * The keys in RocksDB's order for a job of {@code keyGroups} key groups: a sort of primitive longs (key group
     * above the position), then {@link #SERIALIZED_ORDER} within each key group.
     */
    static String[] sorted(List<String> keys, int keyGroups) {
        int n = keys.size();
        long[] order = new long[n];
        for (int i = 0; i < n; i++) {
            long group = KeyGroupRangeAssignment.assignToKeyGroup(keys.get(i), keyGroups);
            order[i] = group << 32 | i;
        }
        Arrays.sort(order);
        String[] sorted = new String[n];
        int from = 0;
        for (int i = 0; i < n; i++) {
            sorted[i] = keys.get((int) order[i]);
            if (i + 1 == n || order[i + 1] >>> 32 != order[i] >>> 32) {
                Arrays.sort(sorted, from, i + 1, SERIALIZED_ORDER);
                from = i + 1;
            }
        }
        return sorted;
    }
}
