package io.rollcount.job;

import picocli.CommandLine.Option;

/**
 * The command-line face of the Redis options of every command that talks to the job's Redis: {@code --redis}, {@code --redis.cluster},
 * {@code --redis.password-file} and {@code --redis.key-prefix}, declared here once. {@link JobOptions} extends it
 * (so {@code flink run} and {@code ./rollcount run} take them), and {@code query}, {@code top} and {@code demo}
 * mix it in. {@link #toSettings} makes them the {@link RedisSettings} those commands use.
 */
public class RedisOptions {

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

    /** The settings of these options, with {@code --redis} taken from {@code $ROLLCOUNT_REDIS} where it is not given. */
    public RedisSettings toSettings() {
        return new RedisSettings(redisUrl(), redisCluster, redisPasswordFile, redisKeyPrefix);
    }

    /** {@code --redis}, else {@code $ROLLCOUNT_REDIS}, else {@value #DEFAULT_URL}. */
    private String redisUrl() {
        if (redis != null) return redis;
        String env = System.getenv(URL_ENV);
        return env != null && !env.isBlank() ? env : DEFAULT_URL;
    }
}
