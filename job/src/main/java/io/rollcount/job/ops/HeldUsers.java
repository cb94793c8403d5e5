package io.rollcount.job.ops;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.Resolution;
import java.util.Arrays;
import java.util.function.Consumer;

/**
 * The users of one counter that raised a register of a sketch kept for a unique-users key since the counter's
 * last flush, gathered per key ({@code u:<res>:<start>} or {@code u:all}) and per sketch that decided, so that
 * the key gets one USERS update per flush instead of one per partial sum. A user raises a register of a sketch at
 * most once (its register only grows), so the users gathered under one sketch are distinct without a set; the
 * users of {@code u:all} decided by two sketches (a new hour or day within a flush) are two updates, which the
 * Redis sink merges as it merges any two. Held on the heap only between two flushes of the counter, and the owner
 * empties it before every checkpoint barrier: no user waits in state.
 *
 * <p>Usually three entries: the 1h and 1d windows' and all time's. Bounded by the sketches, not by the traffic:
 * the users that raise a register of a sketch of 16,384 registers over {@code n} distinct users are fewer than
 * {@code 16,384 * (ln(n / 16,384) + 1)} over the whole window (59,302 of a million users, counted), so even a
 * viral counter holds at most that many per key, most of them in the window's first seconds.
 */
final class HeldUsers {
    /**
     * One key's users: window {@code start} of {@code resolution}, or all time where {@code resolution} is null;
     * decided by the sketch of the window starting at {@code decidedBy}.
     */
    private static final class Key {
        final Resolution resolution;
        final long start;
        final long decidedBy;
        final long expireAtMillis;
        String[] users;
        long[] hashes;
        int size;

        Key(Resolution resolution, long start, long decidedBy, long expireAtMillis, int capacity) {
            this.resolution = resolution;
            this.start = start;
            this.decidedBy = decidedBy;
            this.expireAtMillis = expireAtMillis;
            users = new String[capacity];
            hashes = new long[capacity];
        }
    }

    private Key[] keys = new Key[3];
    private int size;

    /**
     * Holds the users that raised a register ({@code raised[j]} for {@code users[j]}, hash {@code hashes[j]}) of
     * the sketch of the window starting at {@code decidedBy}, for the window {@code start} of {@code r}, or for all
     * time ({@code r} null).
     */
    void add(
            Resolution r,
            long start,
            long decidedBy,
            long expireAtMillis,
            String[] users,
            long[] hashes,
            boolean[] raised) {
        Key k = null;
        for (int i = 0; i < size; i++) {
            if (keys[i].resolution == r && keys[i].start == start && keys[i].decidedBy == decidedBy) {
                k = keys[i];
                break;
            }
        }
        for (int j = 0; j < users.length; j++) {
            if (!raised[j]) continue;
            if (k == null) k = newKey(r, start, decidedBy, expireAtMillis, users.length);
            if (k.size == k.users.length) {
                k.users = Arrays.copyOf(k.users, k.size * 2);
                k.hashes = Arrays.copyOf(k.hashes, k.size * 2);
            }
            k.users[k.size] = users[j];
            k.hashes[k.size++] = hashes[j];
        }
    }

    private Key newKey(Resolution r, long start, long decidedBy, long expireAtMillis, int capacity) {
        if (size == keys.length) keys = Arrays.copyOf(keys, size * 2);
        return keys[size++] = new Key(r, start, decidedBy, expireAtMillis, capacity);
    }

    boolean isEmpty() {
        return size == 0;
    }

    /** One USERS update of counter {@code id} per key held, in the order the keys were first held; then empty. */
    void drainTo(String id, Consumer<CounterUpdate> out) {
        for (int i = 0; i < size; i++) {
            Key k = keys[i];
            String[] u = k.size == k.users.length ? k.users : Arrays.copyOf(k.users, k.size);
            long[] h = k.size == k.hashes.length ? k.hashes : Arrays.copyOf(k.hashes, k.size);
            out.accept(
                    k.resolution == null
                            ? CounterUpdate.allTimeUsers(id, u, h)
                            : CounterUpdate.windowUsers(id, k.resolution, k.start, u, h, k.expireAtMillis));
            keys[i] = null;
        }
        size = 0;
    }
}
