package io.rollcount.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Whether a size's Redis keys fit the Redis server, so that the tail scenario writes them rather than discarding
 * them: the keys are estimated at the bytes per counter measured at the last size written (else
 * {@link #DEFAULT_BYTES_PER_COUNTER}, the growth bench's figure) and may take at most {@link #SHARE} of the room:
 * {@code maxmemory} less {@code used_memory} where Redis has a limit, else, for a Redis on this machine, the
 * memory available now ({@code MemAvailable} of {@code /proc/meminfo}: the job, the broker and Redis share it),
 * else its machine's {@code total_system_memory} less {@code used_memory}.
 */
record RedisRoom(long roomBytes, String from) {
    /** Redis bytes per counter assumed before a size has measured it (the growth bench measured 1,249 to 1,401). */
    static final double DEFAULT_BYTES_PER_COUNTER = 1_500;
    /** The share of the room a size's keys may take. */
    static final double SHARE = 0.5;

    static RedisRoom of(RedisInfo info, boolean redisOnThisMachine, long memAvailable) {
        long used = info.usedMemory();
        if (info.maxMemory() > 0) return new RedisRoom(info.maxMemory() - used, "maxmemory less used_memory");
        if (redisOnThisMachine && memAvailable > 0) return new RedisRoom(memAvailable, "MemAvailable of this machine");
        return new RedisRoom(info.totalSystemMemory() - used, "total_system_memory less used_memory");
    }

    /** Whether {@code counters} at {@code bytesPerCounter} take at most {@link #SHARE} of the room. */
    boolean fits(long counters, double bytesPerCounter) {
        return counters * bytesPerCounter <= SHARE * roomBytes;
    }

    /** One line for the output: the estimate, the room and the decision. */
    String describe(long counters, double bytesPerCounter) {
        return String.format(
                Locale.ROOT,
                "Redis keys of %d counters estimated at %.1f GB (%.0f bytes per counter), %s %.1f GB: %s",
                counters,
                counters * bytesPerCounter / 1e9,
                bytesPerCounter,
                from,
                roomBytes / 1e9,
                fits(counters, bytesPerCounter) ? "written" : "discarded (more than half of it)");
    }

    /** {@code MemAvailable} of {@code /proc/meminfo} in bytes; -1 where it cannot be read. */
    static long memAvailable() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemAvailable:")) {
                    String kb = line.substring("MemAvailable:".length())
                            .replace("kB", "")
                            .trim();
                    return Long.parseLong(kb) * 1024;
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
