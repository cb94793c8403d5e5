package io.rollcount.sketches;

import static io.rollcount.sketches.RedisHyperLogLog.DENSE;
import static io.rollcount.sketches.RedisHyperLogLog.DENSE_SIZE;
import static io.rollcount.sketches.RedisHyperLogLog.HDR;
import static io.rollcount.sketches.RedisHyperLogLog.MAX_REGISTER;
import static io.rollcount.sketches.RedisHyperLogLog.REGISTERS;
import static io.rollcount.sketches.RedisHyperLogLog.SPARSE;

/** Validation and decoding of Redis HyperLogLog values (layout in {@link RedisHyperLogLog}). */
final class RedisHllFormat {
  private RedisHllFormat() {}

  /** Throws {@link SketchFormatException} naming the first defect of {@code v}, if any. */
  static void validate(byte[] v) {
    if (v == null) {
      throw new SketchFormatException("not a Redis HyperLogLog: null value");
    }
    if (v.length < HDR) {
      throw new SketchFormatException("not a Redis HyperLogLog: " + v.length
          + " bytes, shorter than the 16-byte header");
    }
    if (v[0] != 'H' || v[1] != 'Y' || v[2] != 'L' || v[3] != 'L') {
      throw new SketchFormatException("not a Redis HyperLogLog: magic is '"
          + RedisHyperLogLog.printable(v, 0, 4) + "', expected 'HYLL'");
    }
    int encoding = v[4] & 0xff;
    if (encoding == DENSE) {
      validateDense(v);
    } else if (encoding == SPARSE) {
      validateSparse(v);
    } else {
      throw new SketchFormatException("corrupt Redis HyperLogLog: unknown encoding " + encoding
          + " (0 = dense, 1 = sparse)");
    }
  }

  private static void validateDense(byte[] v) {
    if (v.length != DENSE_SIZE) {
      throw new SketchFormatException("corrupt Redis HyperLogLog: dense value of " + v.length
          + " bytes, expected exactly " + DENSE_SIZE);
    }
    byte[] padded = java.util.Arrays.copyOf(v, DENSE_SIZE + 1);
    for (int i = 0; i < REGISTERS; i++) {
      int r = RedisHyperLogLog.denseGet(padded, i);
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
      int op = v[p] & 0xff;
      int run;
      if ((op & 0xc0) == 0) {
        run = (op & 0x3f) + 1;
        p++;
      } else if ((op & 0x80) == 0) {
        if (p + 1 >= v.length) {
          throw new SketchFormatException("corrupt Redis HyperLogLog: sparse body ends inside an XZERO"
              + " opcode at byte " + p);
        }
        run = (((op & 0x3f) << 8) | (v[p + 1] & 0xff)) + 1;
        p += 2;
      } else {
        run = (op & 0x3) + 1;
        p++;
      }
      registers += run;
      if (registers > REGISTERS) {
        throw new SketchFormatException("corrupt Redis HyperLogLog: sparse opcode at byte " + (p - 1)
            + " runs past register " + (REGISTERS - 1));
      }
    }
    if (registers != REGISTERS) {
      throw new SketchFormatException("corrupt Redis HyperLogLog: sparse body covers " + registers
          + " registers, expected " + REGISTERS);
    }
  }

  /** Adds the sparse body's registers to {@code histogram} (Redis's {@code hllSparseRegHisto}). */
  static void sparseHistogram(byte[] b, int len, int[] histogram) {
    int p = HDR;
    while (p < len) {
      int op = b[p] & 0xff;
      if ((op & 0xc0) == 0) {
        histogram[0] += (op & 0x3f) + 1;
        p++;
      } else if ((op & 0x80) == 0) {
        histogram[0] += (((op & 0x3f) << 8) | (b[p + 1] & 0xff)) + 1;
        p += 2;
      } else {
        histogram[((op >>> 2) & 0x1f) + 1] += (op & 0x3) + 1;
        p++;
      }
    }
  }

  /** Raises {@code max[i]} to the sparse body's register i (Redis's {@code hllMerge}). */
  static void sparseMaxInto(byte[] b, int len, byte[] max) {
    int p = HDR;
    int i = 0;
    while (p < len) {
      int op = b[p] & 0xff;
      if ((op & 0xc0) == 0) {
        i += (op & 0x3f) + 1;
        p++;
      } else if ((op & 0x80) == 0) {
        i += (((op & 0x3f) << 8) | (b[p + 1] & 0xff)) + 1;
        p += 2;
      } else {
        int value = ((op >>> 2) & 0x1f) + 1;
        for (int run = (op & 0x3) + 1; run > 0; run--, i++) {
          if (value > max[i]) {
            max[i] = (byte) value;
          }
        }
        p++;
      }
    }
  }
}
