package io.rollcount.job.redis;

import java.util.UUID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;

/**
 * The prefix's epoch key {@code P:_epoch} ({@link RedisKeys#epoch()}): a random token that the first writer or
 * operator to find it missing creates with {@code SET NX}, and that nothing changes after. Redis keeps it
 * across a restart with persistence (RDB or AOF) and across a failover to a replica that had it; it is gone
 * after a restart without persistence, a failover to a replica that lagged behind its creation, or a
 * {@code FLUSHALL}/{@code FLUSHDB}. Whoever knew the token and finds it missing or different knows that Redis
 * lost the job's data: its keys hold nothing of what was written before (see {@link RedisLossWatch} and
 * {@link RedisSinkWriter}).
 *
 * <p>In a Redis Cluster the key lives on the master of one slot: the loss of that node's data is seen, the
 * loss of another master's alone is not.
 */
public final class RedisEpoch {
    private RedisEpoch() {}

    /** The token now at {@code key}, created first if missing (2 commands). */
    public static String ensure(UnifiedJedis jedis, String key) {
        jedis.set(key, UUID.randomUUID().toString(), SetParams.setParams().nx());
        String token = jedis.get(key);
        if (token == null)
            throw new redis.clients.jedis.exceptions.JedisDataException(
                    "ERR rollcount: " + key + " vanished right after SET NX");
        return token;
    }
}
