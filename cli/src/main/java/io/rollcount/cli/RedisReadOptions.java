package io.rollcount.cli;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.RedisOptions;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.util.Messages;
import redis.clients.jedis.UnifiedJedis;

/**
 * The Redis options ({@link RedisOptions}, the job's own) of the commands that read what the job wrote or drive it
 * ({@code query}, {@code top}, {@code demo}), with the client they open.
 */
final class RedisReadOptions extends RedisOptions {

    /** These options given to the job's settings {@code b}. */
    JobSettings.Builder applyTo(JobSettings.Builder b) {
        return b.set("--redis", redis)
                .set("--redis.cluster", redisCluster)
                .set("--redis.password-file", redisPasswordFile)
                .set("--redis.key-prefix", redisKeyPrefix);
    }

    /** The key names under {@code --redis.key-prefix}; fails naming the option on a prefix it refuses. */
    RedisKeys keys() {
        return toSettings().keys();
    }

    RedisEndpoint endpoint() {
        return JobConnectors.redisEndpoint(toSettings());
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
            throw new IllegalStateException("cannot reach Redis at " + endpoint + ": " + Messages.oneLine(e));
        }
    }
}
