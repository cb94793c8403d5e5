package io.rollcount.sketches;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The byte layout of a Redis HyperLogLog value ({@code src/hyperloglog.c} of Redis 7.0): every offset, bit and
 * opcode of it is here, and {@link RedisHyperLogLog} reads and writes its bytes only through this class.
 * <pre>
 * byte  0..3   magic "HYLL"
 * byte  4      encoding: 0 = dense, 1 = sparse
 * byte  5..7   unused, zero
 * byte  8..15  cached cardinality, unsigned little-endian; bit 7 of byte 15 set = cache invalid
 * byte 16..    registers:
 *   dense  (exactly 12,304 bytes in all): 16384 registers of 6 bits packed LSB first:
 *          register i is bits (6i mod 8).. of byte 16 + 6i/8, continuing into the next byte
 *   sparse (run-length opcodes, purely positional, covering exactly 16384 registers):
 *          00xxxxxx           ZERO:  xxxxxx + 1 (1..64) registers at 0
 *          01xxxxxx yyyyyyyy  XZERO: (xxxxxx &lt;&lt; 8 | yyyyyyyy) + 1 (1..16384) registers at 0
 *          1vvvvvxx           VAL:   xx + 1 (1..4) registers at value vvvvv + 1 (1..32)
 * </pre>
 */
final class RedisHllFormat {
    private RedisHllFormat() {}

    /** Bytes of the header, before the registers. */
    static final int HDR = 16;
    /** The encoding byte's values. */
    static final int DENSE = 0;

    static final int SPARSE = 1;
    /** Number of registers, 2^14. */
    static final int REGISTERS = 1 << 14;
    /** Size of a dense value: header plus 16384 registers of 6 bits. */
    static final int DENSE_SIZE = HDR + REGISTERS * 6 / 8;
    /** The largest register value a 64-bit hash with p = 14 can produce (Q + 1 = 50 + 1). */
    static final int MAX_REGISTER = 51;
    /** The largest value a sparse VAL opcode holds; a larger register needs the dense encoding. */
    static final int SPARSE_VAL_MAX_VALUE = 32;
    /** The longest runs of one opcode. */
    static final int SPARSE_VAL_MAX_LEN = 4;

    static final int SPARSE_ZERO_MAX_LEN = 64;
    static final int SPARSE_XZERO_MAX_LEN = 16384;

    private static final int ENCODING_AT = 4;
    private static final int CARDINALITY_AT = 8;
    private static final int CACHE_INVALID_AT = 15;
    private static final int CACHE_INVALID_BIT = 0x80;
    private static final VarHandle LE_SHORT =
            MethodHandles.byteArrayViewVarHandle(short[].class, ByteOrder.LITTLE_ENDIAN);

    // ------------------------------------------------------------------ header

    /** Writes the magic and the encoding (bytes 0..4). */
    static void writeHeader(byte[] b, int encoding) {
        b[0] = 'H';
        b[1] = 'Y';
        b[2] = 'L';
        b[3] = 'L';
        setEncoding(b, encoding);
    }

    static int encoding(byte[] b) {
        return b[ENCODING_AT];
    }

    static void setEncoding(byte[] b, int encoding) {
        b[ENCODING_AT] = (byte) encoding;
    }

    static boolean isDense(byte[] b) {
        return encoding(b) == DENSE;
    }

    static boolean cacheValid(byte[] b) {
        return (b[CACHE_INVALID_AT] & CACHE_INVALID_BIT) == 0;
    }

    static void invalidateCache(byte[] b) {
        b[CACHE_INVALID_AT] |= (byte) CACHE_INVALID_BIT;
    }

    static long cachedCardinality(byte[] b) {
        long card = 0;
        for (int i = 0; i < 8; i++) {
            card |= (b[CARDINALITY_AT + i] & 0xffL) << (8 * i);
        }
        return card;
    }

    /** Stores {@code card} as the cached cardinality, which makes the cache valid (Redis never caches 2^63 or more). */
    static void storeCardinality(byte[] b, long card) {
        for (int i = 0; i < 8; i++) {
            b[CARDINALITY_AT + i] = (byte) (card >>> (8 * i));
        }
    }

    // ------------------------------------------------------------------ dense

    static int denseGet(byte[] b, int index) {
        int bit = index * 6;
        int word = (short) LE_SHORT.get(b, HDR + (bit >>> 3)) & 0xffff;
        return (word >>> (bit & 7)) & 63;
    }

    /**
     * Raises register {@code index} to {@code count}; true if it changed. Reads and writes two bytes, so a dense
     * buffer has one spare byte after the last register (Redis's sds NUL).
     */
    static boolean denseSet(byte[] b, int index, int count) {
        int bit = index * 6;
        int at = HDR + (bit >>> 3);
        int shift = bit & 7;
        int word = (short) LE_SHORT.get(b, at) & 0xffff;
        if (((word >>> shift) & 63) >= count) {
            return false;
        }
        word = (word & ~(63 << shift)) | (count << shift);
        LE_SHORT.set(b, at, (short) word);
        return true;
    }

    // ------------------------------------------------------------------ sparse opcodes

    static boolean isZero(int op) {
        return (op & 0xc0) == 0;
    }

    static boolean isXZero(int op) {
        return (op & 0xc0) == 0x40;
    }

    static boolean isVal(int op) {
        return (op & 0x80) != 0;
    }

    static int valValue(int op) {
        return ((op >>> 2) & 0x1f) + 1;
    }

    static int valLen(int op) {
        return (op & 0x3) + 1;
    }

    static byte val(int value, int runLength) {
        return (byte) (((value - 1) << 2 | (runLength - 1)) | 0x80);
    }

    static void setXZero(byte[] b, int at, int runLength) {
        int l = runLength - 1;
        b[at] = (byte) ((l >>> 8) | 0x40);
        b[at + 1] = (byte) l;
    }

    /** Writes the zero run as ZERO or XZERO at {@code at}; returns the bytes written. */
    static int putZeros(byte[] b, int at, int runLength) {
        if (runLength > SPARSE_ZERO_MAX_LEN) {
            setXZero(b, at, runLength);
            return 2;
        }
        b[at] = (byte) (runLength - 1);
        return 1;
    }

    /** The bytes of the opcode at {@code p}: 2 for XZERO, else 1. */
    static int opLength(byte[] b, int p) {
        return isXZero(b[p] & 0xff) ? 2 : 1;
    }

    /** The registers the opcode at {@code p} covers (an XZERO's second byte must exist). */
    static int span(byte[] b, int p) {
        int op = b[p] & 0xff;
        if (isZero(op)) {
            return (op & 0x3f) + 1;
        }
        if (isVal(op)) {
            return valLen(op);
        }
        return (((op & 0x3f) << 8) | (b[p + 1] & 0xff)) + 1;
    }

    // ------------------------------------------------------------------ validation and reading

    /** Throws {@link SketchFormatException} naming the first defect of {@code v}, if any. */
    static void validate(byte[] v) {
        if (v == null) {
            throw new SketchFormatException("not a Redis HyperLogLog: null value");
        }
        if (v.length < HDR) {
            throw new SketchFormatException(
                    "not a Redis HyperLogLog: " + v.length + " bytes, shorter than the 16-byte header");
        }
        if (v[0] != 'H' || v[1] != 'Y' || v[2] != 'L' || v[3] != 'L') {
            throw new SketchFormatException(
                    "not a Redis HyperLogLog: magic is '" + RedisHyperLogLog.printable(v, 0, 4) + "', expected 'HYLL'");
        }
        int encoding = v[ENCODING_AT] & 0xff;
        if (encoding == DENSE) {
            validateDense(v);
        } else if (encoding == SPARSE) {
            validateSparse(v);
        } else {
            throw new SketchFormatException(
                    "corrupt Redis HyperLogLog: unknown encoding " + encoding + " (0 = dense, 1 = sparse)");
        }
    }

    private static void validateDense(byte[] v) {
        if (v.length != DENSE_SIZE) {
            throw new SketchFormatException(
                    "corrupt Redis HyperLogLog: dense value of " + v.length + " bytes, expected exactly " + DENSE_SIZE);
        }
        byte[] padded = java.util.Arrays.copyOf(v, DENSE_SIZE + 1);
        for (int i = 0; i < REGISTERS; i++) {
            int r = denseGet(padded, i);
            if (r > MAX_REGISTER) {
                throw new SketchFormatException("corrupt Redis HyperLogLog: dense register " + i + " holds " + r
                        + ", over the maximum " + MAX_REGISTER + " a 64-bit hash can produce");
            }
        }
    }

    private static void validateSparse(byte[] v) {
        int p = HDR;
        int registers = 0;
        while (p < v.length) {
            if (isXZero(v[p] & 0xff) && p + 1 >= v.length) {
                throw new SketchFormatException(
                        "corrupt Redis HyperLogLog: sparse body ends inside an XZERO" + " opcode at byte " + p);
            }
            registers += span(v, p);
            p += opLength(v, p);
            if (registers > REGISTERS) {
                throw new SketchFormatException("corrupt Redis HyperLogLog: sparse opcode at byte " + (p - 1)
                        + " runs past register " + (REGISTERS - 1));
            }
        }
        if (registers != REGISTERS) {
            throw new SketchFormatException(
                    "corrupt Redis HyperLogLog: sparse body covers " + registers + " registers, expected " + REGISTERS);
        }
    }

    /** Adds the sparse body's registers to {@code histogram} (Redis's {@code hllSparseRegHisto}). */
    static void sparseHistogram(byte[] b, int len, int[] histogram) {
        for (int p = HDR; p < len; p += opLength(b, p)) {
            int op = b[p] & 0xff;
            histogram[isVal(op) ? valValue(op) : 0] += span(b, p);
        }
    }

    /** Raises {@code max[i]} to the sparse body's register i (Redis's {@code hllMerge}). */
    static void sparseMaxInto(byte[] b, int len, byte[] max) {
        int i = 0;
        for (int p = HDR; p < len; p += opLength(b, p)) {
            int op = b[p] & 0xff;
            int run = span(b, p);
            if (isVal(op)) {
                int value = valValue(op);
                for (int end = i + run; i < end; i++) {
                    if (value > max[i]) {
                        max[i] = (byte) value;
                    }
                }
            } else {
                i += run;
            }
        }
    }
}
