package io.rollcount.cli;

import io.rollcount.job.JobOptions;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import picocli.CommandLine.Option;
import redis.clients.jedis.UnifiedJedis;

/**
 * The Redis options of the commands that read what the job wrote or drive it ({@code query}, {@code top},
 * {@code demo}): the same {@code --redis}, {@code --redis.cluster}, {@code --redis.password-file} and
 * {@code --redis.key-prefix} as the job's.
 */
final class RedisReadOptions {
    @Option(names = "--redis", paramLabel = "URL", description = "Redis URL, or with --redis.cluster the seed nodes redis://host:port,host2:port2,... (default: $ROLLCOUNT_REDIS or redis://127.0.0.1:6379).")
    String redis;

    @Option(names = "--redis.cluster", description = "--redis lists seed nodes of a Redis Cluster.")
    boolean cluster;

    @Option(names = "--redis.password-file", paramLabel = "FILE", description = "Read the Redis password from this file (also: $ROLLCOUNT_REDIS_PASSWORD).")
    String passwordFile;

    @Option(names = "--redis.key-prefix", defaultValue = "rc", description = "Key prefix (default: ${DEFAULT-VALUE}).")
    String prefix = "rc";

    RedisKeys keys() {
        return new RedisKeys(prefix);
    }

    /** These options set on the job's options. */
    void applyTo(JobOptions o) {
        o.redis = redis;
        o.redisCluster = cluster;
        o.redisPasswordFile = passwordFile;
        o.redisKeyPrefix = prefix;
    }

    RedisEndpoint endpoint() {
        JobOptions o = new JobOptions();
        applyTo(o);
        return RedisEndpoint.fromOptions(o);
    }

    /**
     * A client that answered PING (a cluster client for {@code --redis.cluster}), or a one-line error naming
     * the endpoint (password redacted), or the option to add or drop when the server is not what
     * {@code --redis.cluster} says.
     */
    UnifiedJedis client() {
        RedisEndpoint endpoint = endpoint();
        try {
            endpoint.checkMode();
            return endpoint.client();
        } catch (IllegalArgumentException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot reach Redis at " + endpoint + ": " + Main.oneLine(e));
        }
    }
}
