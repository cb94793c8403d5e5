package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisWrite;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The server-side Lua script ({@code apply.lua}, a resource next to this class) for the writes that must
 * compare before they write, and the encoding of a batch of them into its {@code KEYS} and {@code ARGV}.
 * Every other write is a plain pipelined command (see {@link BatchPipeline}). {@link RedisScript} runs it.
 *
 * <p>Semantics per kind (numbers are compared as decimal integer strings, exactly, without the 2^53
 * limit of Lua's doubles); every {@code SET} carries {@code GET}, so that a key of another type is refused
 * with WRONGTYPE instead of replaced, and {@code PXAT} the write's absolute expiry where it has one:
 * <ul>
 *   <li>guarded COUNT ({@code KEYS} key[, versionKey]): skipped if the stored version is {@code >= version},
 *       or if {@code monotone} and the stored value is larger than the new one; else {@code SET key value}
 *       and {@code SET versionKey version}. A monotone write updates a version that exists but creates none.
 *       The values compared against are read first, for the whole call, by one {@code MGET}. A write that
 *       {@link RedisWrite#restoresMissing restores a missing key} is applied where the key is missing, whatever
 *       the stored version; where the key exists, as above.
 *   <li>MAX ({@code KEYS} key): {@code SET key value} if there is no value or the new one is larger.
 *   <li>the watermark ({@code KEYS} perWriter, key): see {@link #watermark}.
 *   <li>ZSET ({@code KEYS} key[, versionKey]): skipped if the stored version is {@code > version}; else
 *       {@code SET versionKey version} (first: Redis refuses a SET at maxmemory, not a DEL, which would let the
 *       rest of the script past its OOM check), {@code DEL key}, {@code ZADD} of every member, and
 *       {@code PEXPIREAT} of the expiry. One that restores a missing key is applied where the key is missing,
 *       whatever the stored version.
 * </ul>
 * The script returns {@code {applied, skipped, status, key1, error1, ...}}: {@code status} one character per
 * write in order ({@code a} applied, {@code s} skipped as Redis was ahead, {@code r} rejected), then the
 * rejected keys with their errors. Errors are per key: each write runs under Lua's {@code pcall}, so a Redis
 * error such as {@code WRONGTYPE} or a value that is not a decimal integer where one is expected rejects
 * that write's key only. An error that a retry can cure ({@code OOM}, {@code MISCONF}, {@code NOREPLICAS},
 * {@code LOADING}, {@code BUSY}, {@code TRYAGAIN}, {@code READONLY}, {@code MASTERDOWN}, {@code CLUSTERDOWN})
 * ({@link RedisErrors#TRANSIENT}) ends the call with that error instead, for the writer to retry the whole batch (every write is
 * idempotent). An ACL refusal ({@link RedisErrors#ACCESS}) fails the call naming the key. So does a fault of the script.
 */
public final class RedisApplyScript {

    /** {@code apply.lua}. */
    public static final RedisScript SCRIPT = RedisScript.resource("apply.lua");

    /**
     * A COUNT's kind in ARGV, by (has a version key ? 1 : 0) | (monotone ? 2 : 0) | (restores a missing key ? 4 : 0):
     * one argument for three.
     */
    private static final byte[][] COUNT_KINDS = {
        b("C"), b("Cv"), b("Cm"), b("Cvm"), b("Cr"), b("Cvr"), b("Cmr"), b("Cvmr")
    };

    private RedisApplyScript() {}

    /** KEYS and ARGV of one script call, built up write by write. */
    public static final class Call {
        /** Keys whose values the script compares against, read with one MGET before any write, in order of use. */
        final List<byte[]> reads = new ArrayList<>();

        final List<byte[]> keys = new ArrayList<>();
        final List<byte[]> args = new ArrayList<>();
        /** The writes, in order: the script's status has one character for each. */
        public final List<RedisWrite> writes = new ArrayList<>();
        /** The first key, for error messages. */
        public String firstKey;

        public void add(RedisWrite w) {
            if (firstKey == null) firstKey = w.key;
            writes.add(w);
            switch (w.kind) {
                case RedisWrite.COUNT -> {
                    String v = w.versionKey();
                    boolean hasV = v != null;
                    args.add(COUNT_KINDS[(hasV ? 1 : 0) | (w.monotone ? 2 : 0) | (w.restoresMissing ? 4 : 0)]);
                    args.add(b(Long.toString(w.value)));
                    args.add(b(Long.toString(w.version)));
                    args.add(b(Long.toString(w.expireAtMillis)));
                    byte[] key = b(w.key);
                    keys.add(key);
                    if (hasV) {
                        byte[] versionKey = b(v);
                        keys.add(versionKey);
                        reads.add(versionKey);
                    }
                    if (w.monotone || w.restoresMissing) reads.add(key);
                }
                case RedisWrite.MAX -> {
                    args.add(b("M"));
                    args.add(b(Long.toString(w.value)));
                    keys.add(b(w.key));
                }
                case RedisWrite.ZSET -> {
                    String v = w.versionKey();
                    boolean hasV = v != null;
                    int n = w.members == null ? 0 : w.members.length;
                    args.add(b("Z"));
                    args.add(b(!hasV ? "0" : w.restoresMissing ? "2" : "1"));
                    args.add(b(Long.toString(w.version)));
                    args.add(b(Long.toString(w.expireAtMillis)));
                    args.add(b(Integer.toString(n)));
                    for (int i = 0; i < n; i++) {
                        args.add(b(score(w.scores[i])));
                        args.add(b(w.members[i]));
                    }
                    keys.add(b(w.key));
                    if (hasV) keys.add(b(v));
                }
                default ->
                    throw new IllegalArgumentException(
                            "kind " + w.kind + " of key " + w.key + " is not a script write");
            }
        }

        public int size() {
            return writes.size();
        }

        /** The script's KEYS: the keys it reads first, then the keys of the writes. */
        public List<byte[]> scriptKeys() {
            List<byte[]> all = new ArrayList<>(reads.size() + keys.size());
            all.addAll(reads);
            all.addAll(keys);
            return all;
        }

        /** The script's ARGV: the number of keys it reads first, then the writes. */
        public List<byte[]> scriptArgs() {
            List<byte[]> all = new ArrayList<>(args.size() + 1);
            all.add(b(Integer.toString(reads.size())));
            all.addAll(args);
            return all;
        }
    }

    /**
     * The job's watermark: subtask {@code subtask} of {@code parallelism} sink writers has written
     * everything before {@code watermark}. Each writer's own watermark goes into the hash {@code perWriter}
     * (one per job and parallelism, expiring a week after its last write); once every writer has reported,
     * their minimum goes into {@code target} if larger. So {@code rc:meta:watermark} never runs ahead of
     * a writer that still has window values to write.
     */
    public static Call watermark(String perWriter, String target, int subtask, int parallelism, long watermark) {
        Call c = new Call();
        c.firstKey = target;
        c.writes.add(RedisWrite.max(target, watermark));
        c.args.add(b("W"));
        c.args.add(b(Integer.toString(subtask)));
        c.args.add(b(Integer.toString(parallelism)));
        c.args.add(b(Long.toString(watermark)));
        c.keys.add(b(perWriter));
        c.keys.add(b(target));
        return c;
    }

    /** A score as ZADD reads it: Java's shortest round-trip decimal, or +inf/-inf. */
    static String score(double d) {
        if (Double.isNaN(d)) throw new IllegalArgumentException("NaN score");
        if (d == Double.POSITIVE_INFINITY) return "+inf";
        if (d == Double.NEGATIVE_INFINITY) return "-inf";
        return Double.toString(d);
    }

    static byte[] b(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
