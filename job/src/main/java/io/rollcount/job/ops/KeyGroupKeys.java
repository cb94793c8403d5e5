package io.rollcount.job.ops;

import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;

/**
 * One string key per key group, for state that belongs to a key group rather than to a key of the stream (an
 * operator keeps it under its key group's key, and Flink moves it with the key group when the job rescales).
 * The key of group {@code g} is the first of {@code prefix + i} (i = 0, 1, 2, ... in base 36) that Flink assigns
 * to {@code g}: the same in every run of a job of the same maximum parallelism, so that a restored key group's
 * state is found under it. The prefix starts with a control character, which no counter id contains.
 */
final class KeyGroupKeys {
    private final KeyGroupRange range;
    private final String[] keys;

    /** The keys of the key groups of {@code range} in a job of {@code maxParallelism}. */
    KeyGroupKeys(String prefix, KeyGroupRange range, int maxParallelism) {
        this.range = range;
        this.keys = new String[range.getNumberOfKeyGroups()];
        int missing = keys.length;
        for (long i = 0; missing > 0; i++) {
            String key = prefix + Long.toString(i, Character.MAX_RADIX);
            int group = KeyGroupRangeAssignment.assignToKeyGroup(key, maxParallelism);
            if (!range.contains(group) || keys[group - range.getStartKeyGroup()] != null) continue;
            keys[group - range.getStartKeyGroup()] = key;
            missing--;
        }
    }

    /** The key of key group {@code group}, one of the range's. */
    String of(int group) {
        return keys[group - range.getStartKeyGroup()];
    }

    KeyGroupRange range() {
        return range;
    }
}
