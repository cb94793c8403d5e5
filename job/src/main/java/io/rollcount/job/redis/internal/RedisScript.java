package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisSinkException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * A Lua script of the job's, read from a resource of {@code io/rollcount/job/redis/}, and how it runs:
 * {@link #loadOn} loads it on the server or on every node of a Redis Cluster, {@link #evalsha} queues a call in
 * a pipeline by its SHA, {@link #evalAgain} runs the calls a server answered {@code NOSCRIPT} to (one that lost
 * the script: a restart, {@code SCRIPT FLUSH}, a node that never saw {@code SCRIPT LOAD}) as {@code EVAL} of
 * the source, which caches it there. {@link ApplyReply} decodes the replies of {@code apply.lua}.
 */
public final class RedisScript {
    /** Where the job's Lua scripts live on the class path. */
    static final String RESOURCES = "/io/rollcount/job/redis/";

    private final String name;
    private final String source;
    private final String sha1;
    private final byte[] sourceBytes;
    private final byte[] sha1Bytes;

    private RedisScript(String name, String source) {
        this.name = name;
        this.source = source;
        this.sha1 = sha1Hex(source);
        this.sourceBytes = source.getBytes(StandardCharsets.UTF_8);
        this.sha1Bytes = sha1.getBytes(StandardCharsets.UTF_8);
    }

    /** The script in resource {@code io/rollcount/job/redis/<name>}. */
    public static RedisScript resource(String name) {
        String path = RESOURCES + name;
        try (InputStream in = RedisScript.class.getResourceAsStream(path)) {
            if (in == null) throw new IllegalStateException("resource " + path + " is missing from the class path");
            return new RedisScript(name, new String(in.readAllBytes(), StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read resource " + path, e);
        }
    }

    /** The Lua source. */
    public String source() {
        return source;
    }

    /** The SHA-1 of the source, as {@code SCRIPT LOAD} returns it. */
    public String sha1() {
        return sha1;
    }

    /**
     * {@code SCRIPT LOAD} on the server, or on every node of a cluster client's topology (a script lives on one
     * node; replicas get it too, for the day they are promoted). A node that cannot be reached is skipped (its
     * {@code NOSCRIPT} reply brings the script there later), unless none can be. Returns the commands sent.
     *
     * @throws IllegalStateException if a node returns another SHA than the source's
     */
    public int loadOn(UnifiedJedis j) {
        if (!(j instanceof RedisClusterClient cluster)) {
            checkSha(j.scriptLoad(source), "Redis");
            return 1;
        }
        JedisException last = null;
        int sent = 0;
        int loaded = 0;
        for (Map.Entry<String, ConnectionPool> node : cluster.getClusterNodes().entrySet()) {
            sent++;
            try (Connection c = node.getValue().getResource();
                    Jedis n = new Jedis(c)) {
                checkSha(n.scriptLoad(source), "Redis at " + node.getKey());
                loaded++;
            } catch (JedisConnectionException e) {
                last = e;
            }
        }
        if (loaded == 0 && last != null) throw last;
        return sent;
    }

    private void checkSha(String sha, String who) {
        if (!sha1.equals(sha)) {
            throw new IllegalStateException(
                    who + " returned SHA " + sha + " for the rollcount script " + name + ", expected " + sha1);
        }
    }

    /** Queues {@code EVALSHA} of this script in the pipeline. */
    public Response<Object> evalsha(AbstractPipeline p, List<byte[]> keys, List<byte[]> args) {
        return p.evalsha(sha1Bytes, keys, args);
    }

    /** {@code EVALSHA} of a call of {@code apply.lua} in the pipeline. */
    public Response<Object> evalsha(AbstractPipeline p, RedisApplyScript.Call call) {
        return evalsha(p, call.scriptKeys(), call.scriptArgs());
    }

    /**
     * The calls a server answered {@code NOSCRIPT} to, sent again pipelined as {@code EVAL} of the source;
     * their replies in order (each one's error comes with its {@link Response#get}).
     */
    public List<Response<Object>> evalAgain(UnifiedJedis j, List<RedisApplyScript.Call> calls) {
        List<Response<Object>> replies = new ArrayList<>(calls.size());
        try (AbstractPipeline p = j.pipelined()) {
            for (RedisApplyScript.Call c : calls) replies.add(p.eval(sourceBytes, c.scriptKeys(), c.scriptArgs()));
            p.sync();
        }
        return replies;
    }

    /** {@code EVAL} of the source with string keys and arguments (a script run seldom, such as the lease's). */
    public Object eval(UnifiedJedis j, List<String> keys, List<String> args) {
        return j.eval(source, keys, args);
    }

    static String sha1Hex(String text) {
        try {
            return HexFormat.of()
                    .formatHex(MessageDigest.getInstance("SHA-1").digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * A reply of {@code apply.lua}, {@code {applied, skipped, status, key1, error1, ...}}: {@code status} has one
     * character per write of the call ({@code a} applied, {@code s} skipped, {@code r} rejected).
     *
     * @param rejected the rejected keys, each followed by its error
     */
    public record ApplyReply(long applied, long skipped, String status, List<String> rejected) {
        /** Decodes {@code result}, the reply to the call whose first key is {@code firstKey}. */
        public static ApplyReply decode(Object result, String firstKey, RedisEndpoint endpoint) {
            if (!(result instanceof List<?> l) || l.size() < 3) {
                throw new RedisSinkException.Unchecked("Redis at " + endpoint + " answered the rollcount script with "
                        + result + " (first key " + firstKey + ")");
            }
            List<String> rejected = new ArrayList<>(l.size() - 3);
            for (int r = 3; r + 1 < l.size(); r += 2) {
                rejected.add(text(l.get(r)));
                rejected.add(text(l.get(r + 1)));
            }
            return new ApplyReply(
                    ((Number) l.get(0)).longValue(), ((Number) l.get(1)).longValue(), text(l.get(2)), rejected);
        }

        private static String text(Object o) {
            return o instanceof byte[] b ? new String(b, StandardCharsets.UTF_8) : String.valueOf(o);
        }
    }
}
