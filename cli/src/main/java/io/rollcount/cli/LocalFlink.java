package io.rollcount.cli;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobSettings;
import java.nio.file.Path;
import java.time.Duration;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.HeartbeatManagerOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/** The job on a local MiniCluster, configured as on a cluster: RocksDB, checkpoints, a bounded restart strategy. */
final class LocalFlink {
    private LocalFlink() {}

    static StreamExecutionEnvironment environment(JobSettings settings) {
        return environment(settings, new Configuration());
    }

    /** As {@link #environment(JobSettings)}, with {@code extra} settings applied last (the demo turns on Flink's REST API). */
    static StreamExecutionEnvironment environment(JobSettings settings, Configuration extra) {
        Configuration conf = FlinkSettings.configuration(settings);
        if (settings.checkpointDir == null) {
            String dir = Path.of(".rollcount", "checkpoints")
                    .toAbsolutePath()
                    .toUri()
                    .toString();
            conf.set(CheckpointingOptions.CHECKPOINT_STORAGE, "filesystem");
            conf.set(CheckpointingOptions.CHECKPOINTS_DIRECTORY, dir);
        }
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 10);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofSeconds(2));
        // Accumulators (the progress line) travel with heartbeats.
        conf.set(HeartbeatManagerOptions.HEARTBEAT_INTERVAL, Duration.ofSeconds(1));
        conf.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.ofMebiBytes(256));
        int parallelism = settings.parallelism != null
                ? settings.parallelism
                : Runtime.getRuntime().availableProcessors();
        conf.set(TaskManagerOptions.NUM_TASK_SLOTS, parallelism);
        conf.addAll(extra);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
        return env;
    }
}
