package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import java.nio.file.Path;
import java.util.UUID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.UnifiedJedis;

/**
 * {@link RollcountJob#main} never exits the JVM: a refused start is a {@link RefusedStartException} of one line
 * (against the real Redis), a restore is never refused for the prefix, and application mode is recognized by
 * the {@code execution.target} Flink's application clusters set.
 */
class RollcountJobMainIT {
    private static final String REDIS = "redis://127.0.0.1:6379";

    @TempDir
    Path dir;

    private String prefix;
    private UnifiedJedis redis;

    @BeforeEach
    void setUp() {
        prefix = "rjm" + UUID.randomUUID().toString().substring(0, 8);
        redis = RedisEndpoint.parse(REDIS).client();
    }

    @AfterEach
    void tearDown() {
        RedisKeys keys = new RedisKeys(prefix);
        redis.del(keys.watermark(), keys.lease());
        redis.close();
    }

    private JobOptions options() {
        JobOptions o = new JobOptions();
        o.redis = REDIS;
        o.redisKeyPrefix = prefix;
        return o;
    }

    @Test
    void aBadOptionIsARefusedStartOfOneLine() {
        assertThatThrownBy(() -> RollcountJob.main(new String[] {"--no-such-option"}))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessage("Unknown option: '--no-such-option' (--help lists the options)")
                .hasNoCause();
        assertThat(new RefusedStartException("x").getStackTrace()).isEmpty();
    }

    @Test
    void anEarlierJobsKeysRefuseAnEmptyStartButNotARestore() {
        redis.set(new RedisKeys(prefix).watermark(), "123");
        assertThatThrownBy(() -> RollcountJob.checkStart(new Configuration(), options()))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessageStartingWith("key prefix '" + prefix + "' holds the counts of an earlier job");

        Configuration restore = new Configuration();
        restore.set(
                StateRecoveryOptions.SAVEPOINT_PATH,
                dir.resolve("not-here").toUri().toString());
        RollcountJob.checkStart(restore, options());
    }

    @Test
    void aLeaseOfAnotherJobRefusesAnEmptyStart() {
        redis.set(new RedisKeys(prefix).lease(), "another-job");
        assertThatThrownBy(() -> RollcountJob.checkStart(new Configuration(), options()))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessageStartingWith("key prefix '" + prefix + "' is in use by a running job");
    }

    @Test
    void applicationModeIsTheEmbeddedTarget() {
        Configuration conf = new Configuration();
        assertThat(RollcountJob.applicationMode(conf)).isFalse();
        conf.set(DeploymentOptions.TARGET, "remote");
        assertThat(RollcountJob.applicationMode(conf)).isFalse();
        conf.set(DeploymentOptions.TARGET, "embedded");
        assertThat(RollcountJob.applicationMode(conf)).isTrue();
    }

    @Test
    void freshIsRefusedInApplicationMode() {
        JobOptions o = options();
        o.fresh = true;
        assertThatThrownBy(() -> RollcountJob.refuseFreshInApplicationMode(o))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessageContaining("runs main again at every JobManager failover");
    }
}
