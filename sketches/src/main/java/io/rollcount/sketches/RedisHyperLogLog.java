package io.rollcount.sketches;

import static io.rollcount.sketches.RedisHllFormat.DENSE;
import static io.rollcount.sketches.RedisHllFormat.HDR;
import static io.rollcount.sketches.RedisHllFormat.SPARSE;
import static io.rollcount.sketches.RedisHllFormat.SPARSE_VAL_MAX_LEN;
import static io.rollcount.sketches.RedisHllFormat.SPARSE_VAL_MAX_VALUE;
import static io.rollcount.sketches.RedisHllFormat.denseGet;
import static io.rollcount.sketches.RedisHllFormat.denseSet;
import static io.rollcount.sketches.RedisHllFormat.isVal;
import static io.rollcount.sketches.RedisHllFormat.isXZero;
import static io.rollcount.sketches.RedisHllFormat.isZero;
import static io.rollcount.sketches.RedisHllFormat.opLength;
import static io.rollcount.sketches.RedisHllFormat.putZeros;
import static io.rollcount.sketches.RedisHllFormat.span;
import static io.rollcount.sketches.RedisHllFormat.val;
import static io.rollcount.sketches.RedisHllFormat.valLen;
import static io.rollcount.sketches.RedisHllFormat.valValue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * A HyperLogLog whose bytes are a Redis 7 HyperLogLog value: {@code PFCOUNT} reads them,
 * {@code PFMERGE} merges them with keys built by {@code PFADD}, and adding the same items in the same
 * order builds the same bytes {@code PFADD} builds (checked against a real Redis 7.0 in the tests).
 *
 * <p><b>Algorithm.</b> HyperLogLog (Flajolet, Fusy, Gandouet, Meunier 2007) with a 64-bit hash so no
 * large-range correction is needed (Heule, Nunkesser, Hall 2013), m = 2^14 = 16384 registers of 6 bits.
 * An item is hashed with MurmurHash64A, seed {@code 0xadc83b19}; the register index is
 * {@code hash & 16383} and the register candidate is {@code numberOfTrailingZeros((hash >>> 14) | 1L << 50) + 1},
 * 1..51; a register keeps the maximum. The estimate is Redis's: Ertl's improved raw estimator
 * ("New cardinality estimation algorithms for HyperLogLog sketches", Ertl 2017, arXiv:1702.01284)
 * over the register histogram, rounded half away from zero, so that {@link #count()} returns the
 * integer {@code PFCOUNT} returns. Relative standard error about 1.04/sqrt(16384) = 0.81%.
 *
 * <p><b>Serialized format</b>: the Redis string value, {@code src/hyperloglog.c} of Redis 7.0, laid out
 * in {@link RedisHllFormat}, the one class that reads and writes its bytes.
 * A new sketch is sparse ({@code XZERO:16384}, 18 bytes). Adds edit the sparse opcodes in place,
 * exactly as Redis's {@code hllSparseSet} does (split the covering opcode, then merge adjacent equal
 * VALs), and the sketch becomes dense when a register needs a value over 32 or when the value would
 * grow past {@code sparseMaxBytes} (Redis's {@code hll-sparse-max-bytes}, default 3000). So memory
 * follows cardinality: about 2 bytes per distinct item while sparse, 12,304 bytes once dense.
 *
 * <p><b>Costs.</b> {@link #add(byte[])}, {@link #add(String)} and {@link #addHash(long)} allocate
 * nothing, except when a sparse buffer or its opcode index has to grow (geometrically, a handful of times
 * over its life) and once on promotion to dense. A dense add is a hash plus a 16-bit read-modify-write. A
 * sparse add finds the opcode covering its register from the start of a body under 256 bytes, as Redis does,
 * and in a longer one from the nearest checkpoint of a {@link SparseOpcodeIndex} (about every 32 bytes, under
 * 2 KB, on the heap only: {@link #heapBytes}), then moves the bytes after the edit: about constant in
 * the body's size, where Redis's scan grows with it. {@link #count()} caches its
 * result in the header as Redis's {@code PFCOUNT} does and recomputes only after a register changed.
 *
 * <p>Not thread-safe.
 */
public final class RedisHyperLogLog {
    /** MurmurHash64A seed Redis uses for HyperLogLog items. */
    public static final long SEED = 0xadc83b19L;
    /** Number of registers, 2^14. */
    public static final int REGISTERS = RedisHllFormat.REGISTERS;
    /** Redis's default {@code hll-sparse-max-bytes}. */
    public static final int DEFAULT_SPARSE_MAX_BYTES = 3000;
    /** Size of a dense value: header plus 16384 * 6 bits. */
    public static final int DENSE_SIZE = RedisHllFormat.DENSE_SIZE;
    /** The largest register value a 64-bit hash with p = 14 can produce (Q + 1 = 50 + 1). */
    public static final int MAX_REGISTER = RedisHllFormat.MAX_REGISTER;

    private static final int P = 14;
    private static final int Q = 64 - P;
    private static final int P_MASK = REGISTERS - 1;
    private static final double ALPHA_INF = 0.721347520444481703680; // 0.5 / ln(2)

    private final int sparseMaxBytes;
    /** The Redis value in {@code buf[0, len)}; a dense buffer has one spare byte (Redis's sds NUL). */
    private byte[] buf;

    private int len;
    /** Room for the at most 5 opcode bytes that replace a split opcode. */
    private final byte[] scratch = new byte[5];
    /**
     * Where the sparse body's opcodes start, for bodies of {@link SparseOpcodeIndex#MIN_BYTES} or more; null
     * until one is needed and once dense (a copy, or a sketch read from bytes, builds its own).
     */
    private SparseOpcodeIndex opcodes;

    /** An empty sketch, sparse, as {@code PFADD key} with no items builds it. */
    public RedisHyperLogLog() {
        this(DEFAULT_SPARSE_MAX_BYTES);
    }

    /** An empty sketch promoting to dense past {@code sparseMaxBytes} (the server's hll-sparse-max-bytes). */
    public RedisHyperLogLog(int sparseMaxBytes) {
        if (sparseMaxBytes < 0) {
            throw new IllegalArgumentException("sparseMaxBytes must be >= 0, got " + sparseMaxBytes);
        }
        this.sparseMaxBytes = sparseMaxBytes;
        this.buf = new byte[32];
        this.len = HDR + 2;
        RedisHllFormat.writeHeader(buf, SPARSE);
        RedisHllFormat.setXZero(buf, HDR, REGISTERS);
        invalidateCache();
    }

    private RedisHyperLogLog(byte[] buf, int len, int sparseMaxBytes) {
        this.buf = buf;
        this.len = len;
        this.sparseMaxBytes = sparseMaxBytes;
    }

    // ------------------------------------------------------------------ hashing

    /** The Redis HyperLogLog hash of {@code item}: MurmurHash64A, seed 0xadc83b19. */
    public static long hash(byte[] item) {
        return Hashing.murmur64A(item, 0, item.length, SEED);
    }

    /** The Redis HyperLogLog hash of the UTF-8 bytes of {@code item}, without encoding it. */
    public static long hash(String item) {
        return Hashing.murmur64AUtf8(item, SEED);
    }

    // ------------------------------------------------------------------ updates

    /** Adds {@code item}; true if a register changed (PFADD would reply 1). */
    public boolean add(byte[] item) {
        return addHash(hash(item));
    }

    /** Adds the UTF-8 bytes of {@code item}; true if a register changed. */
    public boolean add(String item) {
        return addHash(hash(item));
    }

    /** Adds an item by its {@link #hash} (hash once upstream, ship 8 bytes); true if a register changed. */
    public boolean addHash(long hash) {
        int index = (int) (hash & P_MASK);
        int count = Long.numberOfTrailingZeros((hash >>> P) | (1L << Q)) + 1;
        boolean changed = isDense() ? denseSet(buf, index, count) : sparseSet(index, count);
        if (changed) {
            invalidateCache();
        }
        return changed;
    }

    /**
     * Merges {@code other} into this sketch, register by register maximum, producing the bytes
     * {@code PFMERGE this this other} produces: dense if either side is dense, else sparse edits in
     * register order (which may promote).
     */
    public void merge(RedisHyperLogLog other) {
        byte[] max = new byte[REGISTERS];
        other.registersInto(max);
        if (other.isDense() && !isDense()) {
            toDense();
        }
        for (int i = 0; i < REGISTERS; i++) {
            if (max[i] != 0) {
                setRegister(i, max[i]);
            }
        }
        invalidateCache();
    }

    // ------------------------------------------------------------------ queries

    /** The cardinality estimate, equal to Redis's PFCOUNT of {@link #toRedisBytes()}; caches it in the header. */
    public long count() {
        if (RedisHllFormat.cacheValid(buf)) {
            return RedisHllFormat.cachedCardinality(buf);
        }
        int[] histogram = new int[64];
        histogram(histogram);
        long card = estimate(histogram);
        RedisHllFormat.storeCardinality(buf, card);
        return card;
    }

    /** True while the sketch uses the dense encoding. */
    public boolean isDense() {
        return RedisHllFormat.isDense(buf);
    }

    /** The size in bytes of {@link #toRedisBytes()} right now. */
    public int serializedSizeBytes() {
        return len;
    }

    /** About the heap this sketch takes: its buffer and, for a sparse body, the index of its opcodes. */
    public long heapBytes() {
        return 16L + buf.length + (opcodes == null ? 0 : opcodes.heapBytes());
    }

    /** The value of register {@code index}, 0..51. */
    public int register(int index) {
        if (index < 0 || index >= REGISTERS) {
            throw new IndexOutOfBoundsException("register " + index + " of " + REGISTERS);
        }
        if (isDense()) {
            return denseGet(buf, index);
        }
        byte[] regs = new byte[REGISTERS];
        registersInto(regs);
        return regs[index];
    }

    /** The Redis string value, byte for byte (a copy). */
    public byte[] toRedisBytes() {
        return Arrays.copyOf(buf, len);
    }

    /** A deep copy. */
    public RedisHyperLogLog copy() {
        return new RedisHyperLogLog(buf.clone(), len, sparseMaxBytes);
    }

    /** Reads a Redis HyperLogLog value with Redis's default {@code hll-sparse-max-bytes}. */
    public static RedisHyperLogLog fromRedisBytes(byte[] value) {
        return fromRedisBytes(value, DEFAULT_SPARSE_MAX_BYTES);
    }

    /**
     * Reads a Redis HyperLogLog value (GET of a key PFADD built), validating it.
     *
     * @throws SketchFormatException if it is shorter than the header, has another magic or an unknown
     *     encoding, is dense with a length other than 12,304 bytes or a register over 51, or is sparse
     *     with a body that does not cover exactly 16384 registers
     */
    public static RedisHyperLogLog fromRedisBytes(byte[] value, int sparseMaxBytes) {
        RedisHllFormat.validate(value);
        int capacity = RedisHllFormat.isDense(value) ? DENSE_SIZE + 1 : value.length + 3;
        return new RedisHyperLogLog(Arrays.copyOf(value, capacity), value.length, sparseMaxBytes);
    }

    // ------------------------------------------------------------------ estimator

    /** Redis's {@code hllCount}: Ertl's estimator over the register histogram (64 buckets). */
    static long estimate(int[] histogram) {
        double m = REGISTERS;
        double z = m * tau((m - histogram[Q + 1]) / m);
        for (int j = Q; j >= 1; --j) {
            z += histogram[j];
            z *= 0.5;
        }
        z += m * sigma(histogram[0] / m);
        return Math.round(ALPHA_INF * m * m / z);
    }

    private static double sigma(double x) {
        if (x == 1.) {
            return Double.POSITIVE_INFINITY;
        }
        double zPrime;
        double y = 1;
        double z = x;
        do {
            x *= x;
            zPrime = z;
            z += x * y;
            y += y;
        } while (zPrime != z);
        return z;
    }

    private static double tau(double x) {
        if (x == 0. || x == 1.) {
            return 0.;
        }
        double zPrime;
        double y = 1.0;
        double z = 1 - x;
        do {
            x = Math.sqrt(x);
            zPrime = z;
            y *= 0.5;
            double d = 1 - x;
            z -= d * d * y;
        } while (zPrime != z);
        return z / 3;
    }

    private void histogram(int[] histogram) {
        if (isDense()) {
            for (int i = 0; i < REGISTERS; i++) {
                histogram[denseGet(buf, i)]++;
            }
        } else {
            RedisHllFormat.sparseHistogram(buf, len, histogram);
        }
    }

    private void invalidateCache() {
        RedisHllFormat.invalidateCache(buf);
    }

    // ------------------------------------------------------------------ dense

    private void setRegister(int index, int count) {
        if (isDense()) {
            denseSet(buf, index, count);
        } else {
            sparseSet(index, count);
        }
    }

    private void registersInto(byte[] max) {
        if (isDense()) {
            for (int i = 0; i < REGISTERS; i++) {
                max[i] = (byte) Math.max(max[i], denseGet(buf, i));
            }
        } else {
            RedisHllFormat.sparseMaxInto(buf, len, max);
        }
    }

    /** Redis's {@code hllSparseToDense}: header copied (cached cardinality included), encoding set dense. */
    private void toDense() {
        byte[] dense = new byte[DENSE_SIZE + 1];
        System.arraycopy(buf, 0, dense, 0, HDR);
        RedisHllFormat.setEncoding(dense, DENSE);
        byte[] regs = new byte[REGISTERS];
        RedisHllFormat.sparseMaxInto(buf, len, regs);
        for (int i = 0; i < REGISTERS; i++) {
            if (regs[i] != 0) {
                denseSet(dense, i, regs[i]);
            }
        }
        buf = dense;
        len = DENSE_SIZE;
        opcodes = null;
    }

    // ------------------------------------------------------------------ sparse

    private void ensureCapacity(int needed) {
        if (buf.length < needed) {
            buf = Arrays.copyOf(buf, Math.max(needed, Math.min(2 * buf.length, sparseMaxBytes + 3)));
        }
    }

    /**
     * Redis's {@code hllSparseSet}, step for step, so the bytes equal what PFADD builds: find the
     * opcode covering {@code index}; a VAL already at least {@code count} is left alone; a VAL or ZERO
     * of length 1 is rewritten in place; otherwise the opcode is split into up to three (at most 5
     * bytes), promoting to dense if the value would outgrow {@code sparseMaxBytes}; then adjacent equal
     * VALs are merged, scanning at most 5 opcodes from the one before the edit.
     */
    private boolean sparseSet(int index, int count) {
        if (count > SPARSE_VAL_MAX_VALUE) {
            return promoteAndSet(index, count);
        }
        ensureCapacity(len + 3);
        int p = HDR;
        int end = len;
        int first = 0;
        int prev = -1;
        int span = 0;
        SparseOpcodeIndex at = opcodeIndex();
        int checkpoint = at == null ? -1 : at.find(index);
        if (checkpoint >= 0) {
            p = at.offset(checkpoint);
            first = at.firstRegister(checkpoint);
            prev = at.before(checkpoint);
        }
        int walkedFrom = p;
        while (p < end) {
            span = span(buf, p);
            if (index <= first + span - 1) {
                break;
            }
            prev = p;
            p += opLength(buf, p);
            first += span;
        }
        if (at != null && p - walkedFrom > SparseOpcodeIndex.REBUILD_WALK) {
            at.build(buf, len); // offsets unchanged so far: p, prev and first stay right
        }
        if (span == 0 || p >= end) {
            throw new SketchFormatException("sparse HyperLogLog body does not cover register " + index);
        }
        int op = buf[p] & 0xff;
        int next = p + opLength(buf, p);
        boolean zero = isZero(op);
        boolean xzero = isXZero(op);
        int runLength = span;
        if (!zero && !xzero) {
            if (valValue(op) >= count) {
                return false;
            }
            if (runLength == 1) {
                buf[p] = val(count, 1);
                mergeAdjacentVals(prev, end);
                edited(prev, end);
                return true;
            }
        }
        if (zero && runLength == 1) {
            buf[p] = val(count, 1);
            mergeAdjacentVals(prev, end);
            edited(prev, end);
            return true;
        }
        byte[] seq = scratch;
        int n = splitSequence(seq, op, zero || xzero, index, first, first + span - 1, count);
        int oldLen = xzero ? 2 : 1;
        int delta = n - oldLen;
        if (delta > 0 && len + delta > sparseMaxBytes) {
            return promoteAndSet(index, count);
        }
        if (delta != 0 && next < end) {
            System.arraycopy(buf, next, buf, next + delta, end - next);
        }
        int before = len;
        len += delta;
        System.arraycopy(seq, 0, buf, p, n);
        end += delta;
        mergeAdjacentVals(prev, end);
        edited(prev, before);
        return true;
    }

    /**
     * The index of the sparse body's opcodes, built when the body reaches {@link SparseOpcodeIndex#MIN_BYTES};
     * null below that.
     */
    private SparseOpcodeIndex opcodeIndex() {
        if (opcodes == null && len >= SparseOpcodeIndex.MIN_BYTES) {
            opcodes = new SparseOpcodeIndex();
            opcodes.build(buf, len);
        }
        return opcodes;
    }

    /** After an edit from the opcode {@code prev} (-1: the first) of a body {@code lengthBefore} bytes long. */
    private void edited(int prev, int lengthBefore) {
        if (opcodes != null) opcodes.edited(buf, len, prev >= 0 ? prev : HDR, len - lengthBefore);
    }

    /** Tests: null if the opcode index (if any) names the body's opcodes rightly, else what is wrong. */
    String checkOpcodeIndex() {
        return opcodes == null || isDense() ? null : opcodes.check(buf, len);
    }

    /** The opcodes replacing the one covering [first, last] once {@code index} takes {@code count}. */
    private static int splitSequence(byte[] seq, int op, boolean zeros, int index, int first, int last, int count) {
        int n = 0;
        if (zeros) {
            if (index != first) {
                n += putZeros(seq, n, index - first);
            }
            seq[n++] = val(count, 1);
            if (index != last) {
                n += putZeros(seq, n, last - index);
            }
        } else {
            int current = valValue(op);
            if (index != first) {
                seq[n++] = val(current, index - first);
            }
            seq[n++] = val(count, 1);
            if (index != last) {
                seq[n++] = val(current, last - index);
            }
        }
        return n;
    }

    /** Redis's step 4: merge adjacent VALs of equal value, scanning up to 5 opcodes from {@code prev}. */
    private void mergeAdjacentVals(int prev, int end) {
        int p = prev >= 0 ? prev : HDR;
        int scan = 5;
        while (p < end && scan-- != 0) {
            int op = buf[p] & 0xff;
            if (isXZero(op)) {
                p += 2;
                continue;
            }
            if (isZero(op)) {
                p++;
                continue;
            }
            if (p + 1 < end && isVal(buf[p + 1] & 0xff)) {
                int op2 = buf[p + 1] & 0xff;
                int merged = valLen(op) + valLen(op2);
                if (valValue(op) == valValue(op2) && merged <= SPARSE_VAL_MAX_LEN) {
                    buf[p + 1] = val(valValue(op), merged);
                    System.arraycopy(buf, p + 1, buf, p, end - p - 1);
                    len--;
                    end--;
                    continue;
                }
            }
            p++;
        }
    }

    private boolean promoteAndSet(int index, int count) {
        toDense();
        return denseSet(buf, index, count);
    }

    @Override
    public String toString() {
        return "RedisHyperLogLog{" + (isDense() ? "dense" : "sparse") + ", " + len + " bytes}";
    }

    /** Renders a value's first bytes for error messages. */
    static String printable(byte[] b, int from, int n) {
        return new String(b, from, Math.min(n, b.length - from), StandardCharsets.ISO_8859_1);
    }
}
