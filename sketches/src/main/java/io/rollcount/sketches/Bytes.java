package io.rollcount.sketches;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/** Little-endian reads and writes with bounds reported as format errors. */
final class Bytes {
    private static final VarHandle LONG = MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle INT = MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

    private Bytes() {}

    static void putLong(byte[] b, int at, long v) {
        LONG.set(b, at, v);
    }

    static void putInt(byte[] b, int at, int v) {
        INT.set(b, at, v);
    }

    static long getLong(byte[] b, int at, String what) {
        need(b, at, 8, what);
        return (long) LONG.get(b, at);
    }

    static int getInt(byte[] b, int at, String what) {
        need(b, at, 4, what);
        return (int) INT.get(b, at);
    }

    static void need(byte[] b, int at, int n, String what) {
        if (at < 0 || n < 0 || at + n > b.length) {
            throw new SketchFormatException(
                    "truncated " + what + ": needs bytes " + at + ".." + (at + n - 1) + " but has " + b.length);
        }
    }

    static double getFiniteDouble(byte[] b, int at, String what) {
        double d = Double.longBitsToDouble(getLong(b, at, what));
        if (!Double.isFinite(d)) {
            throw new SketchFormatException("corrupt " + what + ": " + d + " at byte " + at);
        }
        return d;
    }
}
