package io.rollcount.sketches;

import java.util.Arrays;
import java.util.List;

/**
 * Trending items: a decayed conservative-update {@link CountMinSketch} and a {@link SpaceSavingTopK}
 * on one clock. An event of weight {@code w > 0} at event time t scores {@code w * 2^(-(now - t) / halfLife)}
 * at time {@code now} (Rollcount passes the watermark as {@code now}); weights {@code <= 0} are ignored,
 * so decrements never lower a trending score. An item the top-K monitors is found by its String hash
 * code and only adds to its counter there (the Count-Min sketch receives that weight when the item
 * leaves the top-K: Roy et al.'s Augmented Sketch); any other item is hashed once for the sketch,
 * updates it and enters the top-K with the sketch's estimate as its bound if that beats the top-K's
 * minimum.
 *
 * <p>Guarantees (see the two classes): every item whose decayed count exceeds
 * {@code N / (capacity + 1)} is in {@link #topK}{@code (capacity, now)}; each reported item's true
 * decayed count lies in {@code [lower, upper]}; {@code upper <= count + epsilon * N} with probability
 * at least {@code 1 - delta} (Count-Min), and {@code upper - lower <= N / (capacity + 1)}.
 *
 * <p>Serialized format ({@link #toBytes()}), little-endian: byte 0 serial version 1, byte 1 family
 * 0x52 ('R'), bytes 2..3 zero, bytes 4..7 the length L of the Count-Min bytes (int32), bytes 8..15 the
 * latest event time seen (int64 epoch ms, {@code Long.MIN_VALUE} before the first event), then L bytes
 * of {@link CountMinSketch#toBytes()}, then {@link SpaceSavingTopK#toBytes()} to the end.
 *
 * <p>Not thread-safe.
 */
public final class TrendingSketch {
    /** Default top-K capacity: 400 counters for a top 100. */
    public static final int DEFAULT_CAPACITY = 400;
    /** Default Count-Min epsilon: width 2719. */
    public static final double DEFAULT_EPSILON = 0.001;
    /** Default Count-Min delta: depth 5. */
    public static final double DEFAULT_DELTA = 0.01;

    static final byte SERIAL_VERSION = 1;
    static final byte FAMILY = 0x52;
    private static final int HEADER = 16;

    private final CountMinSketch cms;
    private final SpaceSavingTopK topK;
    private long latestEventMillis = Long.MIN_VALUE;

    /** The defaults: capacity 400, epsilon 0.001, delta 0.01, a fixed seed. */
    public TrendingSketch(long halfLifeMillis) {
        this(DEFAULT_CAPACITY, DEFAULT_EPSILON, DEFAULT_DELTA, 0x7e4d1c5aL, halfLifeMillis);
    }

    public TrendingSketch(int capacity, double epsilon, double delta, long seed, long halfLifeMillis) {
        this(new CountMinSketch(epsilon, delta, seed, halfLifeMillis), new SpaceSavingTopK(capacity, halfLifeMillis));
    }

    private TrendingSketch(CountMinSketch cms, SpaceSavingTopK topK) {
        if (cms.halfLifeMillis() != topK.halfLifeMillis() || cms.landmarkMillis() != topK.landmarkMillis()) {
            throw new SketchFormatException("Count-Min and top-K are on different clocks: half-lives "
                    + cms.halfLifeMillis() + " and " + topK.halfLifeMillis() + " ms, landmarks "
                    + cms.landmarkMillis() + " and " + topK.landmarkMillis());
        }
        this.cms = cms;
        this.topK = topK;
    }

    /** Counts {@code weight} for {@code item} at {@code eventTimeMillis}; ignores weights {@code <= 0}. */
    public void update(String item, double weight, long eventTimeMillis) {
        if (Double.isNaN(weight) || weight == Double.POSITIVE_INFINITY) {
            throw new IllegalArgumentException("weight must be finite, got " + weight);
        }
        if (weight <= 0) {
            return;
        }
        advanceTo(eventTimeMillis);
        latestEventMillis = Math.max(latestEventMillis, eventTimeMillis);
        double stored = weight * cms.decay().weight(eventTimeMillis, cms.landmarkMillis());
        topK.offer(item, stored, cms);
    }

    /** Moves both structures' landmark on to {@code timeMillis} if a half-life or more has passed. */
    public void advanceTo(long timeMillis) {
        cms.advanceTo(timeMillis);
        topK.advanceTo(timeMillis);
    }

    /**
     * Merges {@code other} (same capacity, dimensions, seed and half-life) into this sketch.
     *
     * @throws IllegalArgumentException if they differ
     */
    public void merge(TrendingSketch other) {
        cms.checkMergeable(other.cms); // before anything of this sketch changes
        topK.checkMergeable(other.topK);
        cms.merge(other.cms);
        topK.merge(other.topK, cms);
        latestEventMillis = Math.max(latestEventMillis, other.latestEventMillis);
    }

    /** The top {@code min(k, capacity)} items, scores and bounds decayed to {@code nowMillis}. */
    public List<RankedItem> topK(int k, long nowMillis) {
        return topK.ranked(k, nowMillis, cms);
    }

    /** The top items decayed to the latest event time seen (no decay at all before the first event). */
    public List<RankedItem> topK(int k) {
        return topK(k, latestEventMillis == Long.MIN_VALUE ? cms.landmarkMillis() : latestEventMillis);
    }

    /**
     * The estimated decayed count of {@code item} at {@code nowMillis}: the Count-Min estimate plus the
     * weight the top-K holds for it, an upper bound like a Count-Min estimate.
     */
    public double estimate(String item, long nowMillis) {
        double stored = cms.storedEstimate(CountMinSketch.hash(item)) + topK.pendingOf(item);
        return stored * cms.decay().toNow(nowMillis, cms.landmarkMillis());
    }

    /** The total weight N, decayed to {@code nowMillis}. */
    public double totalWeight(long nowMillis) {
        return topK.totalWeight(nowMillis);
    }

    public int capacity() {
        return topK.capacity();
    }

    public long halfLifeMillis() {
        return cms.halfLifeMillis();
    }

    /** The serialized form (layout in the class comment). */
    public byte[] toBytes() {
        byte[] c = cms.toBytes();
        byte[] t = topK.toBytes();
        byte[] out = new byte[HEADER + c.length + t.length];
        out[0] = SERIAL_VERSION;
        out[1] = FAMILY;
        Bytes.putInt(out, 4, c.length);
        Bytes.putLong(out, 8, latestEventMillis);
        System.arraycopy(c, 0, out, HEADER, c.length);
        System.arraycopy(t, 0, out, HEADER + c.length, t.length);
        return out;
    }

    /** Reads {@link #toBytes()}; rejects anything else with a {@link SketchFormatException}. */
    public static TrendingSketch fromBytes(byte[] in) {
        Bytes.need(in, 0, HEADER, "trending sketch header");
        if (in[1] != FAMILY) {
            throw new SketchFormatException("not a trending sketch: family byte " + in[1] + ", expected " + FAMILY);
        }
        if (in[0] != SERIAL_VERSION) {
            throw new SketchFormatException("unsupported trending sketch serial version " + in[0]);
        }
        int cmsLength = Bytes.getInt(in, 4, "trending sketch header");
        if (cmsLength < 0 || cmsLength > in.length - HEADER) {
            throw new SketchFormatException(
                    "corrupt trending sketch: Count-Min length " + cmsLength + " of " + in.length + " bytes");
        }
        CountMinSketch cms = CountMinSketch.fromBytes(Arrays.copyOfRange(in, HEADER, HEADER + cmsLength));
        SpaceSavingTopK topK = SpaceSavingTopK.fromBytes(Arrays.copyOfRange(in, HEADER + cmsLength, in.length));
        TrendingSketch sketch = new TrendingSketch(cms, topK);
        sketch.latestEventMillis = Bytes.getLong(in, 8, "trending sketch header");
        return sketch;
    }
}
