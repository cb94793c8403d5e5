package io.rollcount.job.ops;

import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.function.Function;
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

    /** The keys in RocksDB's order for a job of {@code keyGroups} key groups (see {@link #sorted(Object[], int, Function, int)}). */
    static String[] sorted(List<String> keys, int keyGroups) {
        String[] all = keys.toArray(new String[0]);
        return sorted(all, all.length, Function.identity(), keyGroups);
    }

    /**
     * The first {@code n} items in the RocksDB order of their keys ({@code keyOf}) for a job of {@code keyGroups}
     * key groups: by key group, then by {@link #SERIALIZED_ORDER} within each group. At least {@code keyGroups}
     * items go by key group through a counting sort (one pass over the items and one over the groups); fewer
     * through a sort of primitive longs (key group above the position), which costs no array per key group.
     */
    static <T> T[] sorted(T[] items, int n, Function<? super T, String> keyOf, int keyGroups) {
        T[] sorted = Arrays.copyOf(items, n);
        int[] starts = n >= keyGroups
                ? byGroupCounting(items, n, keyOf, keyGroups, sorted)
                : byGroupSorting(items, n, keyOf, keyGroups, sorted);
        Comparator<T> order = (a, b) -> SERIALIZED_ORDER.compare(keyOf.apply(a), keyOf.apply(b));
        for (int g = 0; g + 1 < starts.length; g++) {
            if (starts[g + 1] - starts[g] > 1) Arrays.sort(sorted, starts[g], starts[g + 1], order);
        }
        return sorted;
    }

    /** Puts the items into {@code out} by key group (a counting sort); returns each group's start, then {@code n}. */
    private static <T> int[] byGroupCounting(
            T[] items, int n, Function<? super T, String> keyOf, int keyGroups, T[] out) {
        int[] groups = new int[n];
        int[] next = new int[keyGroups + 1];
        for (int i = 0; i < n; i++) {
            groups[i] = KeyGroupRangeAssignment.assignToKeyGroup(keyOf.apply(items[i]), keyGroups);
            next[groups[i] + 1]++;
        }
        for (int g = 0; g < keyGroups; g++) next[g + 1] += next[g];
        int[] starts = next.clone();
        for (int i = 0; i < n; i++) out[next[groups[i]]++] = items[i];
        return starts;
    }

    /**
     * Puts the items into {@code out} by key group (a sort of longs); returns the start of each run of one key
     * group, then {@code n}.
     */
    private static <T> int[] byGroupSorting(
            T[] items, int n, Function<? super T, String> keyOf, int keyGroups, T[] out) {
        long[] order = new long[n];
        for (int i = 0; i < n; i++) {
            long group = KeyGroupRangeAssignment.assignToKeyGroup(keyOf.apply(items[i]), keyGroups);
            order[i] = group << 32 | i;
        }
        Arrays.sort(order);
        int[] starts = new int[n + 1];
        int runs = 0;
        for (int i = 0; i < n; i++) {
            out[i] = items[(int) order[i]];
            if (i == 0 || order[i] >>> 32 != order[i - 1] >>> 32) starts[runs++] = i;
        }
        starts[runs++] = n;
        return Arrays.copyOf(starts, runs);
    }
}
