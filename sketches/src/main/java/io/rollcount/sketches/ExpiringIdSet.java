package io.rollcount.sketches;

import java.util.Arrays;

/**
 * An exact set of ids that expire, in bounded memory: each id stands as a 128-bit fingerprint (two independent
 * 64-bit hashes of it, {@code hi} and {@code lo}) with the time it expires at, and {@link #expiryOf} answers with
 * that time, or {@link #NONE} for an id it does not hold. Two ids are told apart unless both their 64-bit hashes
 * collide (about one pair in 2^64 per id held; a caller that deduplicates with it would then drop one real
 * event in that many).
 *
 * <p>Layout: three {@code long[]} of {@code capacity} slots (a power of two) in buckets of {@value #BUCKET}: the
 * fingerprint's halves and the expiry in milliseconds, exactly as added ({@link #NONE}: the slot is empty). An id
 * has two buckets, one chosen by each half. {@link #add} sets the expiry of the slot that holds the id, or else
 * takes a free slot (empty, or expired at the given time) of the bucket with fewer live ones; {@link #expiryOf}
 * looks at both.
 *
 * <p>Bounds: {@code 24 * capacity} bytes, never more. Two choices of {@value #BUCKET} slots take about 88% of the
 * slots before the first id finds both its buckets full of live ones: such an id is refused ({@link #add} returns
 * false) and the caller keeps it elsewhere. An id already held is never refused.
 *
 * <p>Not thread-safe: one owner.
 */
public final class ExpiringIdSet {
    /** Slots per bucket. */
    public static final int BUCKET = 16;

    /** The expiry of an empty slot, and {@link #expiryOf}'s answer for an id not held. */
    public static final long NONE = Long.MIN_VALUE;

    private final long[] his;
    private final long[] los;
    private final long[] expiries;
    /** The buckets minus one (their number is a power of two). */
    private final int bucketMask;

    /** A set of {@code capacity} slots, a power of two of at least {@value #BUCKET}. */
    public ExpiringIdSet(int capacity) {
        if (capacity < BUCKET || Integer.bitCount(capacity) != 1)
            throw new IllegalArgumentException(
                    "capacity must be a power of two of at least " + BUCKET + ", got " + capacity);
        this.his = new long[capacity];
        this.los = new long[capacity];
        this.expiries = new long[capacity];
        Arrays.fill(expiries, NONE);
        this.bucketMask = capacity / BUCKET - 1;
    }

    /** The expiry held for the id {@code (hi, lo)}, expired or not, or {@link #NONE} if it holds none. */
    public long expiryOf(long hi, long lo) {
        int at = find(hi, lo);
        return at < 0 ? NONE : expiries[at];
    }

    /**
     * Holds the id {@code (hi, lo)} with expiry {@code expiresAt} in place of any it held. False if it did not
     * hold the id and both its buckets were full of ids live at {@code now} (expiring after it): the id is not
     * held then.
     */
    public boolean add(long hi, long lo, long expiresAt, long now) {
        int at = find(hi, lo);
        if (at < 0) {
            int first = firstBucket(hi);
            int other = otherBucket(lo);
            int inFirst = free(first, now);
            int inOther = free(other, now);
            if (inFirst < 0) at = inOther;
            else if (inOther < 0) at = inFirst;
            else at = live(first, now) <= live(other, now) ? inFirst : inOther;
            if (at < 0) return false;
            his[at] = hi;
            los[at] = lo;
        }
        expiries[at] = expiresAt;
        return true;
    }

    /** The slots. */
    public int capacity() {
        return expiries.length;
    }

    /** The heap the slots take, in bytes. */
    public long bytes() {
        return 24L * expiries.length;
    }

    /** The slot that holds the id, -1 if none. */
    private int find(long hi, long lo) {
        int at = in(firstBucket(hi), hi, lo);
        return at >= 0 ? at : in(otherBucket(lo), hi, lo);
    }

    private int in(int bucket, long hi, long lo) {
        for (int at = bucket * BUCKET, end = at + BUCKET; at < end; at++)
            if (his[at] == hi && los[at] == lo && expiries[at] != NONE) return at;
        return -1;
    }

    private int firstBucket(long hi) {
        return (int) (hi >>> 32) & bucketMask;
    }

    private int otherBucket(long lo) {
        return (int) (lo >>> 32) & bucketMask;
    }

    /** The index of a free slot of the bucket (empty, or expired at {@code now}), -1 if none. */
    private int free(int bucket, long now) {
        for (int at = bucket * BUCKET, end = at + BUCKET; at < end; at++) if (expiries[at] <= now) return at;
        return -1;
    }

    private int live(int bucket, long now) {
        int n = 0;
        for (int at = bucket * BUCKET, end = at + BUCKET; at < end; at++) if (expiries[at] > now) n++;
        return n;
    }
}
