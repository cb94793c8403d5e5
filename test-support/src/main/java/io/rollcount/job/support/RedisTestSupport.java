package io.rollcount.job.support;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.ScanParams;
import redis.clients.jedis.resps.ScanResult;

/**
 * The real Redis of the machine (127.0.0.1:6379, or the port $ROLLCOUNT_TEST_REDIS_PORT), with a key prefix of each
 * test's own. As a JUnit extension ({@code @RegisterExtension final RedisTestSupport redis = new RedisTestSupport();},
 * one per test instance) it deletes the prefix's keys and closes its connection after each test. Tests that drive
 * the writers themselves take {@link #SHARED_URL}, a {@link #randomPrefix()} and {@link #deleteAll} from here.
 */
public final class RedisTestSupport implements AutoCloseable, AfterEachCallback {
    /** The port of the machine's Redis. */
    public static final int PORT = Integer.parseInt(System.getenv().getOrDefault("ROLLCOUNT_TEST_REDIS_PORT", "6379"));

    /** The URL of the machine's Redis. */
    public static final String SHARED_URL = "redis://127.0.0.1:" + PORT;

    public final String host;
    public final int port;
    public final String prefix;
    public final Jedis jedis;

    public RedisTestSupport() {
        this.host = "127.0.0.1";
        this.port = PORT;
        this.prefix = "rct" + UUID.randomUUID().toString().substring(0, 8);
        this.jedis = new Jedis(host, port);
        jedis.ping();
    }

    public String url() {
        return "redis://" + host + ":" + port;
    }

    /** A key prefix no other test uses. */
    public static String randomPrefix() {
        return "rctest" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
    }

    /** Every key under the prefix. */
    public List<String> keys() {
        return keysOf(jedis, prefix);
    }

    /** Every key under {@code prefix:}, by SCAN. */
    public static List<String> keysOf(redis.clients.jedis.commands.KeyCommands jedis, String prefix) {
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

    /** Deletes every key under {@code prefix:}. */
    public static void deleteAll(redis.clients.jedis.commands.KeyCommands jedis, String prefix) {
        List<String> keys = keysOf(jedis, prefix);
        for (int i = 0; i < keys.size(); i += 500) {
            jedis.del(keys.subList(i, Math.min(keys.size(), i + 500)).toArray(String[]::new));
        }
    }

    @Override
    public void afterEach(ExtensionContext context) {
        close();
    }

    @Override
    public void close() {
        List<String> keys = keys();
        for (int i = 0; i < keys.size(); i += 500) {
            jedis.del(keys.subList(i, Math.min(keys.size(), i + 500)).toArray(String[]::new));
        }
        jedis.close();
    }
}
