package io.rollcount.job.redis;

import io.rollcount.job.model.CounterUpdate;
import org.apache.flink.api.common.functions.MapFunction;

/**
 * A {@link CounterUpdate} as the {@link RedisWrite} that applies it, with the key names of {@link RedisKeys}
 * (contract section 3): a count to {@code P:{C}:total} or {@code P:{C}:<res>:<start>}, with its version key
 * {@code P:{C}:_v:<suffix>}, monotone while no negative delta went in (see {@link RedisWrite#COUNT}); users
 * to {@code P:{C}:u:<res>:<start>} or {@code P:{C}:u:all} ({@code PFADD}); a sketch to
 * {@code P:{C}:u:<res>:<start>} or {@code P:{C}:u:all} ({@code PFMERGE}). Windows keep the expiry the update
 * carries.
 *
 * <p>Chained between the counting operator and the Redis sink (no shuffle, and the update is not copied),
 * as {@link TopListWrites} is for the sorted sets. The updates of one counter come together (a flush
 * writes its total and windows one after another), so the counter's key base is built once for them.
 */
public final class CounterUpdateWrites implements MapFunction<CounterUpdate, RedisWrite> {
    private static final long serialVersionUID = 1L;

    private final RedisKeys keys;
    /** The counter of the last update, and its key base {@code P:{C}:}. */
    private transient String lastCounter;

    private transient String lastBase;
    /** {@code lastBase + }{@link RedisKeys#UNIQUES_HEAD}, the head of its window unique-users keys; null until used. */
    private transient String lastUniquesBase;

    public CounterUpdateWrites(RedisKeys keys) {
        this.keys = keys;
    }

    @Override
    public RedisWrite map(CounterUpdate u) {
        String base = base(u.counter);
        return switch (u.kind) {
            case CounterUpdate.COUNT -> {
                // Monotone while only positive deltas went in, versioned once one did not. The version key is
                // named either way: a guarded monotone write creates none but respects one that a versioned
                // write left (a replay of the counter's state from before its negative delta must not
                // overwrite the newer value).
                yield RedisWrite.counterCount(
                        u.allTime() ? base + RedisKeys.TOTAL : RedisKeys.windowKey(base, u.resolution, u.windowStart),
                        base.length(),
                        u.value,
                        u.events,
                        !u.negative,
                        u.allTime() ? RedisWrite.NO_WINDOW : u.windowStart,
                        u.allTime() ? 0 : u.expireAtMillis);
            }
            case CounterUpdate.USERS ->
                (u.allTime()
                                ? RedisWrite.users(base + RedisKeys.UNIQUES_ALL, u.users, RedisWrite.NO_WINDOW, 0)
                                : RedisWrite.users(
                                        RedisKeys.uniquesKey(uniquesBase(), u.resolution, u.windowStart),
                                        u.users,
                                        u.windowStart,
                                        u.expireAtMillis))
                        .withUserHashes(u.userHashes);
            case CounterUpdate.SKETCH ->
                u.allTime()
                        ? RedisWrite.sketch(base + RedisKeys.UNIQUES_ALL, u.sketch, RedisWrite.NO_WINDOW, 0)
                        : RedisWrite.sketch(
                                RedisKeys.uniquesKey(uniquesBase(), u.resolution, u.windowStart),
                                u.sketch,
                                u.windowStart,
                                u.expireAtMillis);
            default -> throw new IllegalArgumentException("unknown counter update kind " + u.kind + ": " + u);
        };
    }

    /** The head of the last counter's window unique-users keys. */
    private String uniquesBase() {
        if (lastUniquesBase == null) lastUniquesBase = lastBase + RedisKeys.UNIQUES_HEAD;
        return lastUniquesBase;
    }

    private String base(String counter) {
        if (!counter.equals(lastCounter)) {
            lastBase = keys.counterBase(counter);
            lastUniquesBase = null;
            lastCounter = counter;
        }
        return lastBase;
    }
}
