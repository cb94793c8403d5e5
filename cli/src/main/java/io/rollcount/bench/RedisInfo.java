package io.rollcount.bench;

import java.util.HashMap;
import java.util.Map;

/**
 * The fields of a Redis {@code INFO} reply the benchmark reads: the server's CPU time ({@code used_cpu_user}
 * + {@code used_cpu_sys}, seconds) and its memory ({@code used_memory}, {@code maxmemory},
 * {@code total_system_memory}, bytes). Lines are {@code name:value},
 * sections start with {@code #}.
 */
final class RedisInfo {
    private final Map<String, String> fields;

    private RedisInfo(Map<String, String> fields) {
        this.fields = fields;
    }

    static RedisInfo parse(String info) {
        Map<String, String> fields = new HashMap<>();
        for (String line : info.split("\r?\n")) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            int colon = line.indexOf(':');
            if (colon > 0)
                fields.put(line.substring(0, colon), line.substring(colon + 1).trim());
        }
        return new RedisInfo(fields);
    }

    /** User plus system CPU of the server process since it started, in seconds. */
    double cpuSeconds() {
        return number("used_cpu_user") + number("used_cpu_sys");
    }

    /** Bytes the server's allocator holds for data and its own structures ({@code used_memory}). */
    long usedMemory() {
        return (long) number("used_memory");
    }

    /** The server's memory limit ({@code maxmemory}, bytes); 0: none. */
    long maxMemory() {
        return (long) number("maxmemory");
    }

    /** The memory of the server's machine ({@code total_system_memory}, bytes). */
    long totalSystemMemory() {
        return (long) number("total_system_memory");
    }

    private double number(String name) {
        String v = fields.get(name);
        if (v == null) throw new IllegalArgumentException("INFO has no field " + name);
        try {
            return Double.parseDouble(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("INFO field " + name + " is not a number: " + v);
        }
    }
}
