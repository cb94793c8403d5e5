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
 * <p>Growth: a set made with a smaller initial capacity than its bound doubles its slots (and reads its live ids
 * into the new ones) when more than half of them hold live ids, counted once a quarter of the slots have been taken
 * by new ids since the last count, and whenever an id finds both its buckets full, until it reaches its bound; so
 * the memory follows the ids held, and a set below its bound refuses no id.
 *
 * <p>Bounds: {@code 24 * capacity} bytes and a bit per bucket, at most {@code 24 * maxCapacity} (while it grows,
 * the slots before and after: 1.5 times that). The first id finds both its buckets full of live ones at about 88% of
 * the slots (its test measures it): at its bound such an id is refused ({@link #add} returns false) and the caller
 * keeps it elsewhere. An id already held is never refused. The spilled bits are never cleared, which only makes
 * lookups of those buckets look at both.
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

    // ---- the slots (replaced when the set grows)
    private long[] buckets;
    /** A bit per bucket: whether an id whose first bucket it is was ever put in its other bucket. */
    private long[] spilled;
    /** The buckets minus one (their number is a power of two). */
    private int bucketMask;

    // ---- growth
    /** The most slots it grows to. */
    private final int maxCapacity;
    /** The most slots it still tries to grow to: {@link #maxCapacity}, or its slots once growing found no room. */
    private int growTo;
    /** Slots taken by new ids since the live ids were last counted. */
    private int taken;

    /** A set of {@code capacity} slots, a power of two of at least {@value #BUCKET}, that never grows. */
    public ExpiringIdSet(int capacity) {
        this(capacity, capacity);
    }

    /**
     * A set of {@code capacity} slots that grows up to {@code maxCapacity} (see the class comment), both powers of
     * two of at least {@value #BUCKET}.
     */
    public ExpiringIdSet(int capacity, int maxCapacity) {
        checkCapacity("capacity", capacity);
        checkCapacity("maxCapacity", maxCapacity);
        if (maxCapacity < capacity)
            throw new IllegalArgumentException(
                    "maxCapacity must be at least capacity " + capacity + ", got " + maxCapacity);
        this.maxCapacity = maxCapacity;
        this.growTo = maxCapacity;
        allocate(capacity);
    }

    private static void checkCapacity(String name, int capacity) {
        if (capacity < BUCKET || Integer.bitCount(capacity) != 1)
            throw new IllegalArgumentException(
                    name + " must be a power of two of at least " + BUCKET + ", got " + capacity);
    }

    private void allocate(int capacity) {
        int count = capacity / BUCKET;
        buckets = new long[count * STRIDE];
        for (int b = 0; b < count; b++) Arrays.fill(buckets, b * STRIDE + EXPIRY, (b + 1) * STRIDE, NONE);
        spilled = new long[(count + 63) >>> 6];
        bucketMask = count - 1;
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
        if (at < 0) at = takeOrGrow(hi, lo, now);
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
        if (at < 0) at = takeOrGrow(hi, lo, now);
        if (at < 0) return Added.REFUSED;
        buckets[at + EXPIRY] = expiresAt;
        return Added.ADDED;
    }

    /** {@link #take}, the set grown first where it is due to (see the class comment) or where that finds no slot. */
    private int takeOrGrow(long hi, long lo, long now) {
        if (capacity() < growTo && ++taken >= capacity() / 4) growIfHalfLive(now);
        int at = take(hi, lo, now);
        while (at < 0 && capacity() < growTo) {
            grow(now);
            at = take(hi, lo, now);
        }
        return at;
    }

    private void growIfHalfLive(long now) {
        taken = 0;
        if (live(now) > capacity() / 2) grow(now);
    }

    /**
     * Doubles the slots, reading the ids live at {@code now} into the new ones; where one finds no room there (its
     * two buckets full: never seen with ids that are hashes), doubles again from the old slots, and where none up to
     * {@link #growTo} takes them all, keeps the old slots and grows no more.
     */
    private void grow(long now) {
        taken = 0;
        long[] oldBuckets = buckets;
        long[] oldSpilled = spilled;
        int oldMask = bucketMask;
        for (int size = 2 * capacity(); size > 0 && size <= growTo; size *= 2) {
            allocate(size);
            if (readLive(oldBuckets, now)) return;
        }
        buckets = oldBuckets;
        spilled = oldSpilled;
        bucketMask = oldMask;
        growTo = capacity();
    }

    /** Reads the ids of {@code old} live at {@code now} into the slots; false where one found no room. */
    private boolean readLive(long[] old, long now) {
        for (int b = 0; b < old.length; b += STRIDE)
            for (int at = b; at < b + BUCKET; at++)
                if (old[at + EXPIRY] > now) {
                    int to = take(old[at], old[at + LO], now);
                    if (to < 0) return false;
                    buckets[to + EXPIRY] = old[at + EXPIRY];
                }
        return true;
    }

    /** The slots holding ids live at {@code now}. */
    private int live(long now) {
        int live = 0;
        for (int b = 0; b < buckets.length; b += STRIDE)
            for (int at = b + EXPIRY; at < b + STRIDE; at++) if (buckets[at] > now) live++;
        return live;
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
