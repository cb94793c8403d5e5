package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.redis.internal.RedisErrors;
import org.junit.jupiter.api.Test;

/** The one line of a Redis Cluster that is down: the slots no live master covers, from {@code CLUSTER NODES}. */
class RedisClusterDownExceptionTest {
    private static final String A = "a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-5460\n";
    private static final String B = "b1 127.0.0.1:7002@17002 master,fail - 1 1 2 disconnected 5461-10922\n";
    private static final String C = "c1 127.0.0.1:7003@17003 master - 0 0 3 connected 10923-16383\n";
    private static final String REPLICA = "d1 127.0.0.1:7004@17004 slave,fail b1 1 1 2 disconnected\n";
    private static final String TO_DO =
            "; give every slot a live master (redis-cli --cluster fix 127.0.0.1:7001) and start again";

    @Test
    void theSlotsOfAFailedMasterAreNotCovered() {
        assertThat(RedisClusterDownException.of("127.0.0.1:7001", A + B + C + REPLICA))
                .isInstanceOf(redis.clients.jedis.exceptions.JedisClusterOperationException.class)
                .hasMessage("Redis Cluster at 127.0.0.1:7001 is down: slots 5461-10922 are not covered (CLUSTERDOWN)"
                        + TO_DO);
    }

    @Test
    void slotsNoMasterClaimsAreNotCovered() {
        String nodes = "a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-99 101-5460 [5000->-c1]\n"
                + "c1 127.0.0.1:7003@17003 master,fail? - 0 0 3 connected 10923-16383\n";
        assertThat(RedisClusterDownException.of("127.0.0.1:7001", nodes))
                .hasMessage(
                        "Redis Cluster at 127.0.0.1:7001 is down: slots 100, 5461-10922 are not covered (CLUSTERDOWN)"
                                + TO_DO);
        assertThat(RedisClusterDownException.of("127.0.0.1:7001", A.replace("0-5460", "0-5460 5462-16383")))
                .hasMessageStartingWith(
                        "Redis Cluster at 127.0.0.1:7001 is down: slot 5461 is not covered (CLUSTERDOWN)");
        StringBuilder gappy = new StringBuilder("a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected");
        for (int s = 0; s < 16384; s += 2) gappy.append(' ').append(s);
        assertThat(RedisClusterDownException.of("127.0.0.1:7001", gappy.toString()))
                .hasMessageStartingWith(
                        "Redis Cluster at 127.0.0.1:7001 is down: slots 1, 3, 5, 7, 9 and 8187 more ranges are not covered");
    }

    @Test
    void everySlotCoveredIsAMinorityNode() {
        assertThat(RedisClusterDownException.of("127.0.0.1:7001", A + B.replace("master,fail", "master") + C))
                .hasMessage("Redis Cluster at 127.0.0.1:7001 is down: every slot has a master, but this node does not"
                        + " reach a majority of them (CLUSTERDOWN)" + TO_DO);
    }

    @Test
    void aWriterRetriesIt() {
        assertThat(RedisErrors.isTransient(RedisClusterDownException.of("127.0.0.1:7001", A)))
                .isTrue();
    }
}
