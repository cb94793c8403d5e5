package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.core.execution.CheckpointingMode;
import org.junit.jupiter.api.Test;

/**
 * {@link FlinkSettings#configuration(JobSettings, org.apache.flink.configuration.ReadableConfig)}: what a cluster
 * sets stays the cluster's unless the job's option is given; what exactness and speed need is the job's.
 */
class ClusterSettingsTest {
    /** The settings the job runs with: the cluster's, then the job's over them (as Flink merges them). */
    private static Configuration effective(Configuration cluster, String... args) {
        JobSettings o = JobSettingsTest.parse(args);
        Configuration merged = new Configuration(cluster);
        merged.addAll(FlinkSettings.configuration(o, cluster));
        return merged;
    }

    @Test
    void theClustersCheckpointIntervalAndStateBackendStayUnlessTheOptionIsGiven() {
        Configuration cluster = new Configuration();
        cluster.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofSeconds(3));
        cluster.set(StateBackendOptions.STATE_BACKEND, "hashmap");
        Configuration c = effective(cluster);
        assertThat(c.get(CheckpointingOptions.CHECKPOINTING_INTERVAL)).isEqualTo(Duration.ofSeconds(3));
        assertThat(c.get(StateBackendOptions.STATE_BACKEND)).isEqualTo("hashmap");
        assertThat(effective(cluster, "--checkpoint.interval", "7s").get(CheckpointingOptions.CHECKPOINTING_INTERVAL))
                .isEqualTo(Duration.ofSeconds(7));
    }

    @Test
    void whereNeitherSetsThemTheJobTakesTenSecondsAndRocksDb() {
        Configuration c = effective(new Configuration());
        assertThat(c.get(CheckpointingOptions.CHECKPOINTING_INTERVAL)).isEqualTo(Duration.ofSeconds(10));
        assertThat(c.get(StateBackendOptions.STATE_BACKEND)).isEqualTo("rocksdb");
        assertThat(c.get(CheckpointingOptions.INCREMENTAL_CHECKPOINTS)).isTrue();
    }

    @Test
    void exactnessAndSpeedSettingsAreTheJobsWhateverTheClusterSays() {
        Configuration cluster = new Configuration();
        cluster.set(PipelineOptions.OBJECT_REUSE, false);
        cluster.set(PipelineOptions.GENERIC_TYPES, true);
        Configuration c = effective(cluster);
        assertThat(c.get(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE))
                .isEqualTo(CheckpointingMode.EXACTLY_ONCE);
        assertThat(c.get(PipelineOptions.OBJECT_REUSE)).isTrue();
        assertThat(c.get(PipelineOptions.GENERIC_TYPES)).isFalse();
    }

    @Test
    void aClusterOfAtLeastOnceCheckpointsIsRefusedInOneLine() {
        Configuration cluster = new Configuration();
        cluster.set(CheckpointingOptions.CHECKPOINTING_CONSISTENCY_MODE, CheckpointingMode.AT_LEAST_ONCE);
        assertThatThrownBy(() -> effective(cluster))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("the cluster sets execution.checkpointing.mode: AT_LEAST_ONCE; Rollcount's counts and"
                        + " Kafka outputs are exactly-once only with EXACTLY_ONCE checkpoints: set it to EXACTLY_ONCE,"
                        + " or leave it unset, for this job");
    }

    @Test
    void aLocalRunKeepsItsOwnConfiguration() {
        JobSettings o = JobSettingsTest.parse();
        Configuration c = FlinkSettings.configuration(o);
        assertThat(c.get(CheckpointingOptions.CHECKPOINTING_INTERVAL)).isEqualTo(Duration.ofSeconds(10));
        assertThat(c.get(StateBackendOptions.STATE_BACKEND)).isEqualTo("rocksdb");
    }

    @Test
    void theJobsRocksDbOptionsFactoryUnlessTheClusterSetsItsOwn() {
        var factory = org.apache.flink.state.rocksdb.RocksDBOptions.OPTIONS_FACTORY;
        assertThat(effective(new Configuration()).get(factory)).isEqualTo(MemtableBloomFilters.class.getName());
        Configuration cluster = new Configuration();
        cluster.set(factory, "com.example.TheirOptions");
        assertThat(effective(cluster).get(factory)).isEqualTo("com.example.TheirOptions");
    }

    @Test
    void fourRocksDbBackgroundJobsUnlessTheClusterSetsItsOwn() {
        var jobs = org.apache.flink.state.rocksdb.RocksDBConfigurableOptions.MAX_BACKGROUND_THREADS;
        assertThat(FlinkSettings.configuration(JobSettingsTest.parse()).get(jobs))
                .isEqualTo(4);
        assertThat(effective(new Configuration()).get(jobs)).isEqualTo(4);
        Configuration cluster = new Configuration();
        cluster.set(jobs, 8);
        assertThat(effective(cluster).get(jobs)).isEqualTo(8);
    }

    @Test
    void lz4AtEveryLevelUnlessTheClusterSetsItsOwn() {
        var levels = org.apache.flink.state.rocksdb.RocksDBConfigurableOptions.COMPRESSION_PER_LEVEL;
        assertThat(effective(new Configuration()).get(levels))
                .containsExactly(org.rocksdb.CompressionType.LZ4_COMPRESSION);
        Configuration cluster = new Configuration();
        cluster.set(levels, java.util.List.of(org.rocksdb.CompressionType.ZSTD_COMPRESSION));
        assertThat(effective(cluster).get(levels)).containsExactly(org.rocksdb.CompressionType.ZSTD_COMPRESSION);
    }
}
