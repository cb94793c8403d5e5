package io.rollcount.sketches;

/**
 * An exact negative filter of ids that expire, in bounded memory: {@link #mayContain} answers {@code false} only
 * when no id of that hash was {@linkplain #add added} with an expiry after the given time, and {@code true}
 * ("maybe") otherwise, so that a caller may skip its own lookup of an id on {@code false} and must make it on
 * {@code true}.
 *
 * <p>Layout: one {@code long[]} of {@code capacity} slots (a power of two) in buckets of {@value #BUCKET}. A slot
 * is 0 when empty, otherwise the id hash's upper 32 bits (its fingerprint, 0 made 1) in its upper half and the
 * expiry in its lower half, in whole seconds rounded up (an unsigned 32-bit count of seconds since 1970;
 * {@link #NEVER} where the expiry is later than that holds). An id has two buckets, as in a cuckoo filter: the
 * hash's lower bits, and that bucket XOR a mix of the fingerprint. {@link #add} raises the expiry of a slot of
 * either bucket that holds the fingerprint to the later of the two, or else takes a free slot (empty, or expired)
 * of the bucket with fewer live slots; {@link #mayContain} looks at every slot of both. A slot is never overwritten
 * before it expires and its expiry never falls, so an id added stays a "maybe" until its expiry.
 *
 * <p>Bounds: {@code 8 * capacity} bytes, never more. Two choices of {@value #BUCKET} slots take about 85% of the
 * slots before the first id finds both its buckets full of live ones. Such an id is refused: {@link #add} returns
 * false and the filter answers "maybe" for every id until the time passes the refused id's expiry (then every
 * refused id has expired), so it stays exact at any number of ids and answers again once the live ids fit. Ids
 * whose hashes share a fingerprint and a bucket share a slot: each makes the other a "maybe", never a wrong
 * "no". The stored expiry is never earlier than the one added, so rounding only makes "maybe" last up to a
 * second longer.
 *
 * <p>Not thread-safe: one owner.
 */
public final class ExpiringIdFilter {
    /** Slots per bucket. */
    public static final int BUCKET = 16;

    /** A slot's expiry beyond 32 bits of seconds: expires only at time {@link Long#MAX_VALUE}. */
    static final long NEVER = 0xFFFF_FFFFL;

    private final long[] slots;
    /** The buckets minus one (their number is a power of two). */
    private final int bucketMask;
    /** Until this time, every id is a "maybe": an id was refused, or the caller could not say what it holds. */
    private long maybeUntil = Long.MIN_VALUE;

    /** A filter of {@code capacity} slots, a power of two of at least {@value #BUCKET}. */
    public ExpiringIdFilter(int capacity) {
        if (capacity < BUCKET || Integer.bitCount(capacity) != 1)
            throw new IllegalArgumentException(
                    "capacity must be a power of two of at least " + BUCKET + ", got " + capacity);
        this.slots = new long[capacity];
        this.bucketMask = capacity / BUCKET - 1;
    }

    /**
     * False only if no id of {@code hash} was added with an expiry after {@code now} and every id refused has
     * expired by {@code now}.
     */
    public boolean mayContain(long hash, long now) {
        if (now < maybeUntil) return true;
        long fingerprint = fingerprintOf(hash);
        int first = firstBucket(hash);
        return holds(first, fingerprint, now) || holds(otherBucket(first, fingerprint), fingerprint, now);
    }

    /**
     * Remembers an id of {@code hash} until {@code expiresAt} (the same clock as {@code now}). False if both its
     * buckets were full of live ids: then {@link #mayContain} says "maybe" for every id until {@code expiresAt}.
     */
    public boolean add(long hash, long expiresAt, long now) {
        long fingerprint = fingerprintOf(hash);
        long slot = fingerprint << 32 | secondsOf(expiresAt);
        int first = firstBucket(hash);
        int other = otherBucket(first, fingerprint);
        if (raise(first, slot) || raise(other, slot)) return true;
        int inFirst = free(first, now);
        int inOther = free(other, now);
        int at;
        if (inFirst < 0) at = inOther;
        else if (inOther < 0) at = inFirst;
        else at = live(first, now) <= live(other, now) ? inFirst : inOther;
        if (at < 0) {
            maybeUntil(expiresAt);
            return false;
        }
        slots[at] = slot;
        return true;
    }

    private int firstBucket(long hash) {
        return (int) hash & bucketMask;
    }

    private int otherBucket(int first, long fingerprint) {
        return first ^ ((int) Hashing.mix64(fingerprint) & bucketMask);
    }

    /** Whether a slot of the bucket holds the fingerprint and has not expired. */
    private boolean holds(int bucket, long fingerprint, long now) {
        for (int at = bucket * BUCKET, end = at + BUCKET; at < end; at++) {
            long s = slots[at];
            if ((s >>> 32) == fingerprint && !expired(s, now)) return true;
        }
        return false;
    }

    /** Raises the expiry of the bucket's slot of {@code slot}'s fingerprint to {@code slot}'s; false if none. */
    private boolean raise(int bucket, long slot) {
        long fingerprint = slot >>> 32;
        for (int at = bucket * BUCKET, end = at + BUCKET; at < end; at++) {
            long s = slots[at];
            if ((s >>> 32) == fingerprint) {
                if ((s & NEVER) < (slot & NEVER)) slots[at] = slot;
                return true;
            }
        }
        return false;
    }

    /** The index of a free slot of the bucket (empty or expired), -1 if none. */
    private int free(int bucket, long now) {
        for (int at = bucket * BUCKET, end = at + BUCKET; at < end; at++) {
            long s = slots[at];
            if (s == 0 || expired(s, now)) return at;
        }
        return -1;
    }

    private int live(int bucket, long now) {
        int n = 0;
        for (int at = bucket * BUCKET, end = at + BUCKET; at < end; at++) {
            long s = slots[at];
            if (s != 0 && !expired(s, now)) n++;
        }
        return n;
    }

    /** Every id is a "maybe" until {@code time} (for ids the caller holds but could not add). */
    public void maybeUntil(long time) {
        maybeUntil = Math.max(maybeUntil, time);
    }

    /** Whether the filter answers for ids at {@code now} (false while every id is a "maybe"). */
    public boolean answersAt(long now) {
        return now >= maybeUntil;
    }

    /** The slots. */
    public int capacity() {
        return slots.length;
    }

    /** The heap the slots take, in bytes. */
    public long bytes() {
        return 8L * slots.length;
    }

    private static long fingerprintOf(long hash) {
        long f = hash >>> 32;
        return f == 0 ? 1 : f;
    }

    /** {@code millis} in whole seconds rounded up, within [0, NEVER]. */
    static long secondsOf(long millis) {
        if (millis <= 0) return 0;
        long seconds = millis / 1000 + (millis % 1000 == 0 ? 0 : 1);
        return Math.min(seconds, NEVER);
    }

    private static boolean expired(long slot, long now) {
        long seconds = slot & NEVER;
        if (seconds == NEVER) return now == Long.MAX_VALUE;
        return seconds * 1000 <= now;
    }
}
