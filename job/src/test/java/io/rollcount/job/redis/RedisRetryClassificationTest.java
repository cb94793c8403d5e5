package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.redis.internal.RedisErrors;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisAskDataException;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisMovedDataException;

/**
 * Which Redis errors the sink's writer retries (a failover, a slot migration, a server briefly unable to
 * serve) and which fail at once: the replies are Redis's own, as Jedis reports them.
 */
class RedisRetryClassificationTest {
    @Test
    void clusterRedirectionsAndTopologyFailuresAreRetried() {
        HostAndPort node = new HostAndPort("127.0.0.1", 7001);
        assertThat(RedisErrors.isTransient(new JedisMovedDataException("MOVED 3999 127.0.0.1:7001", node, 3999)))
                .isTrue();
        assertThat(RedisErrors.isTransient(new JedisAskDataException("ASK 3999 127.0.0.1:7001", node, 3999)))
                .isTrue();
        assertThat(RedisErrors.isRedirection(new JedisMovedDataException("MOVED 3999 127.0.0.1:7001", node, 3999)))
                .isTrue();
        assertThat(RedisErrors.isTransient(new JedisDataException("CLUSTERDOWN The cluster is down")))
                .isTrue();
        assertThat(RedisErrors.isTransient(
                        new JedisDataException("TRYAGAIN Multiple keys request during rehashing of slot")))
                .isTrue();
        assertThat(RedisErrors.isTransient(
                        new JedisDataException("NOREPLICAS no replica of 127.0.0.1:7001 acknowledged the batch")))
                .isTrue();
        assertThat(RedisErrors.isTransient(new JedisClusterOperationException("No more cluster attempts left.")))
                .isTrue();
        assertThat(RedisErrors.isTransient(new JedisConnectionException("Failed to connect to 127.0.0.1:7001.")))
                .isTrue();
    }

    @Test
    void refusalsThatWaitingCannotCureFailAtOnce() {
        assertThat(RedisErrors.isTransient(new JedisAccessControlException("WRONGPASS invalid username-password pair")))
                .isFalse();
        assertThat(RedisErrors.isTransient(
                        new JedisDataException("NOPERM this user has no permissions to run the 'wait' command")))
                .isFalse();
        assertThat(RedisErrors.isTransient(
                        new JedisDataException("CROSSSLOT Keys in request don't hash to the same slot")))
                .isFalse();
        assertThat(RedisErrors.isRedirection(new JedisDataException("ERR unknown command")))
                .isFalse();
    }
}
