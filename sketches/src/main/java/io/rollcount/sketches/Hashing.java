package io.rollcount.sketches;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * The hash functions of the sketches, all allocation-free.
 *
 * <p>{@link #murmur64A(byte[], int, int, long)} is Austin Appleby's MurmurHash64A exactly as Redis
 * uses it in {@code src/hyperloglog.c} (the endian-neutral variant: 8-byte blocks read little-endian,
 * the seed a 32-bit unsigned integer widened to 64 bits). {@link #murmur64AUtf8(CharSequence, long)}
 * computes the same value over the UTF-8 encoding of a string (as {@link String#getBytes} with UTF-8
 * would produce it, an unpaired surrogate becoming {@code '?'}) without materialising the bytes.
 * {@link #mix64(long)} is the 64-bit finaliser the Count-Min sketch and the top-K mix item hashes with.
 */
public final class Hashing {
    private static final long M = 0xc6a4a7935bd1e995L;
    private static final int R = 47;
    private static final VarHandle LE_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);

    private Hashing() {}

    /** MurmurHash64A of {@code data[off, off+len)}; {@code seed} is taken as a 32-bit unsigned value. */
    public static long murmur64A(byte[] data, int off, int len, long seed) {
        long h = (seed & 0xffffffffL) ^ (len * M);
        int end = off + (len & ~7);
        for (int i = off; i < end; i += 8) {
            h = mixBlock(h, (long) LE_LONG.get(data, i));
        }
        int rest = len & 7;
        if (rest != 0) {
            h = mixTail(h, tail(data, end, rest));
        }
        return finish(h);
    }

    /** MurmurHash64A of the UTF-8 encoding of {@code s}, computed without allocating. */
    public static long murmur64AUtf8(CharSequence s, long seed) {
        int n = s.length();
        if (isAscii(s, n)) {
            return latin7(s, n, (seed & 0xffffffffL) ^ (n * M));
        }
        long h = (seed & 0xffffffffL) ^ (utf8Length(s) * M);
        long acc = 0;
        int filled = 0;
        for (int i = 0; i < n; i++) {
            int c = s.charAt(i);
            int cp = c;
            int bytes;
            if (c < 0x80) {
                bytes = 1;
            } else if (c < 0x800) {
                bytes = 2;
            } else if (Character.isHighSurrogate((char) c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                cp = Character.toCodePoint((char) c, s.charAt(++i));
                bytes = 4;
            } else if (Character.isSurrogate((char) c)) {
                cp = '?';
                bytes = 1;
            } else {
                bytes = 3;
            }
            long enc = encodeUtf8(cp, bytes);
            for (int b = 0; b < bytes; b++) {
                acc |= ((enc >>> (8 * b)) & 0xff) << (8 * filled);
                if (++filled == 8) {
                    h = mixBlock(h, acc);
                    acc = 0;
                    filled = 0;
                }
            }
        }
        if (filled != 0) {
            h = mixTail(h, acc);
        }
        return finish(h);
    }

    /**
     * {@link #murmur64AUtf8(CharSequence, long)} of {@code s} with {@code seedA} and with {@code seedB}, in one pass
     * over an ASCII string (the two hashes share every block's mixing; only their states differ): {@code out[0]} and
     * {@code out[1]}.
     */
    public static void murmur64AUtf8(CharSequence s, long seedA, long seedB, long[] out) {
        int n = s.length();
        if (!isAscii(s, n)) {
            out[0] = murmur64AUtf8(s, seedA);
            out[1] = murmur64AUtf8(s, seedB);
            return;
        }
        long a = (seedA & 0xffffffffL) ^ (n * M);
        long b = (seedB & 0xffffffffL) ^ (n * M);
        int end = n & ~7;
        for (int i = 0; i < end; i += 8) {
            long k = latin7Block(s, i);
            k *= M;
            k ^= k >>> R;
            k *= M;
            a = (a ^ k) * M;
            b = (b ^ k) * M;
        }
        if (end != n) {
            long k = latin7Tail(s, end, n);
            a = mixTail(a, k);
            b = mixTail(b, k);
        }
        out[0] = finish(a);
        out[1] = finish(b);
    }

    private static boolean isAscii(CharSequence s, int n) {
        for (int i = 0; i < n; i++) {
            if (s.charAt(i) >= 0x80) {
                return false;
            }
        }
        return true;
    }

    /** The number of bytes of the UTF-8 encoding of {@code s} (unpaired surrogates count as one). */
    public static int utf8Length(CharSequence s) {
        int n = s.length();
        int len = n;
        for (int i = 0; i < n; i++) {
            char c = s.charAt(i);
            if (c >= 0x80) {
                len += extraUtf8Bytes(s, i, c);
                if (Character.isHighSurrogate(c) && i + 1 < n && Character.isLowSurrogate(s.charAt(i + 1))) {
                    i++;
                }
            }
        }
        return len;
    }

    /** The splitmix64 / murmur3 finaliser: a bijective 64-bit mixer. */
    public static long mix64(long z) {
        z = (z ^ (z >>> 33)) * 0xff51afd7ed558ccdL;
        z = (z ^ (z >>> 33)) * 0xc4ceb9fe1a85ec53L;
        return z ^ (z >>> 33);
    }

    private static int extraUtf8Bytes(CharSequence s, int i, char c) {
        if (c < 0x800) {
            return 1;
        }
        if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
            return 2; // two chars, four bytes
        }
        return Character.isSurrogate(c) ? 0 : 2;
    }

    private static long latin7(CharSequence s, int n, long h) {
        int end = n & ~7;
        for (int i = 0; i < end; i += 8) {
            h = mixBlock(h, latin7Block(s, i));
        }
        if (end != n) {
            h = mixTail(h, latin7Tail(s, end, n));
        }
        return finish(h);
    }

    /** The 8 ASCII characters from {@code i} as the little-endian block of their bytes. */
    private static long latin7Block(CharSequence s, int i) {
        return s.charAt(i)
                | (long) s.charAt(i + 1) << 8
                | (long) s.charAt(i + 2) << 16
                | (long) s.charAt(i + 3) << 24
                | (long) s.charAt(i + 4) << 32
                | (long) s.charAt(i + 5) << 40
                | (long) s.charAt(i + 6) << 48
                | (long) s.charAt(i + 7) << 56;
    }

    /** The ASCII characters of {@code [from, to)} (fewer than 8) as the little-endian tail of their bytes. */
    private static long latin7Tail(CharSequence s, int from, int to) {
        long k = 0;
        for (int i = from; i < to; i++) {
            k |= (long) s.charAt(i) << (8 * (i - from));
        }
        return k;
    }

    /** The UTF-8 bytes of code point {@code cp}, first byte in the low 8 bits. */
    private static long encodeUtf8(int cp, int bytes) {
        switch (bytes) {
            case 1:
                return cp;
            case 2:
                return (0xc0 | (cp >>> 6)) | (long) (0x80 | (cp & 0x3f)) << 8;
            case 3:
                return (0xe0 | (cp >>> 12))
                        | (long) (0x80 | ((cp >>> 6) & 0x3f)) << 8
                        | (long) (0x80 | (cp & 0x3f)) << 16;
            default:
                return (0xf0 | (cp >>> 18))
                        | (long) (0x80 | ((cp >>> 12) & 0x3f)) << 8
                        | (long) (0x80 | ((cp >>> 6) & 0x3f)) << 16
                        | (long) (0x80 | (cp & 0x3f)) << 24;
        }
    }

    private static long tail(byte[] data, int from, int rest) {
        long k = 0;
        for (int i = 0; i < rest; i++) {
            k |= (data[from + i] & 0xffL) << (8 * i);
        }
        return k;
    }

    private static long mixBlock(long h, long k) {
        k *= M;
        k ^= k >>> R;
        k *= M;
        h ^= k;
        return h * M;
    }

    private static long mixTail(long h, long k) {
        return (h ^ k) * M;
    }

    private static long finish(long h) {
        h ^= h >>> R;
        h *= M;
        return h ^ (h >>> R);
    }
}
