package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisSinkException;
import io.rollcount.job.util.IoThreadOnly;
import java.io.IOException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The writer's one client of Redis, used by its I/O thread alone, and the retries around it. {@link #get}
 * connects when there is no client, and runs every {@link Listener} on the new one (loading the script, reading
 * the mark, learning the epoch keys); {@link #retrying} runs an attempt and, on a transient failure
 * ({@link RedisErrors#isTransient}), closes the client (a cluster client made anew reads the topology afresh)
 * and retries it with exponential backoff until the retry timeout has passed.
 */
public final class RetryingConnection {
    private static final Logger LOG = LoggerFactory.getLogger(RetryingConnection.class);

    /** Something sent to Redis in one attempt; retried whole on a transient failure. */
    public interface Attempt {
        void run() throws RedisSinkException;
    }

    /** Told of each new client (I/O thread), before anything else uses it; and of each client closed. */
    public interface Listener {
        void connected(UnifiedJedis client);

        default void disconnected() {}
    }

    private final RedisEndpoint endpoint;
    private final long retryTimeoutMillis;
    private final long initialBackoffMillis;
    private final long maxBackoffMillis;
    private final SinkMetrics metrics;
    private final List<Listener> listeners;

    @IoThreadOnly
    private UnifiedJedis client;
    /** The lasting failure of {@link #connectEarly}, for the first attempt to fail with. */
    @IoThreadOnly
    private JedisException earlyFailure;

    public RetryingConnection(
            RedisEndpoint endpoint,
            long retryTimeoutMillis,
            long initialBackoffMillis,
            long maxBackoffMillis,
            SinkMetrics metrics,
            List<Listener> listeners) {
        this.endpoint = endpoint;
        this.retryTimeoutMillis = retryTimeoutMillis;
        this.initialBackoffMillis = initialBackoffMillis;
        this.maxBackoffMillis = maxBackoffMillis;
        this.metrics = metrics;
        this.listeners = List.copyOf(listeners);
    }

    public RedisEndpoint endpoint() {
        return endpoint;
    }

    /** The client, connected now (and the listeners run) if there is none. */
    @IoThreadOnly
    public UnifiedJedis get() {
        if (client == null) {
            UnifiedJedis j = endpoint.client();
            try {
                for (Listener l : listeners) l.connected(j);
            } catch (RuntimeException e) {
                j.close();
                throw e;
            }
            client = j;
        }
        return client;
    }

    /** Closes the client, if any; the next {@link #get} connects anew. */
    @IoThreadOnly
    public void close() {
        for (Listener l : listeners) l.disconnected();
        if (client != null) {
            try {
                client.close();
            } catch (RuntimeException e) {
                LOG.debug("closing the Redis connection to {} failed", endpoint, e);
            }
            client = null;
        }
    }

    /**
     * The first connection, ahead of the first batch. A transient failure is left to that batch's retries; any
     * other (refused credentials, an untrusted certificate) is kept for the batch to fail with at once, without
     * connecting again.
     */
    @IoThreadOnly
    public void connectEarly() {
        try {
            get();
        } catch (JedisException e) {
            close();
            if (!RedisErrors.isTransient(e)) earlyFailure = e;
            LOG.debug(
                    "connecting to Redis at {} ahead of the first batch failed ({})",
                    endpoint,
                    RedisErrors.describe(e, endpoint));
        }
    }

    /** Runs the attempt, retrying transient failures with backoff on a new connection until the retry timeout has passed. */
    @IoThreadOnly
    public void retrying(Attempt attempt) throws IOException, InterruptedException {
        if (earlyFailure != null) {
            JedisException e = earlyFailure;
            earlyFailure = null;
            throw RedisErrors.permanent(e, null, endpoint);
        }
        long deadline = System.nanoTime() + retryTimeoutMillis * 1_000_000;
        long backoff = initialBackoffMillis;
        int attempts = 0;
        while (true) {
            attempts++;
            try {
                attempt.run();
                if (attempts > 1) LOG.info("Redis at {} reachable again after {} attempts", endpoint, attempts);
                return;
            } catch (JedisException e) {
                // a redirection from a single server: it is a cluster node, and --redis.cluster is missing
                if (!RedisErrors.isTransient(e) || (!endpoint.cluster() && RedisErrors.isRedirection(e))) {
                    throw RedisErrors.permanent(e, null, endpoint);
                }
                close();
                metrics.retries.inc();
                long remainingMillis = (deadline - System.nanoTime()) / 1_000_000;
                if (remainingMillis <= 0) {
                    throw new RedisSinkException(
                            "Redis at " + endpoint + " still failing after retrying for " + retryTimeoutMillis + " ms ("
                                    + attempts + " attempts): " + RedisErrors.describe(e, endpoint),
                            RedisErrors.sanitized(e, endpoint));
                }
                long pause = Math.min(backoff, remainingMillis);
                LOG.warn(
                        "Redis at {} failed ({}); retry {} in {} ms",
                        endpoint,
                        RedisErrors.describe(e, endpoint),
                        attempts,
                        pause);
                Thread.sleep(pause);
                backoff = Math.min(backoff * 2, maxBackoffMillis);
            }
        }
    }
}
