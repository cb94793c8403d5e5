package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.Launcher.Place;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.UUID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.UnifiedJedis;

/**
 * The {@link Launcher}'s start checks against the real Redis on 127.0.0.1:6379, for each place the job starts
 * from: a refusal is a {@link RefusedStartException} of one line, a restore is never refused for the prefix, a
 * start that starts over is refused only by a running job, and in an application cluster only {@code --fresh}
 * is checked.
 */
class LauncherIT {
    private static final String REDIS = "redis://127.0.0.1:6379";
    private static final String HINT = "flink run -s <its checkpoint or savepoint>";

    @TempDir
    Path dir;

    private String prefix;
    private UnifiedJedis redis;

    @BeforeEach
    void setUp() {
        prefix = "launch" + UUID.randomUUID().toString().substring(0, 8);
        redis = RedisEndpoint.parse(REDIS).client();
    }

    @AfterEach
    void tearDown() {
        RedisKeys keys = new RedisKeys(prefix);
        redis.del(keys.watermark(), keys.lease(), keys.total("a"));
        redis.close();
    }

    private JobSettings options() {
        return JobSettings.builder()
                .set("--redis", REDIS)
                .set("--redis.key-prefix", prefix)
                .set("--input", dir)
                .set("--dlq", dir.resolve("dlq.jsonl"))
                .build();
    }

    private static Launcher launcher(JobSettings o, Place place) {
        return Launcher.of(o, place, HINT);
    }

    @Test
    void anEarlierJobsKeysRefuseAnEmptyStartButNotARestore() {
        redis.set(new RedisKeys(prefix).watermark(), "123");
        for (Place place : new Place[] {Place.HERE, Place.CLIENT}) {
            assertThatThrownBy(() -> launcher(options(), place).checkStart(null, "flink run -s"))
                    .as(place.name())
                    .isExactlyInstanceOf(RefusedStartException.class)
                    .hasMessageStartingWith("key prefix '" + prefix + "' holds the counts of an earlier job")
                    .hasMessageContaining("Resume that job (" + HINT + ")");
        }
        // from the client, a restore path missing here may be where the JobManager runs
        launcher(options(), Place.CLIENT)
                .checkStart(dir.resolve("not-here").toUri().toString(), "flink run -s");
        // here it must exist
        assertThatThrownBy(() -> launcher(options(), Place.HERE)
                        .checkStart(dir.resolve("not-here").toString(), "--resume"))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessageStartingWith("--resume " + dir.resolve("not-here") + " does not exist");
    }

    @Test
    void aLeaseOfAnotherJobRefusesEveryStartThatIsNotARecovery() {
        redis.set(new RedisKeys(prefix).lease(), "another-job");
        for (Launcher l : new Launcher[] {
            launcher(options(), Place.HERE),
            launcher(options(), Place.CLIENT),
            launcher(options(), Place.HERE).startingOver()
        }) {
            assertThatThrownBy(() -> l.checkStart(null, null))
                    .isExactlyInstanceOf(RefusedStartException.class)
                    .hasMessageStartingWith("key prefix '" + prefix + "' is in use by a running job");
        }
        assertThatCode(() -> launcher(options(), Place.HERE)
                        .startingOver()
                        .holdingLease("another-job")
                        .checkStart(null, null))
                .as("the job's own lease token")
                .doesNotThrowAnyException();
    }

    @Test
    void aStartThatStartsOverIsNotRefusedByAnEarlierJobsKeysNorDeletesThem() {
        RedisKeys keys = new RedisKeys(prefix);
        redis.set(keys.watermark(), "123");
        redis.set(keys.total("a"), "7");
        launcher(options(), Place.HERE).startingOver().checkStart(null, null);
        assertThat(redis.get(keys.total("a"))).isEqualTo("7");
    }

    @Test
    void freshDeletesTheEarlierJobsKeysOnlyOnceEveryCheckHasPassed() {
        RedisKeys keys = new RedisKeys(prefix);
        redis.set(keys.watermark(), "123");
        redis.set(keys.total("a"), "7");
        JobSettings o = options().toBuilder().set("--fresh", true).build();
        assertThatThrownBy(() -> launcher(o, Place.HERE)
                        .checkStart(dir.resolve("missing").toString(), "--resume"))
                .isExactlyInstanceOf(RefusedStartException.class);
        assertThat(redis.get(keys.total("a")))
                .as("a refused start changes nothing")
                .isEqualTo("7");
        launcher(o, Place.HERE).checkStart(null, null);
        assertThat(redis.get(keys.total("a"))).isNull();
    }

    @Test
    void aRedisThatDoesNotAnswerFailsAStartHereAndIsAWarningFromTheClient() throws Exception {
        int closed;
        try (ServerSocket s = new ServerSocket(0)) {
            closed = s.getLocalPort();
        }
        JobSettings o = options().toBuilder()
                .set("--redis", "redis://127.0.0.1:" + closed)
                .build();
        assertThatThrownBy(() -> launcher(o, Place.HERE).checkStart(null, null))
                .isExactlyInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("cannot reach Redis at redis://127.0.0.1:" + closed)
                .hasMessageContaining("start redis-server");
        assertThatCode(() -> launcher(o, Place.CLIENT).checkStart(null, null))
                .as("the TaskManagers may reach the Redis the client does not")
                .doesNotThrowAnyException();
    }

    @Test
    void aRedisClusterOptionAgainstASingleServerIsARefusedStart() {
        JobSettings o = options().toBuilder().set("--redis.cluster", true).build();
        assertThatThrownBy(() -> launcher(o, Place.HERE).checkStart(null, null))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessageContaining("is not a Redis Cluster node");
    }

    @Test
    void inAnApplicationClusterOnlyFreshIsCheckedTheWritersCheckThePrefix() {
        redis.set(new RedisKeys(prefix).lease(), "the-job-being-recovered");
        JobSettings o =
                options().toBuilder().set("--redis", "redis://127.0.0.1:1").build();
        assertThatCode(() -> launcher(o, Place.APPLICATION).checkStart(null, null))
                .doesNotThrowAnyException();
        JobSettings fresh = o.toBuilder().set("--fresh", true).build();
        assertThatThrownBy(() -> launcher(fresh, Place.APPLICATION).checkStart(null, null))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessageContaining("runs main again at every JobManager failover");
    }

    @Test
    void applicationModeIsTheEmbeddedTarget() {
        Configuration conf = new Configuration();
        assertThat(Place.ofCluster(conf)).isEqualTo(Place.CLIENT);
        conf.set(DeploymentOptions.TARGET, "remote");
        assertThat(Place.ofCluster(conf)).isEqualTo(Place.CLIENT);
        conf.set(DeploymentOptions.TARGET, "embedded");
        assertThat(Place.ofCluster(conf)).isEqualTo(Place.APPLICATION);
    }

    @Test
    void aBadOptionIsRefusedBeforeThereAreSettingsToLaunch() {
        assertThatThrownBy(() -> options().toBuilder().set("--topk", 0).build())
                .isExactlyInstanceOf(IllegalArgumentException.class)
                .hasMessage("--topk must be between 1 and 10000");
        assertThatThrownBy(() -> RollcountJob.parseSettings(new String[] {"--input", "x", "--topk", "0"}))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessage("--topk must be between 1 and 10000 (--help lists the options)");
    }
}
