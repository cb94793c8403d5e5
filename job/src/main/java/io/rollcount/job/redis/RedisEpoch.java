package io.rollcount.job.redis;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.UUID;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * The prefix's epoch key {@code P:_epoch} ({@link RedisKeys#epoch()}): a random token that the first writer or
 * operator to find it missing creates with {@code SET NX}, and that nothing changes after. Redis keeps it
 * across a restart with persistence (RDB or AOF) and across a failover to a replica that had it; it is gone
 * after a restart without persistence, a failover to a replica that lagged behind its creation, or a
 * {@code FLUSHALL}/{@code FLUSHDB}. Whoever knew the token and finds it missing or different knows that Redis
 * lost the job's data: its keys hold nothing of what was written before (see {@link RedisLossWatch} and
 * {@link RedisSinkWriter}).
 *
 * <p>In a Redis Cluster one key lives on the master of one slot, and a master can lose its data alone (restarted
 * empty, or its slots failed over to a replica that lagged): so every master holds an epoch key of its own as
 * well, {@code P:_epoch:{n}} ({@link #keys}), where {@code n} is the smallest non-negative integer whose hash
 * slot that master serves. Whoever checks reads every master's key, and computes them again when the slot map
 * changes (a new key is created with {@code SET NX}; only a key it knew that is gone or changed is a loss).
 */
public final class RedisEpoch {
    private RedisEpoch() {}

    /**
     * The epoch keys to check through {@code client}: {@code P:_epoch}, and in a Redis Cluster one
     * {@code P:_epoch:{n}} per master that serves slots, in the slot map the client's nodes report now.
     */
    public static List<String> keys(UnifiedJedis client, String epochKey) {
        List<Object> slots = RedisNodes.clusterSlots(client);
        if (slots == null) return List.of(epochKey);
        List<String> out = new ArrayList<>();
        out.add(epochKey);
        for (BitSet served : RedisNodes.masterSlots(slots)) {
            String k = masterKey(epochKey, served);
            if (!out.contains(k)) out.add(k);
        }
        return out;
    }

    /** {@code P:_epoch:{n}} for the smallest {@code n >= 0} whose hash slot is among {@code slots}. */
    static String masterKey(String epochKey, BitSet slots) {
        for (int n = 0; ; n++) {
            String tag = Integer.toString(n);
            if (slots.get(JedisClusterCRC16.getSlot(tag))) return epochKey + ":{" + tag + "}";
        }
    }

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
