package io.rollcount.cli;

import io.rollcount.job.JobOptions;
import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import picocli.CommandLine.Option;
import redis.clients.jedis.Jedis;

/** The Redis options of the commands that read what the job wrote ({@code query}, {@code top}). */
final class RedisReadOptions {
    @Option(names = "--redis", paramLabel = "URL", description = "Redis URL (default: $ROLLCOUNT_REDIS or redis://127.0.0.1:6379).")
    String redis;

    @Option(names = "--redis.password-file", paramLabel = "FILE", description = "Read the Redis password from this file (also: $ROLLCOUNT_REDIS_PASSWORD).")
    String passwordFile;

    @Option(names = "--redis.key-prefix", defaultValue = "rc", description = "Key prefix (default: ${DEFAULT-VALUE}).")
    String prefix = "rc";

    RedisKeys keys() {
        return new RedisKeys(prefix);
    }

    RedisEndpoint endpoint() {
        JobOptions o = new JobOptions();
        o.redis = redis;
        o.redisPasswordFile = passwordFile;
        return RedisEndpoint.fromOptions(o);
    }

    /** A connection that answered PING, or a one-line error naming the endpoint (password redacted). */
    Jedis connect() {
        RedisEndpoint endpoint = endpoint();
        try {
            Jedis j = endpoint.connect();
            j.ping();
            return j;
        } catch (RuntimeException e) {
            throw new IllegalStateException("cannot reach Redis at " + endpoint + ": " + Main.oneLine(e));
        }
    }
}
