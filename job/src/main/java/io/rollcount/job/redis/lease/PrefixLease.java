package io.rollcount.job.redis.lease;

import io.rollcount.job.redis.PrefixGuard;
import io.rollcount.job.redis.PrefixInUseException;
import io.rollcount.job.redis.internal.RedisErrors;
import io.rollcount.job.redis.internal.RetryingConnection;
import io.rollcount.job.redis.internal.SinkMetrics;
import io.rollcount.job.util.IoThreadOnly;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.flink.runtime.execution.SuppressRestartsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The lease of the job's sink writers: taken on the writer's I/O thread before its first batch, renewed every
 * {@link PrefixGuard#LEASE_RENEWAL}, given up when the writer closes. A lease held by another token fails the
 * job with restarts suppressed: restarting would only meet the same job again. A restored writer first waits up
 * to the lease's expiry (the run it continues may have died without giving it up, and after a rescale a writer
 * restores no token while its siblings do). A writer that restores nothing may also refuse a prefix another job
 * has written ({@link PrefixGuard#otherJobsMark}).
 */
public final class PrefixLease implements LeaseHolder {
    private static final Logger LOG = LoggerFactory.getLogger(PrefixLease.class);

    private final PrefixGuard guard;
    private final String token;
    /** Until when a restored writer waits for a lease held by another token (0: it does not wait). */
    private final long waitUntil;
    /** Whether this writer, restoring nothing, refuses an earlier job's prefix before its first lease. */
    private final boolean checksEarlierJob;

    private final RetryingConnection connection;
    private final ExecutorService io;
    private final SinkMetrics metrics;

    /** When the last renewal was queued (mailbox thread only). */
    private long renewedAt = Long.MIN_VALUE;
    /** Whether this writer has held the lease. */
    @IoThreadOnly
    private boolean held;
    /** Set by the mailbox thread at close, read by the I/O thread's wait for the lease. */
    private volatile boolean closing;
    /** Set by the I/O thread when another job holds the lease; thrown by the task thread. */
    private volatile RuntimeException lost;

    /**
     * @param restored whether the job restores a checkpoint or savepoint: then a lease held by another token is
     *     waited for, up to its expiry
     * @param refusesEarlierJob whether a writer that restores nothing refuses a prefix another job has written
     */
    public PrefixLease(
            PrefixGuard guard,
            String token,
            boolean restored,
            boolean refusesEarlierJob,
            RetryingConnection connection,
            ExecutorService io,
            SinkMetrics metrics) {
        this.guard = guard;
        this.token = token;
        this.waitUntil = restored ? System.currentTimeMillis() + PrefixGuard.LEASE_TTL.toMillis() + 5_000 : 0;
        this.checksEarlierJob = refusesEarlierJob && !restored;
        this.connection = connection;
        this.io = io;
        this.metrics = metrics;
    }

    @Override
    public String token() {
        return token;
    }

    @Override
    public void renewIfDue(long now) {
        checkHeld();
        if (renewedAt != Long.MIN_VALUE && now - renewedAt < PrefixGuard.LEASE_RENEWAL.toMillis()) return;
        renewedAt = now;
        io.submit(this::renew);
    }

    @Override
    public void checkHeld() {
        RuntimeException l = lost;
        if (l != null) throw l;
    }

    @Override
    public void retake(UnifiedJedis client) {
        if (lost != null) return;
        metrics.commands(1);
        guard.acquire(client, token);
    }

    /** Takes or renews the lease; a transient Redis failure is left to the next renewal and to the batches' retries. */
    @IoThreadOnly
    private void renew() {
        while (true) {
            String holder;
            try {
                if (checksEarlierJob && !held && refusedForEarlierJob()) return;
                metrics.commands(1);
                holder = guard.acquire(connection.get(), token);
            } catch (JedisException e) {
                connection.close();
                LOG.warn(
                        "renewing the lease of key prefix '{}' at {} failed ({}); retrying in {} s",
                        guard.prefix(),
                        connection.endpoint(),
                        RedisErrors.describe(e, connection.endpoint()),
                        PrefixGuard.LEASE_RENEWAL.toSeconds());
                return;
            }
            if (holder == null) {
                held = true;
                return;
            }
            // A restored writer whose lease is still held (by the crashed run it continues, or by a sibling
            // that restored the token while this one, after a rescale, restored none) waits for it to expire.
            if (!held && System.currentTimeMillis() < waitUntil && !closing) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                continue;
            }
            LOG.warn("key prefix '{}': the lease is held by another job (token {})", guard.prefix(), holder);
            lost = new SuppressRestartsException(new PrefixInUseException(guard.inUse()));
            return;
        }
    }

    /** Before the first lease: whether another job's mark is on the prefix (then the job fails). */
    @IoThreadOnly
    private boolean refusedForEarlierJob() {
        metrics.commands(1);
        String other = guard.otherJobsMark(connection.get(), token);
        if (other == null) return false;
        LOG.warn("key prefix '{}' holds the counts of an earlier job (token {})", guard.prefix(), other);
        lost = new SuppressRestartsException(new PrefixInUseException(guard.startedOverEarlierJob()));
        return true;
    }

    @Override
    public void release() throws InterruptedException {
        closing = true;
        if (lost != null) return;
        try {
            io.submit(() -> guard.release(connection.get(), token)).get(2, TimeUnit.SECONDS);
        } catch (ExecutionException | TimeoutException | RejectedExecutionException e) {
            LOG.info(
                    "could not give up the lease of key prefix '{}' (it expires within {} s): {}",
                    guard.prefix(),
                    PrefixGuard.LEASE_TTL.toSeconds(),
                    e.toString());
        }
    }
}
