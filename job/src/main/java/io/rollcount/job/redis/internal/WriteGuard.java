package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisSinkException;
import io.rollcount.job.redis.RedisWrite;
import java.util.List;
import redis.clients.jedis.UnifiedJedis;

/**
 * Which COUNT writes go through the script (never backwards) rather than as a plain {@code SET}: those a replay
 * may have reached. Used by the writer's I/O thread. {@link MarkGuard} is the job's; {@link #NEVER} guards
 * nothing (every COUNT plain, no mark: the benchmark's floor of Redis's cost, {@code setPlainWritesOnly}).
 */
public interface WriteGuard extends RetryingConnection.Listener {
    /** Guards nothing, keeps no mark. */
    WriteGuard NEVER = new WriteGuard() {
        @Override
        public void connected(UnifiedJedis client) {}

        @Override
        public boolean connectsEarly() {
            return false;
        }

        @Override
        public boolean guarded(RedisWrite w) {
            return false;
        }

        @Override
        public void beforeWrites(List<RedisWrite> writes, CallSender send) {}

        @Override
        public void applied(RedisWrite w) {}

        @Override
        public void dataLost(CallSender send) {}
    };

    /** Whether the writer connects ahead of its first batch, for the guard to read Redis's state early. */
    boolean connectsEarly();

    /** Whether the COUNT {@code w} goes through the script. */
    boolean guarded(RedisWrite w);

    /** Before a batch's writes are sent: what must be in Redis ahead of them. */
    void beforeWrites(List<RedisWrite> writes, CallSender send) throws RedisSinkException;

    /** A guarded COUNT the script applied: Redis was not ahead of it. */
    void applied(RedisWrite w);

    /** Redis lost the job's data: what the guard knew of Redis is made true again. */
    void dataLost(CallSender send) throws RedisSinkException;
}
