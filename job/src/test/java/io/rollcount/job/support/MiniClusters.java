package io.rollcount.job.support;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

/** The Flink MiniCluster of the job's tests: one TaskManager, shared by the tests of a class. */
public final class MiniClusters {
    private MiniClusters() {}

    /** One TaskManager with {@code slots} slots. */
    public static MiniClusterExtension slots(int slots) {
        return slots(slots, new Configuration());
    }

    /** One TaskManager with {@code slots} slots and 256 MB of managed memory (RocksDB of several operators). */
    public static MiniClusterExtension slotsWithManagedMemory(int slots) {
        Configuration c = new Configuration();
        c.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse("256m"));
        return slots(slots, c);
    }

    /** One TaskManager with {@code slots} slots and {@code conf}. */
    public static MiniClusterExtension slots(int slots, Configuration conf) {
        return new MiniClusterExtension(new MiniClusterResourceConfiguration.Builder()
                .setNumberTaskManagers(1)
                .setNumberSlotsPerTaskManager(slots)
                .setConfiguration(conf)
                .build());
    }
}
