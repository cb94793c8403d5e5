package io.rollcount.job;

import io.rollcount.job.redis.RedisKeys;
import java.io.Serializable;
import picocli.CommandLine.Option;

/**
 * The Redis options of every command that talks to the job's Redis: {@code --redis}, {@code --redis.cluster},
 * {@code --redis.password-file} and {@code --redis.key-prefix}, declared here once. {@link JobOptions} extends it
 * (so {@code flink run} and {@code ./rollcount run} take them), and {@code query}, {@code top} and {@code demo}
 * mix it in.
 */
public class RedisOptions implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Where {@code --redis} is read from when it is not given. */
    public static final String URL_ENV = "ROLLCOUNT_REDIS";

    public static final String DEFAULT_URL = "redis://127.0.0.1:6379";

    @Option(
            names = "--redis",
            paramLabel = "URL",
            description =
                    "redis://[user[:password]@]host:port[/db] or rediss:// for TLS; "
                            + "with --redis.cluster the seed nodes redis://host:port,host2:port2,... (default: $ROLLCOUNT_REDIS or redis://127.0.0.1:6379).")
    public String redis;

    @Option(
            names = "--redis.cluster",
            description =
                    "--redis lists seed nodes of a Redis Cluster: redis://[user[:password]@]host:port,host2:port2,... (same user, password and TLS for all; no /db).")
    public boolean redisCluster;

    @Option(
            names = "--redis.password-file",
            paramLabel = "FILE",
            description = "Read the Redis password from this file (also: $ROLLCOUNT_REDIS_PASSWORD).")
    public String redisPasswordFile;

    @Option(
            names = "--redis.key-prefix",
            defaultValue = "rc",
            description = "Prefix of every Redis key (default: ${DEFAULT-VALUE}).")
    public String redisKeyPrefix;

    /** {@code --redis}, else {@code $ROLLCOUNT_REDIS}, else {@value #DEFAULT_URL}. */
    public String redisUrl() {
        if (redis != null) return redis;
        String env = System.getenv(URL_ENV);
        return env != null && !env.isBlank() ? env : DEFAULT_URL;
    }

    /** The key names under {@code --redis.key-prefix}; fails naming the option on a prefix {@link RedisKeys#checkPrefix} refuses. */
    public RedisKeys keys() {
        return new RedisKeys(redisKeyPrefix);
    }
}
