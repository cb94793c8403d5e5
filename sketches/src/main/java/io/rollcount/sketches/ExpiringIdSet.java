package io.rollcount.sketches;

import java.util.Arrays;

/**
 * An exact set of ids that expire, in bounded memory: each id stands as a 128-bit fingerprint (two independent
 * 64-bit hashes of it, {@code hi} and {@code lo}) with the time it expires at, and {@link #expiryOf} answers with
 * that time, or {@link #NONE} for an id it does not hold. Two ids are told apart unless both their 64-bit hashes
 * collide (about one pair in 2^64 per id held; a caller that deduplicates with it would then drop one real
 * event in that many).
 *
 * <p>Layout: one {@code long[]} of buckets of {@value #BUCKET} slots (their number a power of two), each bucket
 * its slots' upper halves, then their lower halves, then their expiries in milliseconds exactly as added
 * ({@link #NONE}: the slot is empty), so that a bucket is 384 contiguous bytes. An id has two buckets, one chosen by
 * each half. {@link #add} sets the expiry of the slot that holds the id, or else takes a free slot (empty, or
 * expired at the given time) of its first bucket, or of the other where the first has {@value #SPILL_AT} live
 * slots or more and the other fewer; a bit per bucket ({@code spilled}, 1 bit per 384 bytes) says whether an id of
 * that first bucket was ever put in its other one, and {@link #expiryOf} looks at the other bucket only then.
 * Most ids so cost one bucket's cache lines, not two.
 *
 * <p>Bounds: {@code 24 * capacity} bytes and a bit per bucket, never more. The first id finds both its buckets
 * full of live ones at about 88% of the slots (its test measures it): such an id is refused ({@link #add} returns
 * false) and the caller keeps it elsewhere. An id already held is never refused. The spilled bits are never
 * cleared, which only makes lookups of those buckets look at both.
 *
 * <p>Not thread-safe: one owner.
 */
public final class ExpiringIdSet {
    /** Slots per bucket. */
    public static final int BUCKET = 16;

    /** The expiry of an empty slot, and {@link #expiryOf}'s answer for an id not held. */
    public static final long NONE = Long.MIN_VALUE;

    /** Live slots of an id's first bucket from which the other bucket is taken where it has fewer. */
    static final int SPILL_AT = 10;

    /** Offsets in a bucket: the lower halves, the expiries; its length. */
    private static final int LO = BUCKET;

    private static final int EXPIRY = 2 * BUCKET;
    private static final int STRIDE = 3 * BUCKET;

    private final long[] buckets;
    /** A bit per bucket: whether an id whose first bucket it is was ever put in its other bucket. */
    private final long[] spilled;
    /** The buckets minus one (their number is a power of two). */
    private final int bucketMask;

    /** A set of {@code capacity} slots, a power of two of at least {@value #BUCKET}. */
    public ExpiringIdSet(int capacity) {
        if (capacity < BUCKET || Integer.bitCount(capacity) != 1)
            throw new IllegalArgumentException(
                    "capacity must be a power of two of at least " + BUCKET + ", got " + capacity);
        int count = capacity / BUCKET;
        this.buckets = new long[count * STRIDE];
        for (int b = 0; b < count; b++) Arrays.fill(buckets, b * STRIDE + EXPIRY, (b + 1) * STRIDE, NONE);
        this.spilled = new long[(count + 63) >>> 6];
        this.bucketMask = count - 1;
    }

    /** The expiry held for the id {@code (hi, lo)}, expired or not, or {@link #NONE} if it holds none. */
    public long expiryOf(long hi, long lo) {
        int at = find(hi, lo);
        return at < 0 ? NONE : buckets[at + EXPIRY];
    }

    /**
     * Holds the id {@code (hi, lo)} with expiry {@code expiresAt} in place of any it held. False if it did not
     * hold the id and both its buckets were full of ids live at {@code now} (expiring after it): the id is not
     * held then.
     */
    public boolean add(long hi, long lo, long expiresAt, long now) {
        int at = find(hi, lo);
        if (at < 0) at = take(hi, lo, now);
        if (at < 0) return false;
        buckets[at + EXPIRY] = expiresAt;
        return true;
    }

    /** What {@link #addIfNotLive} did. */
    public enum Added {
        /** The id was held live: nothing changed. */
        LIVE,
        /** The id is held with the new expiry. */
        ADDED,
        /** As {@link #add} returning false: the id is not held. */
        REFUSED
    }

    /**
     * {@link #add} unless the id is held with an expiry after {@code now} ({@link Added#LIVE}, left as it is): one
     * probe of its buckets where {@link #expiryOf} then {@link #add} take two.
     */
    public Added addIfNotLive(long hi, long lo, long expiresAt, long now) {
        int at = find(hi, lo);
        if (at >= 0 && buckets[at + EXPIRY] > now) return Added.LIVE;
        if (at < 0) at = take(hi, lo, now);
        if (at < 0) return Added.REFUSED;
        buckets[at + EXPIRY] = expiresAt;
        return Added.ADDED;
    }

    /**
     * A free slot at {@code now} for the id not held, its halves written there, or -1 where both its buckets are
     * full of live ids: of its first bucket, or of the other where that has fewer live slots and the first
     * {@value #SPILL_AT} or more (the first bucket's spilled bit then set).
     */
    private int take(long hi, long lo, long now) {
        int first = firstBucket(hi);
        long inFirst = scan(first, now);
        int at = (int) inFirst;
        int liveFirst = (int) (inFirst >> 32);
        if (at < 0 || liveFirst >= SPILL_AT) {
            int other = otherBucket(lo);
            long inOther = scan(other, now);
            if ((int) inOther >= 0 && (at < 0 || (int) (inOther >> 32) < liveFirst)) {
                at = (int) inOther;
                spilled[first >>> 6] |= 1L << first;
            }
            if (at < 0) return -1;
        }
        buckets[at] = hi;
        buckets[at + LO] = lo;
        return at;
    }

    /** The slots. */
    public int capacity() {
        return (bucketMask + 1) * BUCKET;
    }

    /** The heap the slots take, in bytes. */
    public long bytes() {
        return 8L * (buckets.length + spilled.length);
    }

    /** The index of the slot that holds the id, -1 if none. */
    private int find(long hi, long lo) {
        int first = firstBucket(hi);
        int at = in(first, hi, lo);
        if (at >= 0 || (spilled[first >>> 6] & 1L << first) == 0) return at;
        return in(otherBucket(lo), hi, lo);
    }

    private int in(int bucket, long hi, long lo) {
        for (int at = bucket * STRIDE, end = at + BUCKET; at < end; at++)
            if (buckets[at] == hi && buckets[at + LO] == lo && buckets[at + EXPIRY] != NONE) return at;
        return -1;
    }

    /** The bucket's live slots at {@code now} (upper 32 bits) and the index of a free one, or -1 (lower 32 bits). */
    private long scan(int bucket, long now) {
        int free = -1;
        int live = 0;
        for (int at = bucket * STRIDE, end = at + BUCKET; at < end; at++) {
            if (buckets[at + EXPIRY] > now) live++;
            else if (free < 0) free = at;
        }
        return (long) live << 32 | (free & 0xFFFF_FFFFL);
    }

    private int firstBucket(long hi) {
        return (int) (hi >>> 32) & bucketMask;
    }

    private int otherBucket(long lo) {
        return (int) (lo >>> 32) & bucketMask;
    }
}
