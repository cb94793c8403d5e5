package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisSinkException;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.util.IoThreadOnly;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.UnifiedJedis;

/**
 * The job's write guard. Before the writes of a window above the mark it knows, the writer raises
 * {@code P:_mark} in a round trip of its own (and creates it before its first count of any kind). At its first
 * connection it reads the mark: if it exists, a run before this writer may have written larger values, so every
 * total and every window key whose window starts at or below the mark read goes through the script (never
 * backwards) until one such write is applied; the key is then remembered ({@link ConfirmedKeys}) and written
 * plain. If it does not exist, nothing was written under the prefix before, and nothing is guarded.
 */
public final class MarkGuard implements WriteGuard {
    private static final Logger LOG = LoggerFactory.getLogger(MarkGuard.class);
    /** Keys a writer remembers as confirmed (no longer guarded) at most: 4M keys, 64 MB of table at most. */
    public static final int MAX_CONFIRMED_KEYS = 4_000_000;

    private final String markKey;
    private final RedisEndpoint endpoint;
    private final SinkMetrics metrics;

    @IoThreadOnly
    private boolean markRead;
    /** Whether totals are guarded: the mark existed at the first connection. */
    @IoThreadOnly
    private boolean guardTotals;
    /** Window keys starting at or below this are guarded. */
    @IoThreadOnly
    private long guardBelow = Long.MIN_VALUE;
    /** The mark this writer knows to be in Redis (read or published), {@code Long.MIN_VALUE} for none. */
    @IoThreadOnly
    private long publishedMark = Long.MIN_VALUE;

    @IoThreadOnly
    private ConfirmedKeys confirmed = new ConfirmedKeys(MAX_CONFIRMED_KEYS);

    public MarkGuard(String markKey, RedisEndpoint endpoint, SinkMetrics metrics) {
        this.markKey = markKey;
        this.endpoint = endpoint;
        this.metrics = metrics;
    }

    /**
     * The mark that covers a window start: the next minute after it plus one more, so that the mark, which
     * each writer raises in a round trip of its own, changes about once a minute of event time.
     */
    public static long markFor(long windowStart) {
        return (Math.floorDiv(windowStart, 60_000L) + 2) * 60_000L;
    }

    @Override
    public boolean connectsEarly() {
        // a sibling writer that started a moment earlier and already raised the mark would otherwise make this
        // one guard keys no run wrote before
        return true;
    }

    /**
     * Reads {@code P:_mark} once, before this writer's first write: if it exists, a run before this writer
     * (the one it is restored from, a sibling, an earlier job) may have written larger values, and the
     * guard is on for every total and every window up to the mark.
     */
    @Override
    public void connected(UnifiedJedis j) {
        if (markRead) return;
        metrics.commands(1);
        String mark = j.get(markKey);
        if (mark != null) {
            try {
                guardBelow = Long.parseLong(mark);
            } catch (NumberFormatException e) {
                throw new RedisSinkException.Unchecked("Redis at " + endpoint + " holds '" + mark + "' at " + markKey
                        + ", not a time in epoch ms: delete that key");
            }
            guardTotals = true;
            publishedMark = guardBelow;
            LOG.info(
                    "{} is {}: totals and windows up to it are written through the guarded script until Redis is not ahead",
                    markKey,
                    guardBelow);
        }
        markRead = true;
    }

    @Override
    public boolean guarded(RedisWrite w) {
        boolean reachable = w.windowStart == RedisWrite.NO_WINDOW ? guardTotals : w.windowStart <= guardBelow;
        return reachable && !confirmed.contains(ConfirmedKeys.hash(w.key));
    }

    /**
     * Raises {@code P:_mark} (MAX, through the script, in a round trip of its own) before writes of windows
     * above it, and creates it before this writer's first count of any kind (a total too), so that a writer
     * started after this one knows a run wrote under the prefix.
     */
    @Override
    public void beforeWrites(List<RedisWrite> writes, CallSender send) throws RedisSinkException {
        long highest = Long.MIN_VALUE;
        boolean counts = false;
        for (RedisWrite w : writes) {
            if (w.kind != RedisWrite.COUNT) continue;
            counts = true;
            if (w.windowStart != RedisWrite.NO_WINDOW && w.windowStart > highest) highest = w.windowStart;
        }
        if (!counts) return;
        if (highest == Long.MIN_VALUE) {
            if (publishedMark != Long.MIN_VALUE) return;
            highest = 0; // totals only: a mark that guards the totals of the next writers, and no window
        } else if (highest <= publishedMark) {
            return;
        }
        long mark = markFor(highest);
        send.send(markCall(mark));
        publishedMark = mark;
    }

    private RedisApplyScript.Call markCall(long mark) {
        RedisApplyScript.Call c = new RedisApplyScript.Call();
        c.add(RedisWrite.max(markKey, mark));
        return c;
    }

    @Override
    public void applied(RedisWrite w) {
        long h = ConfirmedKeys.hash(w.key);
        if (!confirmed.contains(h) && confirmed.add(h)) metrics.keysConfirmed.inc();
    }

    /**
     * The keys confirmed are forgotten (Redis holds none of them now), and the mark raised again at once to what
     * this writer had published, so that a writer started after this one still guards every window this one wrote.
     */
    @Override
    public void dataLost(CallSender send) throws RedisSinkException {
        confirmed = new ConfirmedKeys(MAX_CONFIRMED_KEYS);
        if (publishedMark != Long.MIN_VALUE) send.send(markCall(publishedMark));
    }
}
