package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisSinkException;
import java.util.List;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisRedirectionException;

/**
 * What a failure of Redis means to the sink: the one list of the error prefixes it knows, and the messages it
 * fails with. {@code apply.lua} keeps the same two lists ({@code TRANSIENT} and its access errors: a test
 * compares them).
 * <ul>
 *   <li>{@link #TRANSIENT}: the server is briefly unable to serve; a retry of the whole batch, on a new
 *       connection, can cure it. So can a lost or timed-out connection, a redirection (MOVED, ASK) and a
 *       cluster whose topology the client could not follow.
 *   <li>{@link #ACCESS}: refused credentials or an ACL refusal: the operator's to fix, the writer fails at once.
 *   <li>every other error of a key (WRONGTYPE, say) rejects that key for good; the other keys are written.
 * </ul>
 */
public final class RedisErrors {
    /** Error prefixes of a server briefly unable to serve (also in {@code apply.lua}'s {@code TRANSIENT}). */
    public static final List<String> TRANSIENT = List.of(
            "OOM", "MISCONF", "NOREPLICAS", "LOADING", "BUSY", "TRYAGAIN", "READONLY", "MASTERDOWN", "CLUSTERDOWN");
    /** Error prefixes of refused access (also in {@code apply.lua}). */
    public static final List<String> ACCESS = List.of("NOPERM", "NOAUTH", "WRONGPASS");
    /** The reply of a server that does not hold a script. */
    static final String NO_SCRIPT = "NOSCRIPT";

    private RedisErrors() {}

    /** Worth retrying: the connection broke or timed out, or the server is briefly unable to serve. */
    public static boolean isTransient(Throwable e) {
        if (e instanceof JedisAccessControlException) return false;
        if (e instanceof JedisConnectionException) {
            // refused credentials and untrusted certificates do not heal by waiting
            return !hasCause(e.getCause(), JedisAccessControlException.class)
                    && !hasCause(e.getCause(), java.security.cert.CertificateException.class)
                    && !hasCause(e.getCause(), javax.net.ssl.SSLPeerUnverifiedException.class);
        }
        if (e instanceof JedisDataException) return startsWithAny(e.getMessage(), TRANSIENT) || isRedirection(e);
        // a Redis Cluster whose topology the client could not read or follow (a failover in progress)
        return e instanceof JedisClusterOperationException;
    }

    /** A MOVED or ASK reply: the slot is served by another node (a failover or a slot migration). */
    public static boolean isRedirection(Throwable e) {
        if (e instanceof JedisRedirectionException) return true;
        String m = e.getMessage();
        return e instanceof JedisDataException && m != null && (m.startsWith("MOVED ") || m.startsWith("ASK "));
    }

    /** Refused credentials or an ACL refusal. */
    public static boolean isAccessError(Throwable e) {
        return e instanceof JedisAccessControlException
                || e.getCause() instanceof JedisAccessControlException
                || startsWithAny(e.getMessage(), ACCESS);
    }

    /** A server that does not hold the script called by its SHA. */
    public static boolean isNoScript(JedisDataException e) {
        return e.getMessage() != null && e.getMessage().startsWith(NO_SCRIPT);
    }

    private static boolean startsWithAny(String message, List<String> prefixes) {
        if (message == null) return false;
        for (String p : prefixes) {
            if (message.startsWith(p)) return true;
        }
        return false;
    }

    static boolean hasCause(Throwable e, Class<? extends Throwable> type) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) return true;
        }
        return false;
    }

    /**
     * The failure a writer fails with for an error no retry cures, saying what to do.
     *
     * @param firstKey the first key of the script call that failed, or null
     */
    public static RedisSinkException permanent(JedisException e, String firstKey, RedisEndpoint endpoint) {
        String what;
        if (isAccessError(e)) {
            what = "Redis at " + endpoint + " refused access"
                    + (endpoint.user() != null ? " for user " + endpoint.user() : "")
                    + (firstKey != null ? " to the batch of key " + firstKey : "");
        } else if (isRedirection(e)) {
            what = "Redis at " + endpoint
                    + " is a node of a Redis Cluster (it redirected a write): add --redis.cluster and list the cluster's nodes in --redis";
        } else if (hasCause(e, java.security.cert.CertificateException.class)) {
            what = "Redis at " + endpoint + " presented a certificate that is not trusted or does not name the host";
        } else if (firstKey != null) {
            what = "Redis at " + endpoint + " failed a script call (its first key " + firstKey + ")";
        } else {
            what = "Redis at " + endpoint + " failed";
        }
        return new RedisSinkException(what + ": " + describe(e, endpoint), sanitized(e, endpoint));
    }

    /** The exception's class and message, with its root cause's message where that adds something; redacted. */
    public static String describe(Throwable e, RedisEndpoint endpoint) {
        String m = e.getMessage();
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        if (root != e && root.getMessage() != null && (m == null || !m.contains(root.getMessage()))) {
            m = (m == null ? "" : m + ": ") + root.getMessage();
        }
        return endpoint.redact(e.getClass().getSimpleName() + (m == null ? "" : " " + m));
    }

    /**
     * The exception to keep as the cause: the original unless its messages would show the password
     * (Jedis never puts it there, but a cause chain is printed in full in Flink's UI and logs).
     */
    public static Throwable sanitized(Throwable e, RedisEndpoint endpoint) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            String m = c.getMessage();
            if (m != null && !m.equals(endpoint.redact(m))) {
                return new RedisSinkException.Unchecked(
                        endpoint.redact(String.valueOf(e.getMessage())) + " (cause removed: it showed the password)");
            }
            if (c.getCause() == c) break;
        }
        return e;
    }
}
