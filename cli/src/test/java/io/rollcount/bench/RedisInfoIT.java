package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.support.RedisTestSupport;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.Jedis;

/** Reading CPU and memory from INFO: a reply as Redis 7 sends it, the real server's, and a reply without the field. */
class RedisInfoIT {

    @Test
    void readsCpuAndMemoryFields() {
        String info =
                "# Memory\r\nused_memory:1234567\r\nused_memory_human:1.18M\r\n\r\n# CPU\r\nused_cpu_sys:12.500000\r\n"
                        + "used_cpu_user:30.250000\r\nused_cpu_sys_children:1.000000\r\n";
        RedisInfo parsed = RedisInfo.parse(info);
        assertThat(parsed.usedMemory()).isEqualTo(1_234_567L);
        assertThat(parsed.cpuSeconds()).isEqualTo(42.75);
    }

    @Test
    void readsTheRealServer() {
        int port = RedisTestSupport.PORT;
        try (Jedis jedis = new Jedis("127.0.0.1", port)) {
            assertThat(RedisInfo.parse(jedis.info("memory")).usedMemory()).isPositive();
            assertThat(RedisInfo.parse(jedis.info("cpu")).cpuSeconds()).isPositive();
        }
    }

    @Test
    void aMissingFieldIsNamed() {
        assertThatThrownBy(
                        () -> RedisInfo.parse("# CPU\r\nused_cpu_sys:1.0\r\n").cpuSeconds())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("used_cpu_user");
        assertThatThrownBy(() -> RedisInfo.parse("used_memory:lots\r\n").usedMemory())
                .hasMessageContaining("used_memory")
                .hasMessageContaining("lots");
    }
}
