package io.rollcount.job.redis;

import io.rollcount.job.redis.internal.RedisScript;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import redis.clients.jedis.UnifiedJedis;

/**
 * Who owns a key prefix. The totals of a prefix are only right if one job writes them, continuing from its
 * own state: a job that starts empty over another job's keys writes smaller values that the never-backwards
 * rule skips (the totals silently stay those of the earlier job), and two jobs on one prefix overwrite each
 * other's values. So:
 * <ul>
 *   <li>The job's Redis sink holds a lease, {@code P:_lease} = the job's token, expiring {@link #LEASE_TTL}
 *       after its last renewal (every {@link #LEASE_RENEWAL}; see {@link io.rollcount.job.redis.lease.PrefixLease}); a
 *       second job finds it held and is refused.
 *       The token is kept in the sink's writer state, so a job restored from a checkpoint or savepoint takes
 *       the lease back. A job that got past that check (started at the same moment) and whose writers find
 *       the lease held fails with a {@link PrefixInUseException} of the same line, restarts suppressed.
 *   <li>The first lease also writes {@code P:_job:{P:_lease}} = the token, never expiring: a mark that a job
 *       has written under the prefix (its hash tag puts it in the slot of {@code P:_lease}, so that one script
 *       writes both in a Redis Cluster). {@link #earlierJob} finds it (or, for prefixes of earlier versions,
 *       {@code P:_job}, {@code P:meta:watermark}, {@code P:_mark} or {@code P:_lineage}), and a start without a checkpoint is
 *       refused unless the operator says {@code --fresh}.
 * </ul>
 */
public final class PrefixGuard {
    public static final Duration LEASE_TTL = Duration.ofSeconds(30);
    public static final Duration LEASE_RENEWAL = Duration.ofSeconds(5);

    /** Takes or renews the lease: returns 1, or the other holder's token ({@code lease-acquire.lua}). */
    private static final RedisScript ACQUIRE = RedisScript.resource("lease-acquire.lua");
    /** Gives the lease up if this token holds it ({@code lease-release.lua}). */
    private static final RedisScript RELEASE = RedisScript.resource("lease-release.lua");

    private final RedisKeys keys;

    public PrefixGuard(String prefix) {
        this.keys = new RedisKeys(prefix);
    }

    public String prefix() {
        return keys.prefix();
    }

    /** Takes or renews the lease for {@code token}; returns null, or the token of the job that holds it. */
    public String acquire(UnifiedJedis jedis, String token) {
        Object r = ACQUIRE.eval(
                jedis, List.of(keys.lease(), keys.job()), List.of(token, String.valueOf(LEASE_TTL.toMillis())));
        return r instanceof Long ? null : String.valueOf(r);
    }

    /** Gives the lease up if {@code token} holds it. */
    public void release(UnifiedJedis jedis, String token) {
        RELEASE.eval(jedis, List.of(keys.lease()), List.of(token));
    }

    /**
     * Why a job may not start on this prefix, as one line, or null if it may: the lease is held by another
     * token ({@code ownToken} null: any token, unless restoring), or ({@code restoring} false) an earlier job's keys are there and {@code fresh} is not given.
     *
     * @param resumeHint how this job would be resumed, for the message ({@code --resume PATH}, {@code flink run -s PATH})
     */
    public String refusal(UnifiedJedis jedis, boolean restoring, boolean fresh, String ownToken, String resumeHint) {
        String holder = leaseHolder(jedis);
        // A restored job of unknown token (flink run -s) is left to its writers: they take the lease back with
        // the token in their state, or wait for it to expire, or fail the job.
        if (holder != null && (ownToken != null ? !holder.equals(ownToken) : !restoring)) return inUse();
        if (restoring || fresh) return null;
        String found = earlierJob(jedis);
        return found == null ? null : earlierJobRefusal(found, resumeHint);
    }

    /** The refusal of a job that would start empty over an earlier job's keys ({@code found} exists): one line. */
    public String earlierJobRefusal(String found, String resumeHint) {
        return "key prefix '" + prefix() + "' holds the counts of an earlier job (" + found
                + " exists) and this job would start"
                + " empty: its smaller totals would never replace the larger ones. Resume that job (" + resumeHint
                + "), choose a new --redis.key-prefix, or give --fresh to delete the prefix's keys and count from zero";
    }

    /** The token in the prefix's job mark if it is not {@code token} (another job has written here), or null. */
    public String otherJobsMark(UnifiedJedis jedis, String token) {
        String mark = jedis.get(keys.job());
        return mark != null && !mark.equals(token) ? mark : null;
    }

    /**
     * The refusal of a writer that restores nothing and finds another job's mark ({@link #otherJobsMark}): one
     * line, for a job started without the client's check (an application cluster).
     */
    public String startedOverEarlierJob() {
        return "key prefix '" + prefix() + "' holds the counts of an earlier job (" + keys.job()
                + " names another job) and this job started without its checkpoint: its smaller totals would never"
                + " replace the larger ones. Start it from that job's checkpoint or savepoint (execution.savepoint.path,"
                + " the operator's initialSavepointPath), or choose a new --redis.key-prefix";
    }

    /** The refusal of a job that finds the lease held by another: one line that says what to do. */
    public String inUse() {
        return "key prefix '" + prefix() + "' is in use by a running job (lease " + keys.lease() + ", renewed every "
                + LEASE_RENEWAL.toSeconds() + " s, gone " + LEASE_TTL.toSeconds()
                + " s after that job stops): stop it, or give this job its own --redis.key-prefix";
    }

    /** The token of the job holding the lease, or null. */
    public String leaseHolder(UnifiedJedis jedis) {
        return jedis.get(keys.lease());
    }

    /** The first key found that shows another job has written under the prefix, or null for a prefix never used. */
    public String earlierJob(UnifiedJedis jedis) {
        for (String k :
                List.of(keys.job(), keys.lease(), keys.watermark(), keys.mark(), keys.jobBefore(), keys.lineage())) {
            if (jedis.exists(k)) return k;
        }
        return null;
    }

    /**
     * {@code --fresh}: deletes every key of the prefix's layout ({@code P:{*}}, {@code P:top:*}, {@code P:trending:*},
     * {@code P:meta:*}, {@code P:_*}) so that its values restart from what the new job counts, on every
     * master of a Redis Cluster; returns how many.
     */
    public long clear(RedisEndpoint endpoint) {
        List<String> heads = keys.layoutHeads();
        long[] deleted = {0};
        // one pass over each node's keyspace (SCAN visits every key whatever the pattern), the layout checked here
        RedisNodes.scan(endpoint, keys.everyKeyPattern(), (node, page) -> {
            List<String> found = new ArrayList<>();
            for (String k : page) {
                if (heads.stream().anyMatch(k::startsWith)) found.add(k);
            }
            if (!found.isEmpty()) deleted[0] += RedisNodes.unlinkEach(node, found);
        });
        return deleted[0];
    }
}
