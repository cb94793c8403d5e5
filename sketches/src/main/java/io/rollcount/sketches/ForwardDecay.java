package io.rollcount.sketches;

/**
 * Exponential decay with a half-life, computed as forward decay (Cormode, Shkapenyuk, Srivastava,
 * Xu: "Forward Decay: A Practical Time Decay Model for Streaming Systems", ICDE 2009).
 *
 * <p>An item of weight w at event time t is stored as {@code w * 2^((t - L) / h)} against a landmark
 * L; the decayed value at time {@code now} of a stored sum S is {@code S * 2^(-(now - L) / h)}, which
 * equals {@code sum w_i * 2^(-(now - t_i) / h)} exactly (up to floating-point rounding). Landmarks are
 * multiples of h since the epoch. When an event reaches {@code L + h}, the owner moves the landmark
 * to the multiple of h at or before the event and multiplies every stored value by 2^-k for the k
 * half-lives it moved (exact in binary floating point: {@link Math#scalb}), so stored weights stay
 * below 2 * w and never overflow however long the stream runs. A half-life of 0 means no decay.
 *
 * <p>{@link #weight} is on every update's path: {@code 2^(d / h)} for {@code 0 <= d < h} is a product
 * of three table entries (d split into 20 + 10 + 10 bits), within a few ulps of {@link Math#pow};
 * other offsets (late events before the landmark) fall back to {@link Math#pow}.
 */
final class ForwardDecay {
    static final ForwardDecay NONE = new ForwardDecay(0);
    /** Beyond this many halvings every finite double is zero. */
    private static final int MAX_HALVINGS = 2200;

    private static final int MAX_HI = 1 << 16;
    private static volatile ForwardDecay last = NONE;

    final long halfLifeMillis;
    private final double[] hi;
    private final double[] mid;
    private final double[] lo;

    private ForwardDecay(long halfLifeMillis) {
        this.halfLifeMillis = halfLifeMillis;
        if (halfLifeMillis == 0) {
            hi = mid = lo = new double[0];
            return;
        }
        int hiLength = (int) Math.min(MAX_HI, (halfLifeMillis >>> 20) + 2);
        hi = table(hiLength, 20);
        mid = table(1024, 10);
        lo = table(1024, 0);
    }

    /** The decay of the given half-life (0 = none), shared between sketches of the same half-life. */
    static ForwardDecay of(long halfLifeMillis) {
        if (halfLifeMillis < 0) {
            throw new IllegalArgumentException("half-life must be >= 0 ms (0 = no decay), got " + halfLifeMillis);
        }
        ForwardDecay d = last;
        if (d.halfLifeMillis != halfLifeMillis) {
            d = new ForwardDecay(halfLifeMillis);
            last = d;
        }
        return d;
    }

    private double[] table(int length, int shift) {
        double[] t = new double[length];
        for (int j = 0; j < length; j++) {
            t[j] = Math.pow(2, (double) ((long) j << shift) / halfLifeMillis);
        }
        return t;
    }

    boolean decays() {
        return halfLifeMillis != 0;
    }

    /** The landmark for an event at {@code t}: the multiple of the half-life at or before it. */
    long landmarkFor(long t) {
        return decays() ? Math.floorDiv(t, halfLifeMillis) * halfLifeMillis : 0;
    }

    /** True if an event at {@code t} must first move the landmark on from {@code landmark}. */
    boolean moves(long landmark, long t) {
        return decays() && t - landmark >= halfLifeMillis;
    }

    /** The forward-decay weight {@code 2^((t - landmark) / h)} of an event at {@code t}. */
    double weight(long t, long landmark) {
        if (!decays()) {
            return 1;
        }
        long d = t - landmark;
        if (d >= 0 && (d >>> 20) < hi.length) {
            return hi[(int) (d >>> 20)] * mid[(int) (d >>> 10) & 1023] * lo[(int) d & 1023];
        }
        return Math.pow(2, (double) d / halfLifeMillis);
    }

    /** The factor {@code 2^(-(now - landmark) / h)} turning stored values into values decayed to {@code now}. */
    double toNow(long now, long landmark) {
        return decays() ? Math.pow(2, -(double) (now - landmark) / halfLifeMillis) : 1;
    }

    /** The exponent k of the exact factor 2^-k for moving a landmark {@code from} to {@code to}. */
    int halvings(long from, long to) {
        return (int) Math.min(MAX_HALVINGS, (to - from) / halfLifeMillis);
    }
}
