package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.BitSet;
import java.util.List;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.util.JedisClusterCRC16;

/** The per-master epoch keys of a Redis Cluster: from the slot map to one key per master, in that master's slots. */
class RedisEpochTest {
    private static List<Object> range(long from, long to, String host, long port) {
        return List.of(from, to, List.of(host.getBytes(StandardCharsets.UTF_8), port, "id".getBytes()));
    }

    @Test
    void oneKeyPerMasterInASlotItServes() {
        // the slot map of `redis-cli --cluster create` with 3 masters; the third serves two ranges
        List<Object> slots = List.of(
                range(0, 5460, "127.0.0.1", 7000),
                range(5461, 10922, "127.0.0.1", 7001),
                range(10923, 16000, "127.0.0.1", 7002),
                range(16001, 16383, "127.0.0.1", 7002));
        List<BitSet> masters = RedisNodes.masterSlots(slots);
        assertThat(masters).hasSize(3);
        assertThat(masters.get(2).cardinality()).isEqualTo(16383 - 10923 + 1);
        List<String> keys =
                masters.stream().map(m -> RedisEpoch.masterKey("rc:_epoch", m)).toList();
        assertThat(keys).containsExactly("rc:_epoch:{3}", "rc:_epoch:{1}", "rc:_epoch:{0}");
        for (int i = 0; i < 3; i++) {
            assertThat(masters.get(i).get(JedisClusterCRC16.getSlot(keys.get(i))))
                    .as(keys.get(i) + " in a slot of its master")
                    .isTrue();
        }
        // after a migration of slot 1584 (where {3} hashes) to the second master, the first gets another key
        BitSet first = (BitSet) masters.get(0).clone();
        first.clear(1584);
        assertThat(RedisEpoch.masterKey("rc:_epoch", first)).isEqualTo("rc:_epoch:{7}");
    }
}
