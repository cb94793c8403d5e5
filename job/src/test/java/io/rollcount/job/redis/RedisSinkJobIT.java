package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.metrics.LocalMetrics;
import io.rollcount.job.metrics.RollcountMetrics;
import io.rollcount.job.redis.internal.MarkGuard;
import io.rollcount.job.redis.internal.RedisWriteBuffer;
import io.rollcount.job.support.MiniClusters;
import io.rollcount.job.support.RedisTestSupport;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.Jedis;

/**
 * The real sink in a bounded Flink job on a MiniCluster, with checkpoints and a failure injected after
 * the first completed checkpoint: the job restarts from the checkpoint, replays writes Redis has seen,
 * and ends with exactly the final values, while a poller reading Redis never sees a total decrease.
 */
class RedisSinkJobIT {
    static final Configuration FLINK_CONF = new Configuration();
    static final LocalMetrics METRICS = LocalMetrics.addTo(FLINK_CONF);

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER = MiniClusters.slots(2, FLINK_CONF);

    static final int COUNTERS = 50;
    static final int VERSIONS = 40;

    static final AtomicBoolean CHECKPOINTED = new AtomicBoolean();
    static final AtomicBoolean FAILED = new AtomicBoolean();
    static final AtomicInteger SEEN_AFTER_CHECKPOINT = new AtomicInteger();

    /** Slows the stream down a little and fails once, some records after the first completed checkpoint. */
    static final class FailOnceAfterCheckpoint implements MapFunction<RedisWrite, RedisWrite>, CheckpointListener {
        @Override
        public RedisWrite map(RedisWrite w) throws Exception {
            Thread.sleep(1);
            if (CHECKPOINTED.get() && !FAILED.get() && SEEN_AFTER_CHECKPOINT.incrementAndGet() > 300) {
                FAILED.set(true);
                throw new RuntimeException("injected failure");
            }
            return w;
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            CHECKPOINTED.set(true);
        }
    }

    @Test
    void restartFromCheckpointConvergesAndNeverGoesBackwards() throws Exception {
        String prefix = RedisTestSupport.randomPrefix();
        RedisKeys keys = new RedisKeys(prefix);
        List<RedisWrite> writes = new ArrayList<>();
        for (int v = 1; v <= VERSIONS; v++) {
            for (int c = 0; c < COUNTERS; c++) {
                String counter = "post:" + c;
                String total = keys.total(counter);
                writes.add(RedisWrite.count(
                        total, keys.versionOf(counter, total), 3L * v + c, v, true, RedisWrite.NO_WINDOW, 0));
            }
            writes.add(RedisWrite.max(keys.watermark(), 1000L * v));
        }

        Map<String, Long> highest = new ConcurrentHashMap<>();
        List<String> decreases = new CopyOnWriteArrayList<>();
        AtomicBoolean polling = new AtomicBoolean(true);
        Thread poller = new Thread(
                () -> {
                    try (Jedis j = new Jedis("127.0.0.1", 6379)) {
                        while (polling.get()) {
                            for (int c = 0; c < COUNTERS; c++) {
                                String k = keys.total("post:" + c);
                                String s = j.get(k);
                                if (s == null) continue;
                                long now = Long.parseLong(s);
                                Long before = highest.put(k, Math.max(now, highest.getOrDefault(k, Long.MIN_VALUE)));
                                if (before != null && now < before) decreases.add(k + ": " + before + " -> " + now);
                            }
                        }
                    }
                },
                "redis-poller");

        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 2);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
        conf.set(PipelineOptions.GENERIC_TYPES, false);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.enableCheckpointing(100);
        env.setParallelism(2);
        RedisSink sink = RedisSink.builder()
                .setUrl(RedisTestSupport.SHARED_URL)
                .setKeyPrefix(prefix)
                .setRetryTimeout(Duration.ofSeconds(10))
                .setMaxBufferedKeys(20)
                .build();
        env.fromData(writes)
                .setParallelism(1)
                .map(new FailOnceAfterCheckpoint())
                .setParallelism(1)
                .keyBy(w -> RedisWriteBuffer.hashTag(w.key) == null ? w.key : RedisWriteBuffer.hashTag(w.key))
                .sinkTo(sink)
                .name("redis");

        long guardedBefore = METRICS.sum(RollcountMetrics.REDIS_WRITES_GUARDED);
        long confirmedBefore = METRICS.sum(RollcountMetrics.REDIS_KEYS_CONFIRMED);
        poller.start();
        try {
            env.execute("redis-sink-test");
        } finally {
            polling.set(false);
            poller.join();
        }

        try (Jedis j = new Jedis("127.0.0.1", 6379)) {
            assertThat(FAILED).as("the failure was injected").isTrue();
            // the restored writers found the mark and guarded the totals, each until Redis was no longer ahead
            // of the replay; then that total went plain (every total left the guard once)
            assertThat(METRICS.sum(RollcountMetrics.REDIS_WRITES_GUARDED) - guardedBefore)
                    .as("guarded writes after the restore")
                    .isPositive();
            assertThat(METRICS.sum(RollcountMetrics.REDIS_KEYS_CONFIRMED) - confirmedBefore)
                    .as("totals that left the guard")
                    .isEqualTo(COUNTERS);
            assertThat(decreases).as("totals never decrease").isEmpty();
            Map<String, String> expected = new HashMap<>();
            for (int c = 0; c < COUNTERS; c++) {
                String counter = "post:" + c;
                String total = keys.total(counter);
                expected.put(total, Long.toString(3L * VERSIONS + c));
                // monotone writes: no version key (none exists to keep current)
            }
            // The MAX writes of the stream, then the writers' own watermark at the end of input (all final).
            expected.put(keys.watermark(), Long.toString(Long.MAX_VALUE));
            // the writers' mark, created before their first count: a restored writer finds it and guards the totals
            expected.put(keys.mark(), Long.toString(MarkGuard.markFor(0)));
            // the prefix's epoch (a random token, created once: see RedisEpoch)
            assertThat(j.get(keys.epoch())).isNotEmpty();
            expected.put(keys.epoch(), j.get(keys.epoch()));
            Map<String, String> actual = new HashMap<>();
            for (String k : RedisTestSupport.keysOf(j, prefix)) {
                if (k.startsWith(prefix + ":_wm:")) continue; // the writers' own watermarks (a hash), checked below
                actual.put(k, j.get(k));
            }
            assertThat(actual).isEqualTo(expected);
            RedisTestSupport.deleteAll(j, prefix);
        }
    }
}
