package io.rollcount.job.redis;

import io.rollcount.job.model.Resolution;
import java.io.Serializable;
import java.util.List;

/**
 * The Redis key layout of contract section 3. {@code {C}} is the counter id inside literal braces, so all
 * keys of one counter share a Redis Cluster slot. Bookkeeping lives only under {@code P:{C}:_...} and
 * {@code P:_...}; a bookkeeping key that one script touches together with another key carries that key as
 * its hash tag ({@code P:_v:{P:top:...}}, {@code P:_wm:{P:meta:watermark}:...}, {@code P:_job:{P:_lease}}),
 * so that both share a slot. Window names are their start in epoch <em>seconds</em>.
 */
public final class RedisKeys implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String prefix;

    public RedisKeys(String prefix) {
        this.prefix = checkPrefix(prefix);
    }

    /**
     * The rule of a key prefix, the only place it is checked: not blank, and free of braces (a brace would
     * change the Redis Cluster hash tag of every key). Returns the prefix, or fails naming {@code --redis.key-prefix}.
     */
    public static String checkPrefix(String prefix) {
        if (!validPrefix(prefix)) throw new IllegalArgumentException("--redis.key-prefix " + PREFIX_RULE);
        return prefix;
    }

    /** What a key prefix must be, for messages. */
    public static final String PREFIX_RULE = "must be non-empty and free of '{' and '}'";

    /** Whether {@code prefix} keeps the rule of a key prefix ({@link #PREFIX_RULE}). */
    public static boolean validPrefix(String prefix) {
        return prefix != null && !prefix.isBlank() && prefix.indexOf('{') < 0 && prefix.indexOf('}') < 0;
    }

    public String prefix() {
        return prefix;
    }

    /** {@code P:{C}:}, the beginning of every key of counter C: a key is its base and a suffix. */
    public String counterBase(String counter) {
        return prefix + ":{" + counter + "}:";
    }

    /** The suffix of the all-time total. */
    public static final String TOTAL = "total";
    /** The suffix of the all-time unique users. */
    public static final String UNIQUES_ALL = "u:all";

    /** The suffix of a window's sum: the window's name, {@code <res>:<start in seconds>}. */
    public static String windowSuffix(Resolution res, long startMillis) {
        return res.windowName(startMillis);
    }

    /** The suffix of a window's unique users: {@code u:<res>:<start in seconds>}. */
    public static String uniquesSuffix(Resolution res, long startMillis) {
        return res.windowName(UNIQUES_HEAD, startMillis);
    }

    /** What the suffix of a window's unique users begins with. */
    public static final String UNIQUES_HEAD = "u:";

    /** The key of a window's sum, {@code base + windowSuffix(res, startMillis)}, as one string. */
    public static String windowKey(String base, Resolution res, long startMillis) {
        return res.windowName(base, startMillis);
    }

    /**
     * The key of a window's unique users from the counter's {@code base + UNIQUES_HEAD}, {@code uniquesBase}: {@code
     * base + uniquesSuffix(res, startMillis)} as one string.
     */
    public static String uniquesKey(String uniquesBase, Resolution res, long startMillis) {
        return res.windowName(uniquesBase, startMillis);
    }

    /** The version bookkeeping key of the key {@code base + suffix}: {@code base + "_v:" + suffix}. */
    public static String versionKey(String base, String suffix) {
        return base + "_v:" + suffix;
    }

    public String total(String counter) {
        return counterBase(counter) + TOTAL;
    }

    public String window(String counter, Resolution res, long startMillis) {
        return counterBase(counter) + windowSuffix(res, startMillis);
    }

    public String uniques(String counter, Resolution res, long startMillis) {
        return counterBase(counter) + uniquesSuffix(res, startMillis);
    }

    public String uniquesAll(String counter) {
        return counterBase(counter) + UNIQUES_ALL;
    }

    /** Version bookkeeping of a counter key: {@code P:{C}:_v:<suffix>} where the key is {@code P:{C}:<suffix>}. */
    public String versionOf(String counter, String key) {
        String base = counterBase(counter);
        if (!key.startsWith(base)) {
            throw new IllegalArgumentException("key " + key + " is not a key of counter " + counter);
        }
        return versionKey(base, key.substring(base.length()));
    }

    public String top(String namespace, Resolution res, long startMillis) {
        return topHead(namespace, res) + Math.floorDiv(startMillis, 1000L);
    }

    /** {@code P:top:<ns>:<res>:}, the beginning of every window top-K key of a namespace at a resolution. */
    public String topHead(String namespace, Resolution res) {
        return prefix + ":top:" + namespace + ":" + res.label + ":";
    }

    public String trending(String namespace) {
        return prefix + ":trending:" + namespace;
    }

    /**
     * Version bookkeeping of a non-counter key {@code P:<rest>} (a sorted set): {@code P:_v:{P:<rest>}}, the
     * key itself as hash tag, so that it shares the key's Redis Cluster slot (prefixes and namespaces hold no
     * braces, so the key has no tag of its own).
     */
    public String versionOfGlobal(String key) {
        if (!key.startsWith(prefix + ":")) {
            throw new IllegalArgumentException("key " + key + " does not start with prefix " + prefix);
        }
        return prefix + ":_v:{" + key + "}";
    }

    /**
     * Bookkeeping: the writers' mark, an upper bound of the window starts (epoch ms) any writer under the
     * prefix has written; it only grows (see {@link RedisSinkWriter}).
     */
    public String mark() {
        return prefix + ":_mark";
    }

    /**
     * Bookkeeping: the prefix's epoch, a random token written once ({@code SET NX}) by the first writer or
     * operator that finds it missing and never changed after: a Redis that restarts with its data keeps it,
     * one that lost its data (a restart without persistence, a failover to a replica that lagged,
     * {@code FLUSHALL}) does not, and whoever knew the old token sees the loss (see {@link RedisEpoch}).
     */
    public String epoch() {
        return prefix + ":_epoch";
    }

    /**
     * Bookkeeping: where a rebuilt unique-users sketch is staged for {@code PFMERGE} into {@code key}, a
     * key of counter C: {@code P:{C}:_rebuild:<suffix>}, in the same Redis Cluster slot.
     */
    public static String stagingKeyOf(String key) {
        int close = key.indexOf("}:");
        if (key.indexOf('{') < 0 || close < 0)
            throw new IllegalArgumentException("key " + key + " is not a key of a counter");
        return key.substring(0, close + 2) + "_rebuild:" + key.substring(close + 2);
    }

    /** Bookkeeping: the token of the job writing under the prefix now, expiring unless renewed (see {@link PrefixGuard}). */
    public String lease() {
        return prefix + ":_lease";
    }

    /**
     * Bookkeeping: the token of the last job that wrote under the prefix, never expiring (see {@link PrefixGuard}):
     * {@code P:_job:{P:_lease}}, in the slot of {@link #lease()}, as the lease script touches both.
     */
    public String job() {
        return prefix + ":_job:{" + lease() + "}";
    }

    /** The job mark's name before it shared the lease's slot, {@code P:_job}: still a sign of an earlier job. */
    public String jobBefore() {
        return prefix + ":_job";
    }

    /** {@code P:_lineage}: a sign of an earlier job under the prefix. */
    public String lineage() {
        return prefix + ":_lineage";
    }

    /**
     * Bookkeeping: the hash of each sink writer's watermark of one job run, {@code P:_wm:{P:meta:watermark}:<job>:<parallelism>},
     * in the slot of {@link #watermark()}, as the watermark script touches both.
     */
    public String watermarkPerWriter(String jobId, int parallelism) {
        return prefix + ":_wm:{" + watermark() + "}:" + jobId + ":" + parallelism;
    }

    public String watermark() {
        return prefix + ":meta:watermark";
    }

    /** {@code P:meta:allowed_lateness_ms}: the job's allowed lateness, so that a reader can tell a final window. */
    public String allowedLateness() {
        return prefix + ":meta:allowed_lateness_ms";
    }

    /**
     * The beginnings of every key family of the layout: <code>P:&#123;</code> (counters), {@code P:top:}, {@code P:trending:},
     * {@code P:meta:} and {@code P:_} (bookkeeping). Every key the job writes starts with one of them.
     */
    public List<String> layoutHeads() {
        String p = prefix + ":";
        return List.of(p + "{", p + "top:", p + "trending:", p + "meta:", p + "_");
    }

    /** A {@code SCAN MATCH} pattern of every key under the prefix, {@code P:*}. */
    public String everyKeyPattern() {
        return glob(prefix + ":") + "*";
    }

    /** A {@code SCAN MATCH} pattern of every key of every counter, <code>P:&#123;*</code>. */
    public String counterKeysPattern() {
        return glob(prefix + ":{") + "*";
    }

    /** A {@code SCAN MATCH} pattern of the window top-K keys of a namespace at a resolution, {@code P:top:<ns>:<res>:*}. */
    public String topPattern(String namespace, Resolution res) {
        return glob(topHead(namespace, res)) + "*";
    }

    /** The counter id of a key of a counter ({@code P:{C}:...}), or null for any other key. */
    public String counterOf(String key) {
        String head = prefix + ":{";
        if (!key.startsWith(head)) return null;
        int close = key.indexOf("}:", head.length());
        return close < 0 ? null : key.substring(head.length(), close);
    }

    /**
     * Whether {@code key} holds a count: a counter's total {@code P:{C}:total} or a window sum
     * {@code P:{C}:<res>:<start seconds>} (not uniques, lists or bookkeeping).
     */
    public boolean isCount(String key) {
        String counter = counterOf(key);
        if (counter == null) return false;
        String suffix = key.substring(counterBase(counter).length());
        if (suffix.equals(TOTAL)) return true;
        int colon = suffix.indexOf(':');
        return colon > 0 && suffix.indexOf(':', colon + 1) < 0 && windowStartMillis(suffix) != Long.MIN_VALUE;
    }

    /** {@code literal} with Redis's glob characters escaped, so that a pattern matches it as it is. */
    static String glob(String literal) {
        StringBuilder sb = new StringBuilder(literal.length() + 8);
        for (char c : literal.toCharArray()) {
            if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\' || c == '{' || c == '}') sb.append('\\');
            sb.append(c);
        }
        return sb.toString();
    }

    /**
     * The start (epoch ms) of the window a key belongs to, or {@code Long.MIN_VALUE} for a key of no window
     * (a total, {@code u:all}, trending, the watermark): a key that ends {@code <res>:<start seconds>}, as
     * the sums, uniques, their version keys and the window top-K lists do.
     */
    public static long windowStartMillis(String key) {
        int last = key.lastIndexOf(':');
        if (last <= 0 || last == key.length() - 1) return Long.MIN_VALUE;
        int before = key.lastIndexOf(':', last - 1);
        String res = key.substring(before + 1, last);
        String start = key.substring(last + 1);
        if (!start.matches("-?\\d{1,15}")) return Long.MIN_VALUE;
        for (Resolution r : Resolution.all()) {
            if (r.label.equals(res)) return Long.parseLong(start) * 1000;
        }
        return Long.MIN_VALUE;
    }
}
