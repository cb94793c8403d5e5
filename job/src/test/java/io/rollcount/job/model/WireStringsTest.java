package io.rollcount.job.model;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Arrays;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.junit.jupiter.api.Test;

class WireStringsTest {

    private static String roundTrip(String s) throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(16);
        WireStrings.write(s, out);
        out.writeByte(42); // what follows is read where it was written
        DataOutputSerializer copied = new DataOutputSerializer(16);
        DataInputDeserializer source = new DataInputDeserializer(out.getCopyOfBuffer());
        WireStrings.copy(source, copied);
        assertThat(source.readByte()).isEqualTo((byte) 42);
        copied.writeByte(42);
        assertThat(copied.getCopyOfBuffer()).as("byte-wise copy").isEqualTo(out.getCopyOfBuffer());
        DataInputDeserializer in = new DataInputDeserializer(out.getCopyOfBuffer());
        String back = WireStrings.read(in);
        assertThat(in.readByte()).isEqualTo((byte) 42);
        assertThat(in.available()).isZero();
        return back;
    }

    @Test
    void everyWellFormedStringComesBackEqual() throws Exception {
        char[] long1 = new char[200]; // a two-byte length
        Arrays.fill(long1, 'x');
        char[] long3 = new char[600]; // ASCII too long for the per-thread buffer
        Arrays.fill(long3, 'y');
        char[] long2 = new char[70_000]; // a three-byte length
        Arrays.fill(long2, 'é');
        for (String s : new String[] {
            "",
            "a",
            "post:123:likes",
            "ü",
            "日本語:カウンター",
            "emoji:\uD83D\uDE00",
            "\u0000nul",
            new String(long1),
            new String(long2)
        }) {
            assertThat(roundTrip(s)).isEqualTo(s);
        }
    }

    @Test
    void nullComesBackNull() throws Exception {
        assertThat(roundTrip(null)).isNull();
        DataOutputSerializer out = new DataOutputSerializer(4);
        WireStrings.write(null, out);
        assertThat(out.length()).isEqualTo(1);
    }

    @Test
    void anAsciiStringTakesItsLengthByteAndItsBytes() throws Exception {
        DataOutputSerializer out = new DataOutputSerializer(16);
        WireStrings.write("post:1", out);
        assertThat(out.getCopyOfBuffer()).containsExactly(7, 'p', 'o', 's', 't', ':', '1');
    }
}
