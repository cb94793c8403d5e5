package io.rollcount.job.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/** Shared helpers: a random key prefix per test, its cleanup, and writers driven directly. */
final class RedisTestSupport {
    static final String SHARED_URL = "redis://127.0.0.1:6379";

    private RedisTestSupport() {}

    static String randomPrefix() {
        return "rctest" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    /** Every key under {@code prefix:}. */
    static List<String> keysOf(Jedis jedis, String prefix) {
        List<String> keys = new ArrayList<>();
        String cursor = ScanParams.SCAN_POINTER_START;
        ScanParams params = new ScanParams().match(prefix + ":*").count(1000);
        do {
            ScanResult<String> r = jedis.scan(cursor, params);
            keys.addAll(r.getResult());
            cursor = r.getCursor();
        } while (!cursor.equals(ScanParams.SCAN_POINTER_START));
        return keys;
    }

    static void deleteAll(Jedis jedis, String prefix) {
        for (String k : keysOf(jedis, prefix)) jedis.del(k);
    }

    static RedisSinkWriter writer(RedisSink sink, TestWriterContext ctx) throws Exception {
        return (RedisSinkWriter) sink.createWriter(ctx);
    }
}
