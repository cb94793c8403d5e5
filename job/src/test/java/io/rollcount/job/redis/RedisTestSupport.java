package io.rollcount.job.redis;

import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/** Shared helpers: a random key prefix per test, its cleanup, and writers driven directly. */
final class RedisTestSupport {
    static final String SHARED_URL = "redis://127.0.0.1:6379";

    private RedisTestSupport() {}

    static String randomPrefix() {
        return "rctest" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    /** Every key under {@code prefix:}. */
    static List<String> keysOf(redis.clients.jedis.commands.KeyCommands jedis, String prefix) {
        return io.rollcount.job.support.RedisTestSupport.keysOf(jedis, prefix);
    }

    static void deleteAll(redis.clients.jedis.commands.KeyCommands jedis, String prefix) {
        io.rollcount.job.support.RedisTestSupport.deleteAll(jedis, prefix);
    }

    static RedisSinkWriter writer(RedisSink sink, TestWriterContext ctx) throws Exception {
        return (RedisSinkWriter) sink.createWriter(ctx);
    }
}
