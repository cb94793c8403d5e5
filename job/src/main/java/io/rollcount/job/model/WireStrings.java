package io.rollcount.job.model;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

/**
 * Strings as the records that only cross a shuffle ({@link Event}, {@link PartialSum}, {@link TrendWeight}, never
 * kept in state) write them: the UTF-8 length plus one as an unsigned varint (0: null), then the UTF-8 bytes,
 * written and read in bulk (a short ASCII string through a per-thread buffer, without a new array). Flink's {@code
 * StringValue} reads and writes a string a character at a time, which on the counter ids, event ids and users of
 * every event cost more than the bulk copy the JDK does for ASCII.
 *
 * <p>Only for well-formed strings: an unpaired surrogate would come out as {@code '?'}. Counter ids, event ids and
 * users are checked for them when parsed ({@code EventParser}); the record's source is a Kafka topic and offset or a
 * file name. Dead letters' reasons and details go as Flink writes strings.
 */
public final class WireStrings {
    /**
     * The longest ASCII string written through a per-thread buffer instead of a new array: every counter id, event
     * id and user (at most 256 bytes).
     */
    private static final int SCRATCH_BYTES = 512;

    private static final ThreadLocal<byte[]> SCRATCH = ThreadLocal.withInitial(() -> new byte[SCRATCH_BYTES]);

    private WireStrings() {}

    @SuppressWarnings("deprecation") // String.getBytes(int, int, byte[], int): the low bytes, copied in bulk
    public static void write(String s, DataOutputView out) throws IOException {
        if (s == null) {
            out.writeByte(0);
            return;
        }
        int n = s.length();
        if (n <= SCRATCH_BYTES && isAscii(s)) {
            byte[] scratch = SCRATCH.get();
            s.getBytes(0, n, scratch, 0); // an ASCII character's low byte is its UTF-8 byte
            writeLength(n + 1, out);
            out.write(scratch, 0, n);
            return;
        }
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        writeLength(bytes.length + 1, out);
        out.write(bytes);
    }

    private static boolean isAscii(String s) {
        for (int i = 0; i < s.length(); i++) if (s.charAt(i) >= 0x80) return false;
        return true;
    }

    public static String read(DataInputView in) throws IOException {
        int n = readLength(in);
        if (n == 0) return null;
        byte[] bytes = new byte[n - 1];
        in.readFully(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }

    public static void copy(DataInputView in, DataOutputView out) throws IOException {
        int n = readLength(in);
        writeLength(n, out);
        if (n <= 1) return;
        byte[] bytes = new byte[n - 1];
        in.readFully(bytes);
        out.write(
                bytes); // not out.write(in, n): a DataOutputSerializer refuses that past its buffer instead of growing
    }

    private static void writeLength(int n, DataOutputView out) throws IOException {
        while (n >= 0x80) {
            out.writeByte(n | 0x80);
            n >>>= 7;
        }
        out.writeByte(n);
    }

    private static int readLength(DataInputView in) throws IOException {
        int n = 0;
        int shift = 0;
        int b;
        while ((b = in.readUnsignedByte()) >= 0x80) {
            n |= (b & 0x7f) << shift;
            shift += 7;
        }
        return n | b << shift;
    }
}
