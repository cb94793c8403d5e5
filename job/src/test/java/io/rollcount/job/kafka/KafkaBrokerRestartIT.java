package io.rollcount.job.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.kafka.KafkaTestSupport.KV;
import io.rollcount.job.model.Json;
import io.rollcount.job.model.Rollup;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The broker stopped and started again on the same port and folder while an exactly-once sink writes:
 * the job rides it out (or restarts from its checkpoint) and the committed output is still exact.
 */
class KafkaBrokerRestartIT {
    private static final int RECORDS = 900;

    @RegisterExtension
    static final MiniClusterExtension FLINK = new MiniClusterExtension(KafkaTestSupport::miniCluster);

    @TempDir
    Path dir;

    static Rollup rollup(long i) {
        return new Rollup("c" + (i % 17), "5s", i * 5000L, (i + 1) * 5000L, i, 1, null, 0);
    }

    @Test
    void theSinkOutputIsExactAcrossABrokerRestart() throws Exception {
        try (KafkaBroker broker = new KafkaBroker(0, dir.resolve("kafka")).start()) {
            broker.createTopics(2, KafkaIO.ROLLUPS_TOPIC);
            JobSettings o = JobSettings.builder()
                    .set("--kafka.bootstrap", broker.bootstrap())
                    .set("--kafka.transactional-id-prefix", "restart-test")
                    .build();
            JobConnectors.ensureOutputTopics(o);

            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(2);
            env.enableCheckpointing(300);
            Configuration c = new Configuration();
            c.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
            c.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 10);
            c.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofSeconds(1));
            env.configure(c);
            env.fromSource(
                            new DataGeneratorSource<>(i -> i, RECORDS, RateLimiterStrategy.perSecond(150), Types.LONG),
                            WatermarkStrategy.noWatermarks(),
                            "numbers")
                    .map(KafkaBrokerRestartIT::rollup)
                    .returns(Rollup.class)
                    .sinkTo(JobConnectors.rollupsSink(o))
                    .name("rollups");
            JobClient job = env.executeAsync("broker restart");

            // Once some output is committed, take the broker away for a few seconds.
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (KafkaTestSupport.endOffsets(broker.adminProperties(), KafkaIO.ROLLUPS_TOPIC).values().stream()
                            .mapToLong(Long::longValue)
                            .sum()
                    < 100) {
                assertThat(System.nanoTime()).as("some output within 60 s").isLessThan(deadline);
                Thread.sleep(100);
            }
            int port = broker.port();
            broker.stop();
            Thread.sleep(3000);
            broker.start();
            assertThat(broker.port()).isEqualTo(port);

            job.getJobExecutionResult().get();
            assertThat(job.getJobStatus().get()).isEqualTo(JobStatus.FINISHED);

            List<KV> expected = new ArrayList<>();
            for (long i = 0; i < RECORDS; i++)
                expected.add(
                        KV.of(KafkaTestSupport.utf8(rollup(i).counter), Json.rollup(o.redis.keyPrefix(), rollup(i))));
            Map<TopicPartition, Long> fromStart = Map.of();
            List<KV> got = KafkaTestSupport.kvs(
                    KafkaTestSupport.readCommitted(broker.adminProperties(), KafkaIO.ROLLUPS_TOPIC, fromStart));
            assertThat(got).hasSize(RECORDS).containsExactlyInAnyOrderElementsOf(expected);
        }
    }
}
