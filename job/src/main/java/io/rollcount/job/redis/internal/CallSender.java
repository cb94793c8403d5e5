package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisSinkException;
import java.util.List;

/** Sends script calls of {@code apply.lua} alone, pipelined, in a round trip of their own (I/O thread). */
@FunctionalInterface
public interface CallSender {
    void send(List<RedisApplyScript.Call> calls) throws RedisSinkException;

    /** Sends one call. */
    default void send(RedisApplyScript.Call call) throws RedisSinkException {
        send(List.of(call));
    }
}
