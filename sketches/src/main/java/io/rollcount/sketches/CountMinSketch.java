package io.rollcount.sketches;

import java.util.Arrays;

/**
 * A Count-Min sketch (Cormode and Muthukrishnan, "An Improved Data Stream Summary: The Count-Min
 * Sketch and its Applications", J. Algorithms 2005) with weighted updates, conservative update
 * (Estan and Varghese, "New Directions in Traffic Measurement and Accounting", SIGCOMM 2002) and
 * exponential time decay by forward decay (Cormode et al. 2009, see {@link ForwardDecay}).
 *
 * <p><b>Sizing and error.</b> {@code width = ceil(e / epsilon)}, {@code depth = ceil(ln(1 / delta))}.
 * With non-negative weights, {@code estimate(x) >= count(x)} always, and
 * {@code estimate(x) <= count(x) + epsilon * N} with probability at least {@code 1 - delta}, where
 * {@code N} is the total weight; with decay, every count, N and estimate are the exponentially decayed
 * ones: an event of weight w at time t counts {@code w * 2^(-(now - t) / halfLife)} at time {@code now}.
 * Conservative update (on by default) only raises the counters of an item to its new minimum
 * estimate; it keeps both guarantees and usually cuts the error several times over. It applies to
 * non-negative weights; a negative weight is added to every row as a plain update (the turnstile
 * model: estimates are then no longer guaranteed upper bounds).
 *
 * <p><b>Layout.</b> {@code depth} rows of {@code width} 64-bit cells in one {@code long[]}, row i at
 * {@code i * width}. Row i's column for an item of 64-bit hash x is {@code fastrange32(h1 + i * h2)},
 * with {@code h1 = mix64(x ^ seed)}, {@code h2 = rotateLeft(h1, 32) | 1} (Kirsch and Mitzenmacher's
 * double hashing) and {@code fastrange32(y) = ((y >>> 32) * width) >>> 32} (Lemire: no division).
 * The item hash x of a string ({@link #hash(String)}) is {@code mix64((hashCode << 32 | length) ^ seed)}:
 * free once the String has cached its {@code hashCode} (DataSketches' ItemsSketch relies on it too);
 * two distinct items share every row only if their 32-bit hash codes and lengths are equal, a pair
 * probability of about 2^-32, far below the sketch's own per-row collision probability 1/width.
 *
 * <p><b>Update path.</b> A conservative update reads the item's {@code depth} cells, takes their minimum
 * m and stores {@code max(cell, m + w)} into every one, raised or not: which rows need raising is
 * data-dependent, so a branch per row would be mispredicted often. While the cells are non-negative
 * (always, unless negative weights were added) their raw bits order as signed longs, so minimum and
 * maximum are integer conditional moves; depth 5 (the default delta, 0.01) is unrolled, its five cells
 * located once.
 *
 * <p><b>Counter representation.</b> Decayed weights are fractional, so each 64-bit cell holds the IEEE
 * 754 binary64 bits of its value ({@link Double#doubleToRawLongBits}), not a fixed-point integer:
 * renormalisation then halves exactly ({@link Math#scalb}, no bit lost per half-life, as a shift of a
 * fixed-point counter would lose), a delta up to 10^12 and a weight as small as 2^-1000 both fit, and an
 * estimate equals the closed-form decayed sum within a few ulps. Integer weights without decay are
 * exact up to 2^53. Cells cannot wrap: a sum beyond {@link Double#MAX_VALUE} saturates there (and at
 * {@code -MAX_VALUE} below); with forward decay stored values stay under twice the decayed total, so
 * saturation needs totals near 10^308. Non-finite weights are rejected.
 *
 * <p><b>Serialized format</b> ({@link #toBytes()}), little-endian:
 * <pre>
 * byte  0      serial version, 2 (version 1 hashed items differently: refused, not misread)
 * byte  1      family, 0x43 ('C')
 * byte  2      flags: bit 0 conservative update, bit 1 sparse body
 * byte  3      depth, 1..255
 * byte  4..7   width, int32 &gt; 0
 * byte  8..15  seed, int64
 * byte 16..23  half-life in ms, int64 (0 = no decay)
 * byte 24..31  landmark in epoch ms, int64
 * byte 32..39  total weight N (stored, i.e. forward-decayed against the landmark), binary64
 * dense body   byte 40..: depth * width cells, binary64 each, row after row
 * sparse body  byte 40..43: n, int32, the number of non-zero cells; then n times
 *              (cell index int32 strictly increasing, value binary64): 12 bytes per cell
 * </pre>
 * The sparse body is written when it is shorter than the dense one.
 *
 * <p>Not thread-safe.
 */
public final class CountMinSketch {
    /** The seed of {@link #hash(String)}; the sketch's own seed picks the rows. */
    public static final long ITEM_HASH_SEED = 0x9747b28cL;

    static final byte SERIAL_VERSION = 2;
    static final byte FAMILY = 0x43;
    private static final int HEADER = 40;

    private final int width;
    private final int depth;
    private final long seed;
    private final boolean conservative;
    private final ForwardDecay decay;
    private final long[] table;
    private long landmark;
    private double total;

    /** A conservative-update sketch sized from (epsilon, delta); {@code halfLifeMillis} 0 = no decay. */
    public CountMinSketch(double epsilon, double delta, long seed, long halfLifeMillis) {
        this(widthFor(epsilon), depthFor(delta), seed, halfLifeMillis, true);
    }

    /** A sketch of explicit dimensions. */
    public CountMinSketch(int width, int depth, long seed, long halfLifeMillis, boolean conservative) {
        if (width < 1 || depth < 1 || depth > 255 || (long) width * depth > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException(
                    "Count-Min dimensions out of range: width " + width + ", depth " + depth);
        }
        this.width = width;
        this.depth = depth;
        this.seed = seed;
        this.conservative = conservative;
        this.decay = ForwardDecay.of(halfLifeMillis);
        this.table = new long[width * depth];
    }

    /** {@code ceil(e / epsilon)}. */
    public static int widthFor(double epsilon) {
        if (!(epsilon > 0 && epsilon < 1)) {
            throw new IllegalArgumentException("epsilon must be in (0, 1), got " + epsilon);
        }
        return (int) Math.ceil(Math.E / epsilon);
    }

    /** {@code ceil(ln(1 / delta))}. */
    public static int depthFor(double delta) {
        if (!(delta > 0 && delta < 1)) {
            throw new IllegalArgumentException("delta must be in (0, 1), got " + delta);
        }
        return (int) Math.ceil(Math.log(1 / delta));
    }

    /** The 64-bit item hash used by {@link #updateHash}: the String's hash code and length, mixed. */
    public static long hash(String item) {
        return Hashing.mix64(((long) item.hashCode() << 32 | item.length()) ^ ITEM_HASH_SEED);
    }

    // ------------------------------------------------------------------ updates

    /** Adds {@code weight} for {@code item} at event time {@code eventTimeMillis}. */
    public void update(String item, double weight, long eventTimeMillis) {
        updateHash(hash(item), weight, eventTimeMillis);
    }

    /** Adds {@code weight} for the item of hash {@link #hash(String)} at event time {@code eventTimeMillis}. */
    public void updateHash(long itemHash, double weight, long eventTimeMillis) {
        checkWeight(weight);
        advanceTo(eventTimeMillis);
        addStored(itemHash, weight * decay.weight(eventTimeMillis, landmark));
    }

    /** Moves the landmark on to {@code timeMillis} if a half-life or more has passed (halving the counters). */
    public void advanceTo(long timeMillis) {
        if (decay.moves(landmark, timeMillis)) {
            renormalize(decay.landmarkFor(timeMillis));
        }
    }

    /** Adds a stored (forward-decayed) weight; returns the item's stored estimate after the update. */
    double addStored(long itemHash, double stored) {
        long h1 = Hashing.mix64(itemHash ^ seed);
        long h2 = Long.rotateLeft(h1, 32) | 1;
        total = saturate(total + stored);
        if (conservative && stored >= 0) {
            return depth == 5 ? raise5(h1, h2, stored) : raise(h1, h2, stored);
        }
        return addToAll(h1, h2, stored);
    }

    /** {@link #raise} unrolled for depth 5 (the default delta, 0.01): five cells located once, read, written. */
    private double raise5(long h1, long h2, double stored) {
        long[] t = table;
        int w = width;
        int c0 = column(h1);
        int c1 = w + column(h1 + h2);
        int c2 = 2 * w + column(h1 + 2 * h2);
        int c3 = 3 * w + column(h1 + 3 * h2);
        int c4 = 4 * w + column(h1 + 4 * h2);
        long b0 = t[c0], b1 = t[c1], b2 = t[c2], b3 = t[c3], b4 = t[c4];
        if ((b0 | b1 | b2 | b3 | b4) < 0) {
            return raiseSigned(h1, h2, stored);
        }
        long target = raised(Math.min(Math.min(Math.min(b0, b1), Math.min(b2, b3)), b4), stored);
        t[c0] = Math.max(b0, target);
        t[c1] = Math.max(b1, target);
        t[c2] = Math.max(b2, target);
        t[c3] = Math.max(b3, target);
        t[c4] = Math.max(b4, target);
        return Double.longBitsToDouble(target);
    }

    /**
     * Conservative update without a branch per row: while every cell is a non-negative double (bits
     * with the sign clear), the cells order as their raw bits do as signed longs, so the minimum and the
     * raise are long min and max (conditional moves), and every cell is stored, raised or not.
     */
    private double raise(long h1, long h2, double stored) {
        long signs = 0;
        long min = Long.MAX_VALUE;
        long x = h1;
        for (int row = 0, base = 0; row < depth; row++, base += width, x += h2) {
            long bits = table[base + column(x)];
            signs |= bits;
            min = Math.min(min, bits);
        }
        if (signs < 0) {
            return raiseSigned(h1, h2, stored);
        }
        long target = raised(min, stored);
        x = h1;
        for (int row = 0, base = 0; row < depth; row++, base += width, x += h2) {
            int cell = base + column(x);
            table[cell] = Math.max(table[cell], target);
        }
        return Double.longBitsToDouble(target);
    }

    /** The bits of {@code saturate(minimum + stored)}, for a non-negative minimum given as bits. */
    private static long raised(long minimumBits, double stored) {
        return Double.doubleToRawLongBits(saturate(Double.longBitsToDouble(minimumBits) + stored));
    }

    /** Conservative update when some cell is negative (turnstile use): compared as doubles. */
    private double raiseSigned(long h1, long h2, double stored) {
        double target = saturate(minimum(h1, h2) + stored);
        raiseTo(h1, h2, target);
        return target;
    }

    private double minimum(long h1, long h2) {
        double min = Double.POSITIVE_INFINITY;
        long x = h1;
        for (int row = 0, base = 0; row < depth; row++, base += width, x += h2) {
            double v = Double.longBitsToDouble(table[base + column(x)]);
            min = v < min ? v : min;
        }
        return min;
    }

    private void raiseTo(long h1, long h2, double target) {
        long x = h1;
        for (int row = 0, base = 0; row < depth; row++, base += width, x += h2) {
            int cell = base + column(x);
            if (Double.longBitsToDouble(table[cell]) < target) {
                table[cell] = Double.doubleToRawLongBits(target);
            }
        }
    }

    private double addToAll(long h1, long h2, double stored) {
        double min = Double.POSITIVE_INFINITY;
        long x = h1;
        for (int row = 0, base = 0; row < depth; row++, base += width, x += h2) {
            int cell = base + column(x);
            double v = saturate(Double.longBitsToDouble(table[cell]) + stored);
            table[cell] = Double.doubleToRawLongBits(v);
            min = v < min ? v : min;
        }
        return min;
    }

    private int column(long x) {
        return (int) (((x >>> 32) * width) >>> 32);
    }

    private static double saturate(double v) {
        return v > Double.MAX_VALUE ? Double.MAX_VALUE : v < -Double.MAX_VALUE ? -Double.MAX_VALUE : v;
    }

    private static void checkWeight(double weight) {
        if (!Double.isFinite(weight)) {
            throw new IllegalArgumentException("weight must be finite, got " + weight);
        }
    }

    private void renormalize(long newLandmark) {
        int k = decay.halvings(landmark, newLandmark);
        for (int i = 0; i < table.length; i++) {
            if (table[i] != 0) {
                table[i] = Double.doubleToRawLongBits(Math.scalb(Double.longBitsToDouble(table[i]), -k));
            }
        }
        total = Math.scalb(total, -k);
        landmark = newLandmark;
    }

    /**
     * Adds {@code other} into this sketch, cell by cell, after bringing both to the later landmark.
     *
     * @throws IllegalArgumentException if the width, depth, seed or half-life differ
     */
    public void merge(CountMinSketch other) {
        checkMergeable(other);
        if (other.landmark > landmark) {
            renormalize(other.landmark);
        }
        double f = decay.decays() ? Math.scalb(1.0, -decay.halvings(other.landmark, landmark)) : 1;
        for (int i = 0; i < table.length; i++) {
            double v = Double.longBitsToDouble(other.table[i]) * f;
            table[i] = Double.doubleToRawLongBits(saturate(Double.longBitsToDouble(table[i]) + v));
        }
        total = saturate(total + other.total * f);
    }

    /** Throws the error {@link #merge} would throw, changing nothing. */
    void checkMergeable(CountMinSketch other) {
        if (other.width != width
                || other.depth != depth
                || other.seed != seed
                || other.decay.halfLifeMillis != decay.halfLifeMillis) {
            throw new IllegalArgumentException("cannot merge Count-Min sketches of different shape: this is "
                    + describe() + ", the other " + other.describe());
        }
    }

    // ------------------------------------------------------------------ queries

    /** The estimated (decayed to {@code nowMillis}) count of {@code item}. */
    public double estimate(String item, long nowMillis) {
        return estimateHash(hash(item), nowMillis);
    }

    /** The estimated (decayed to {@code nowMillis}) count of the item of hash {@link #hash(String)}. */
    public double estimateHash(long itemHash, long nowMillis) {
        return storedEstimate(itemHash) * decay.toNow(nowMillis, landmark);
    }

    /** The total weight N decayed to {@code nowMillis}. */
    public double totalWeight(long nowMillis) {
        return total * decay.toNow(nowMillis, landmark);
    }

    /** The estimate in stored units (against the current landmark). */
    double storedEstimate(long itemHash) {
        long h1 = Hashing.mix64(itemHash ^ seed);
        return minimum(h1, Long.rotateLeft(h1, 32) | 1);
    }

    public int width() {
        return width;
    }

    public int depth() {
        return depth;
    }

    public long seed() {
        return seed;
    }

    public boolean isConservative() {
        return conservative;
    }

    public long halfLifeMillis() {
        return decay.halfLifeMillis;
    }

    /** The current landmark, epoch ms (a multiple of the half-life). */
    public long landmarkMillis() {
        return landmark;
    }

    ForwardDecay decay() {
        return decay;
    }

    private String describe() {
        return width + " x " + depth + ", seed " + seed + ", half-life " + decay.halfLifeMillis + " ms";
    }

    // ------------------------------------------------------------------ serialization

    /** The compact serialized form (layout in the class comment). */
    public byte[] toBytes() {
        int nonZero = 0;
        for (long cell : table) {
            nonZero += cell != 0 ? 1 : 0;
        }
        boolean sparse = 4L + 12L * nonZero < 8L * table.length;
        byte[] out = new byte[HEADER + (sparse ? 4 + 12 * nonZero : 8 * table.length)];
        out[0] = SERIAL_VERSION;
        out[1] = FAMILY;
        out[2] = (byte) ((conservative ? 1 : 0) | (sparse ? 2 : 0));
        out[3] = (byte) depth;
        Bytes.putInt(out, 4, width);
        Bytes.putLong(out, 8, seed);
        Bytes.putLong(out, 16, decay.halfLifeMillis);
        Bytes.putLong(out, 24, landmark);
        Bytes.putLong(out, 32, Double.doubleToRawLongBits(total));
        return sparse ? writeSparse(out, nonZero) : writeDense(out);
    }

    private byte[] writeDense(byte[] out) {
        for (int i = 0; i < table.length; i++) {
            Bytes.putLong(out, HEADER + 8 * i, table[i]);
        }
        return out;
    }

    private byte[] writeSparse(byte[] out, int nonZero) {
        Bytes.putInt(out, HEADER, nonZero);
        int at = HEADER + 4;
        for (int i = 0; i < table.length; i++) {
            if (table[i] != 0) {
                Bytes.putInt(out, at, i);
                Bytes.putLong(out, at + 4, table[i]);
                at += 12;
            }
        }
        return out;
    }

    /** Reads {@link #toBytes()}; rejects anything else with a {@link SketchFormatException}. */
    public static CountMinSketch fromBytes(byte[] in) {
        Bytes.need(in, 0, HEADER, "Count-Min sketch header");
        if (in[1] != FAMILY) {
            throw new SketchFormatException("not a Count-Min sketch: family byte " + in[1] + ", expected " + FAMILY);
        }
        if (in[0] == 1) {
            throw new SketchFormatException("Count-Min serial version 1 placed items by an earlier item hash"
                    + " (MurmurHash64A over UTF-16); its cells cannot be read with this one: rebuild the sketch");
        }
        if (in[0] != SERIAL_VERSION) {
            throw new SketchFormatException(
                    "unsupported Count-Min serial version " + in[0] + ", expected " + SERIAL_VERSION);
        }
        int flags = in[2];
        if ((flags & ~3) != 0) {
            throw new SketchFormatException("unknown Count-Min flags " + flags);
        }
        int depth = in[3] & 0xff;
        int width = Bytes.getInt(in, 4, "Count-Min header");
        long halfLife = Bytes.getLong(in, 16, "Count-Min header");
        if (width < 1 || depth < 1 || (long) width * depth > Integer.MAX_VALUE - 8 || halfLife < 0) {
            throw new SketchFormatException(
                    "corrupt Count-Min header: width " + width + ", depth " + depth + ", half-life " + halfLife);
        }
        CountMinSketch s = new CountMinSketch(width, depth, Bytes.getLong(in, 8, "header"), halfLife, (flags & 1) != 0);
        s.landmark = Bytes.getLong(in, 24, "Count-Min header");
        s.total = Bytes.getFiniteDouble(in, 32, "Count-Min total weight");
        if ((flags & 2) != 0) {
            s.readSparse(in);
        } else {
            s.readDense(in);
        }
        return s;
    }

    private void readDense(byte[] in) {
        if (in.length != HEADER + 8L * table.length) {
            throw new SketchFormatException("corrupt Count-Min sketch: dense body of " + (in.length - HEADER)
                    + " bytes, expected " + 8L * table.length);
        }
        for (int i = 0; i < table.length; i++) {
            table[i] = cellAt(in, HEADER + 8 * i);
        }
    }

    private void readSparse(byte[] in) {
        int n = Bytes.getInt(in, HEADER, "Count-Min sparse body");
        if (n < 0 || n > table.length || in.length != HEADER + 4L + 12L * n) {
            throw new SketchFormatException(
                    "corrupt Count-Min sketch: sparse body of " + (in.length - HEADER) + " bytes for " + n + " cells");
        }
        int previous = -1;
        for (int j = 0, at = HEADER + 4; j < n; j++, at += 12) {
            int index = Bytes.getInt(in, at, "Count-Min cell");
            if (index <= previous || index >= table.length) {
                throw new SketchFormatException("corrupt Count-Min sketch: cell index " + index + " after " + previous);
            }
            table[index] = cellAt(in, at + 4);
            previous = index;
        }
    }

    private static long cellAt(byte[] in, int at) {
        return Double.doubleToRawLongBits(Bytes.getFiniteDouble(in, at, "Count-Min cell"));
    }

    /** A deep copy. */
    public CountMinSketch copy() {
        return fromBytes(toBytes());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof CountMinSketch && Arrays.equals(((CountMinSketch) o).toBytes(), toBytes());
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(table);
    }
}
