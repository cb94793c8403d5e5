package io.rollcount.cli;

import io.rollcount.job.JobOptions;
import io.rollcount.job.RedisOptions;
import io.rollcount.job.RollcountJob;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.util.Messages;
import redis.clients.jedis.UnifiedJedis;

/**
 * The Redis options ({@link RedisOptions}, the job's own) of the commands that read what the job wrote or drive it
 * ({@code query}, {@code top}, {@code demo}), with the client they open.
 */
final class RedisReadOptions extends RedisOptions {
    private static final long serialVersionUID = 1L;

    /** These options set on the job's options. */
    void applyTo(JobOptions o) {
        o.redis = redis;
        o.redisCluster = redisCluster;
        o.redisPasswordFile = redisPasswordFile;
        o.redisKeyPrefix = redisKeyPrefix;
    }

    RedisEndpoint endpoint() {
        return RollcountJob.redisEndpoint(this);
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
