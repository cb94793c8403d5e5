package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class HashingTest {
    private static final char[] ALPHABET = {
        'a', 'Z', '0', ':', ' ', '\u00e9', '\u00ff', '\u0100', '\u07ff', '\u0800', '\u65e5', '\uffff', '\ud83c',
        '\udf89', '\ud800', '\udfff', '\u0000', '\u007f', '\u0080'
    };

    private static String randomString(SplittableRandom random, int length) {
        StringBuilder sb = new StringBuilder(length);
        for (int i = 0; i < length; i++) {
            sb.append(ALPHABET[random.nextInt(ALPHABET.length)]);
        }
        return sb.toString();
    }

    @Test
    void utf8HashEqualsHashOfGetBytesIncludingUnpairedSurrogates() {
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < 20_000; i++) {
            String s = randomString(random, random.nextInt(41));
            byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
            assertThat(Hashing.utf8Length(s)).as("utf8 length of %s", s).isEqualTo(utf8.length);
            assertThat(Hashing.murmur64AUtf8(s, RedisHyperLogLog.SEED))
                    .as("hash of %s", s)
                    .isEqualTo(Hashing.murmur64A(utf8, 0, utf8.length, RedisHyperLogLog.SEED));
        }
    }

    @Test
    void asciiFastPathAgreesForEveryLength() {
        String s = "abcdefghijklmnopqrstuvwxyz0123456789:post:likes";
        for (int n = 0; n <= s.length(); n++) {
            byte[] b = s.substring(0, n).getBytes(StandardCharsets.UTF_8);
            assertThat(RedisHyperLogLog.hash(s.substring(0, n))).isEqualTo(RedisHyperLogLog.hash(b));
        }
    }

    @Test
    void murmurUsesTheSeedAsUnsigned32Bits() {
        byte[] b = "abc".getBytes(StandardCharsets.UTF_8);
        assertThat(Hashing.murmur64A(b, 0, 3, 0xadc83b19L)).isEqualTo(Hashing.murmur64A(b, 0, 3, 0xffffffffadc83b19L));
        assertThat(Hashing.murmur64A(b, 0, 3, 1)).isNotEqualTo(Hashing.murmur64A(b, 0, 3, 2));
    }

    @Test
    void twoSeedsInOnePassEqualEachSeedAlone() {
        String ascii = "abcdefghijklmnopqrstuvwxyz0123456789:post:likes\u0000e-42";
        long[] out = new long[2];
        for (int n = 0; n <= ascii.length(); n++) {
            String s = ascii.substring(0, n);
            Hashing.murmur64AUtf8(s, 0x5EED_D0D0L, 0xD0D0_5EEDL, out);
            assertThat(out)
                    .as("hashes of %s", s)
                    .containsExactly(Hashing.murmur64AUtf8(s, 0x5EED_D0D0L), Hashing.murmur64AUtf8(s, 0xD0D0_5EEDL));
        }
        for (String s : new String[] {"caf\u00e9:likes", "\ud83d\ude00 emoji", "lone \ud800 surrogate"}) {
            Hashing.murmur64AUtf8(s, 1, 2, out);
            assertThat(out)
                    .as("hashes of %s", s)
                    .containsExactly(Hashing.murmur64AUtf8(s, 1), Hashing.murmur64AUtf8(s, 2));
        }
    }
}
