package io.rollcount.job;

import java.time.Duration;
import java.util.List;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.state.rocksdb.RocksDBConfigurableOptions;
import org.apache.flink.state.rocksdb.RocksDBOptions;
import org.rocksdb.CompressionType;

/**
 * The job's Flink settings: what exactness and speed need ({@link #ownSettings}), and what a cluster may choose
 * unless the job's option is given ({@link #configuration(JobSettings, ReadableConfig)}).
 */
public final class FlinkSettings {
    /**
     * RocksDB's background jobs per state (flushes and compactions, {@code state.backend.rocksdb.thread.num}),
     * where the cluster sets none: 4, not Flink's 2. RocksDB sizes its process-wide thread pools from the
     * largest of these: 2 gives one compaction thread for every operator's RocksDB in the TaskManager, 4 gives
     * three. A checkpoint's memtable flush waits while its state's level 0 is full, so with one compaction thread
     * a small state's checkpoint (the window top-K's, kilobytes) waits for its level-0 compaction behind the
     * counters' and the deduplication's, tens of seconds at millions of counters.
     */
    static final int BACKGROUND_JOBS = 4;

    /**
     * RocksDB's compression at every level where the cluster sets none ({@code
     * state.backend.rocksdb.compression.per.level}): LZ4, where Flink's default is Snappy. A counter's state is
     * written back at each checkpoint after it changed and at its windows' closes, so RocksDB's compactions
     * compress and decompress most bytes several times; LZ4 does both faster than Snappy at about the same size.
     */
    static final CompressionType COMPRESSION = CompressionType.LZ4_COMPRESSION;

    private FlinkSettings() {}

    /**
     * The job's Flink settings for a run that brings its own Flink (a MiniCluster: {@code ./rollcount run}, the
     * demo, the benchmarks): {@link #ownSettings}, RocksDB with incremental checkpoints, the memtable Bloom
     * filters ({@link MemtableBloomFilters}), {@value #BACKGROUND_JOBS} background jobs and LZ4, checkpoints every
     * {@code --checkpoint.interval} (10 s where not given), retained on cancellation.
     */
    public static Configuration configuration(JobSettings settings) {
        // a MiniCluster is a cluster that sets none of them
        return configuration(settings, new Configuration());
    }

    /**
     * The job's Flink settings on a cluster whose own settings are {@code cluster} (its {@code config.yaml}, the
     * operator's {@code flinkConfiguration}): what a cluster may choose (checkpoint interval, state backend,
     * checkpoint retention, restart strategy, parallelism, a RocksDB options factory) stays the cluster's unless
     * the job's option is given;
     * where neither sets a checkpoint interval the job sets 10 s ({@link JobSettings#DEFAULT_CHECKPOINT_INTERVAL}),
     * where neither sets a state backend, RocksDB with incremental checkpoints, where the cluster sets no RocksDB
     * options factory, {@link MemtableBloomFilters}, and where it sets no {@code state.backend.rocksdb.thread.num},
     * {@value #BACKGROUND_JOBS}, and where it sets no {@code state.backend.rocksdb.compression.per.level}, LZ4
     * ({@link #COMPRESSION}). {@link #ownSettings} are the
     * job's in any case. A cluster set to at-least-once checkpoints is refused with an
     * {@link IllegalArgumentException} of one line: the job's outputs are exactly-once only with exactly-once
     * checkpoints.
     */
    public static Configuration configuration(
            JobSettings settings, org.apache.flink.configuration.ReadableConfig cluster) {
        if (cluster.getOptional(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE)
                        .orElse(CheckpointingMode.EXACTLY_ONCE)
                == CheckpointingMode.AT_LEAST_ONCE) {
            throw new IllegalArgumentException(
                    "the cluster sets " + CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE.key()
                            + ": AT_LEAST_ONCE; Rollcount's counts and Kafka outputs are exactly-once only with EXACTLY_ONCE"
                            + " checkpoints: set it to EXACTLY_ONCE, or leave it unset, for this job");
        }
        Configuration conf = ownSettings(settings);
        if (settings.isGiven("--checkpoint.interval")) {
            conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, settings.checkpointInterval);
        } else if (cluster.getOptional(CheckpointingOptions.CHECKPOINTING_INTERVAL)
                .isEmpty()) {
            conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, JobSettings.DEFAULT_CHECKPOINT_INTERVAL);
        }
        if (cluster.getOptional(StateBackendOptions.STATE_BACKEND).isEmpty()) {
            conf.set(StateBackendOptions.STATE_BACKEND, "rocksdb");
            if (cluster.getOptional(CheckpointingOptions.INCREMENTAL_CHECKPOINTS)
                    .isEmpty()) conf.set(CheckpointingOptions.INCREMENTAL_CHECKPOINTS, true);
        }
        // a cluster's own RocksDB options factory holds: the memtable Bloom filters are a speed, not exactness
        if (cluster.getOptional(RocksDBOptions.OPTIONS_FACTORY).isEmpty())
            conf.set(RocksDBOptions.OPTIONS_FACTORY, MemtableBloomFilters.class.getName());
        if (cluster.getOptional(RocksDBConfigurableOptions.MAX_BACKGROUND_THREADS)
                .isEmpty()) conf.set(RocksDBConfigurableOptions.MAX_BACKGROUND_THREADS, BACKGROUND_JOBS);
        if (cluster.getOptional(RocksDBConfigurableOptions.COMPRESSION_PER_LEVEL)
                .isEmpty()) conf.set(RocksDBConfigurableOptions.COMPRESSION_PER_LEVEL, List.of(COMPRESSION));
        if (cluster.getOptional(CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION)
                .isEmpty()) {
            conf.set(
                    CheckpointingOptions.EXTERNALIZED_CHECKPOINT_RETENTION,
                    org.apache.flink.configuration.ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION);
        }
        return conf;
    }

    /**
     * What exactness or speed needs, the job's own wherever it runs: exactly-once checkpoints (the Redis guards
     * and the Kafka transactions rely on them), the RocksDB options the growth measurements needed, object reuse
     * (every operator emits objects of its own), no generic types (no Kryo on the hot path), a 200 ms watermark
     * interval; {@code --checkpoint.dir} where given.
     */
    static Configuration ownSettings(JobSettings settings) {
        Configuration conf = new Configuration();
        conf.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.EXACTLY_ONCE);
        if (settings.checkpointDir != null) {
            conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
            conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, settings.checkpointDir);
        }
        // Deduplication looks up mostly event_ids it has never seen: a Bloom filter answers those without
        // reading SST files once the ids of a day no longer fit in the memtables.
        conf.set(RocksDBConfigurableOptions.USE_BLOOM_FILTER, true);
        // Partitioned index and filter blocks: with millions of counters a subtask's SST files have index and
        // filter blocks of megabytes, which the block cache Flink sizes from managed memory cannot keep; a get
        // would read and decompress a whole index block for one counter. Partitioned, only the top-level index
        // stays in the cache and a get reads one small partition.
        conf.set(RocksDBOptions.USE_PARTITIONED_INDEX_FILTERS, true);
        // Every operator emits objects of its own and changes neither its input nor what it emitted, so
        // chained operators may hand records on without Flink copying each one.
        conf.set(PipelineOptions.OBJECT_REUSE, true);
        conf.set(PipelineOptions.GENERIC_TYPES, false);
        conf.set(PipelineOptions.AUTO_WATERMARK_INTERVAL, Duration.ofMillis(200));
        return conf;
    }
}
