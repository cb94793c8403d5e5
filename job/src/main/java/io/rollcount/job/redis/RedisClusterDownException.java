package io.rollcount.job.redis;

import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import redis.clients.jedis.exceptions.JedisClusterOperationException;

/**
 * A Redis Cluster down ({@code cluster_state:fail}: every command answers {@code CLUSTERDOWN}) on every seed
 * node reached, as {@link RedisEndpoint#checkMode} finds it before a job or command starts: one line naming the
 * node and the slots no live master covers. It is a {@link JedisClusterOperationException}, so a writer that
 * meets it at run time retries, as for any {@code CLUSTERDOWN}.
 */
public final class RedisClusterDownException extends JedisClusterOperationException {
    private static final long serialVersionUID = 1L;
    private static final int SLOTS = 16384;
    /** The most slot ranges named in the message. */
    private static final int RANGES_SHOWN = 5;

    private RedisClusterDownException(String message) {
        super(message);
    }

    /** The cluster is down as {@code node} says; {@code clusterNodes} is that node's {@code CLUSTER NODES}. */
    static RedisClusterDownException of(String node, String clusterNodes) {
        List<String> ranges = ranges(uncovered(clusterNodes));
        String what = ranges.isEmpty()
                ? "every slot has a master, but this node does not reach a majority of them (CLUSTERDOWN)"
                : describe(ranges) + " (CLUSTERDOWN)";
        return new RedisClusterDownException("Redis Cluster at " + node + " is down: " + what
                + "; give every slot a live master (redis-cli --cluster fix " + node + ") and start again");
    }

    /** The slots that no master without the {@code fail} flag serves, as {@code CLUSTER NODES} lists them. */
    static BitSet uncovered(String clusterNodes) {
        BitSet covered = new BitSet(SLOTS);
        for (String line : clusterNodes.split("\r?\n")) {
            String[] f = line.trim().split(" ");
            if (f.length < 9 || !hasFlag(f[2], "master") || hasFlag(f[2], "fail")) continue;
            for (int i = 8; i < f.length; i++) {
                if (f[i].startsWith("[")) continue; // a slot migrating or importing
                String[] range = f[i].split("-");
                int from = Integer.parseInt(range[0]);
                int to = range.length > 1 ? Integer.parseInt(range[1]) : from;
                covered.set(from, to + 1);
            }
        }
        BitSet uncovered = new BitSet(SLOTS);
        uncovered.set(0, SLOTS);
        uncovered.andNot(covered);
        return uncovered;
    }

    private static boolean hasFlag(String flags, String flag) {
        for (String f : flags.split(",")) {
            if (f.equals(flag)) return true;
        }
        return false;
    }

    /** {@code 5461-10922} or {@code 7} for each run of set bits. */
    static List<String> ranges(BitSet slots) {
        List<String> out = new ArrayList<>();
        for (int from = slots.nextSetBit(0); from >= 0; from = slots.nextSetBit(from + 1)) {
            int to = slots.nextClearBit(from) - 1;
            out.add(from == to ? Integer.toString(from) : from + "-" + to);
            from = to;
        }
        return out;
    }

    private static String describe(List<String> ranges) {
        boolean one = ranges.size() == 1 && !ranges.get(0).contains("-");
        String shown = String.join(", ", ranges.subList(0, Math.min(ranges.size(), RANGES_SHOWN)));
        if (ranges.size() > RANGES_SHOWN) shown += " and " + (ranges.size() - RANGES_SHOWN) + " more ranges";
        return (one ? "slot " : "slots ") + shown + (one ? " is" : " are") + " not covered";
    }
}
