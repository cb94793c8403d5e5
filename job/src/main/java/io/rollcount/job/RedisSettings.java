package io.rollcount.job;

import io.rollcount.job.redis.RedisKeys;
import java.io.Serializable;

/**
 * The Redis settings of every command that talks to the job's Redis, made once from {@link RedisOptions}: the
 * job's ({@link JobSettings#redis}) and those of {@code query}, {@code top}, {@code demo} and {@code rebuild-redis}.
 *
 * @param url {@code --redis}, else {@code $ROLLCOUNT_REDIS}, else {@value RedisOptions#DEFAULT_URL}
 * @param cluster {@code --redis.cluster}: the URL lists seed nodes of a Redis Cluster
 * @param passwordFile {@code --redis.password-file}, or null
 * @param keyPrefix {@code --redis.key-prefix}
 */
public record RedisSettings(String url, boolean cluster, String passwordFile, String keyPrefix)
        implements Serializable {

    /** The key names under {@code --redis.key-prefix}; fails naming the option on a prefix {@link RedisKeys#checkPrefix} refuses. */
    public RedisKeys keys() {
        return new RedisKeys(keyPrefix);
    }

    /**
     * Checks the key prefix and the URL's scheme, failing with an {@link IllegalArgumentException} that names the
     * option; the rest of the URL is checked where the endpoint is made ({@link JobConnectors#redisEndpoint}).
     */
    public RedisSettings check() {
        RedisKeys.checkPrefix(keyPrefix);
        if (!url.startsWith("redis://") && !url.startsWith("rediss://")) {
            throw new IllegalArgumentException("--redis must be a redis:// or rediss:// URL");
        }
        return this;
    }
}
