package io.rollcount.job.parse;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** One test per rule of contract section 1. */
class EventParserTest {
    private static final long NOW = 1_764_000_000_000L;
    private final EventParser parser = new EventParser(600_000);

    private Event parse(String line) {
        return parser.parse(line.getBytes(StandardCharsets.UTF_8), null, "test/0/1", NOW - 1000, NOW);
    }

    static Stream<Arguments> badLines() {
        return Arrays.stream(EventGenerator.badLines(NOW)).map(l -> Arguments.of(l[0], l[1]));
    }

    @ParameterizedTest(name = "{1}: {0}")
    @MethodSource("badLines")
    void everyBrokenRuleIsADeadLetterWithItsReason(String line, String reason) {
        Event e = parse(line);
        assertThat(e.reason).isEqualTo(reason);
        assertThat(e.detail).isNotBlank();
        assertThat(e.payload).isEqualTo(line.getBytes(StandardCharsets.UTF_8));
        assertThat(e.source).isEqualTo("test/0/1");
    }

    @Test
    void minimalEventDefaultsDeltaToOneAndTimeToTheRecordTimestamp() {
        Event e = parse("{\"counter\":\"post:1:likes\"}");
        assertThat(e.isDeadLetter()).isFalse();
        assertThat(e.counter).isEqualTo("post:1:likes");
        assertThat(e.delta).isEqualTo(1);
        assertThat(e.ts).isEqualTo(NOW - 1000);
        assertThat(e.eventId).isNull();
        assertThat(e.user).isNull();
    }

    @Test
    void allFieldsAndUnknownOnes() {
        Event e = parse("{\"counter\":\"video:9\",\"delta\":-3,\"ts\":" + (NOW - 5)
                + ",\"event_id\":\"e1\",\"user\":\"ü\"," + "\"extra\":{\"nested\":[1,2,{\"x\":null}]},\"more\":true}");
        assertThat(e.isDeadLetter()).isFalse();
        assertThat(e.delta).isEqualTo(-3);
        assertThat(e.ts).isEqualTo(NOW - 5);
        assertThat(e.eventId).isEqualTo("e1");
        assertThat(e.user).isEqualTo("ü");
    }

    @Test
    void isoTimestampsNeedAnOffset() {
        assertThat(parse("{\"counter\":\"a\",\"ts\":\"2025-11-24T16:00:00Z\"}").ts)
                .isEqualTo(1_764_000_000_000L);
        assertThat(parse("{\"counter\":\"a\",\"ts\":\"2025-11-24T17:00:00+01:00\"}").ts)
                .isEqualTo(1_764_000_000_000L);
        assertThat(parse("{\"counter\":\"a\",\"ts\":\"2025-11-24T16:00:00.250Z\"}").ts)
                .isEqualTo(1_764_000_000_250L);
        assertThat(parse("{\"counter\":\"a\",\"ts\":\"yesterday\"}").reason).isEqualTo(EventParser.INVALID_TS);
    }

    @Test
    void limitsAreInclusive() {
        assertThat(parse("{\"counter\":\"" + "c".repeat(256) + "\"}").isDeadLetter())
                .isFalse();
        assertThat(parse("{\"counter\":\"" + "é".repeat(128) + "\"}").isDeadLetter())
                .isFalse(); // 256 bytes
        assertThat(parse("{\"counter\":\"" + "é".repeat(129) + "\"}").reason).isEqualTo(EventParser.INVALID_COUNTER);
        assertThat(parse("{\"counter\":\"a\",\"delta\":1000000000000}").delta).isEqualTo(1_000_000_000_000L);
        assertThat(parse("{\"counter\":\"a\",\"delta\":-1000000000000}").delta).isEqualTo(-1_000_000_000_000L);
        assertThat(parse("{\"counter\":\"a\",\"event_id\":\"" + "e".repeat(128) + "\"}")
                        .isDeadLetter())
                .isFalse();
        assertThat(parse("{\"counter\":\"a\",\"user\":\"" + "u".repeat(256) + "\"}")
                        .isDeadLetter())
                .isFalse();
    }

    @Test
    void nullOptionalFieldsAreAbsent() {
        Event e = parse("{\"counter\":\"a\",\"delta\":null,\"ts\":null,\"event_id\":null,\"user\":null}");
        assertThat(e.isDeadLetter()).isFalse();
        assertThat(e.delta).isEqualTo(1);
        assertThat(e.ts).isEqualTo(NOW - 1000);
    }

    @Test
    void unicodeWhitespaceAndFormatCharactersAreRejectedInCounters() {
        assertThat(parse("{\"counter\":\"a\\u00a0b\"}").reason)
                .isEqualTo(EventParser.INVALID_COUNTER); // no-break space
        assertThat(parse("{\"counter\":\"a\\u2028b\"}").reason)
                .isEqualTo(EventParser.INVALID_COUNTER); // line separator
        assertThat(parse("{\"counter\":\"a\\u200bb\"}").reason)
                .isEqualTo(EventParser.INVALID_COUNTER); // zero-width space
        assertThat(parse("{\"counter\":\"a\\ud800b\"}").reason)
                .isEqualTo(EventParser.INVALID_COUNTER); // lone surrogate
        assertThat(parse("{\"counter\":\"日本:😀\"}").isDeadLetter()).isFalse();
    }

    @Test
    void invalidUtf8IsItsOwnReasonAndTheDeadLetterCarriesBase64() {
        byte[] raw = EventGenerator.invalidUtf8Line();
        Event e = parser.parse(raw, null, "f/3", NOW, 0);
        assertThat(e.reason).isEqualTo(EventParser.INVALID_UTF8);
        String json = new String(Json.deadLetter(e), StandardCharsets.UTF_8);
        assertThat(json)
                .contains("\"payload\":\"" + java.util.Base64.getEncoder().encodeToString(raw) + "\"");
        assertThat(json).contains("\"reason\":\"invalid_utf8\"").contains("\"source\":\"f/3\"");
    }

    @Test
    void overlongAndSurrogateUtf8FormsAreInvalidNotAnotherCounter() {
        byte[] overlongSlash = {
            '{', '"', 'c', 'o', 'u', 'n', 't', 'e', 'r', '"', ':', '"', 'a', (byte) 0xC0, (byte) 0xAF, '"', '}'
        };
        assertThat(parser.parse(overlongSlash, null, "t/0/1", NOW, NOW).reason).isEqualTo(EventParser.INVALID_UTF8);
        byte[] encodedSurrogate = {
            '{',
            '"',
            'c',
            'o',
            'u',
            'n',
            't',
            'e',
            'r',
            '"',
            ':',
            '"',
            'a',
            (byte) 0xED,
            (byte) 0xA0,
            (byte) 0x80,
            '"',
            '}'
        };
        assertThat(parser.parse(encodedSurrogate, null, "t/0/2", NOW, NOW).reason)
                .isEqualTo(EventParser.INVALID_UTF8);
        assertThat(parse("{\"counter\":\"caf\u00e9:1\"}").counter).isEqualTo("caf\u00e9:1");
    }

    @Test
    void futureTimestampsFromKafkaAreDeadLettered() {
        Event ok = parse("{\"counter\":\"a\",\"ts\":" + (NOW + 600_000) + "}");
        assertThat(ok.isDeadLetter()).isFalse();
        Event future = parse("{\"counter\":\"a\",\"ts\":" + (NOW + 600_001) + "}");
        assertThat(future.reason).isEqualTo(EventParser.FUTURE_TS);
        // Files skip the rule (wall clock 0).
        Event fromFile = parser.parse(
                ("{\"counter\":\"a\",\"ts\":" + (NOW + 86_400_000) + "}").getBytes(StandardCharsets.UTF_8),
                null,
                "f/1",
                NOW,
                0);
        assertThat(fromFile.isDeadLetter()).isFalse();
    }

    @Test
    void aFieldOfTheObjectTwiceIsInvalidJsonWhateverItsValueAndWhereverItComes() {
        for (String json : new String[] {
            "{\"counter\":\"a\",\"counter\":\"b\"}",
            "{\"counter\":\"a\",\"delta\":1,\"ts\":5,\"delta\":1}",
            "{\"counter\":\"a\",\"user\":\"u\",\"event_id\":\"e\",\"user\":null}",
            "{\"counter\":\"a\",\"ts\":\"bad\",\"ts\":5}", // after a field that broke its rule too
            "{\"counter\":\"a\",\"x\":1,\"y\":2,\"x\":{}}"
        }) {
            Event e = parse(json);
            assertThat(e.reason).as(json).isEqualTo(EventParser.INVALID_JSON);
            assertThat(e.detail).as(json).startsWith("Duplicate field '").doesNotContain("\n");
        }
    }

    @Test
    void whatAnUnknownFieldHoldsIsIgnoredAlsoANameTwice() {
        Event e = parse("{\"counter\":\"a\",\"meta\":{\"x\":1,\"x\":2},\"tags\":[{\"k\":1,\"k\":1}],\"delta\":3}");
        assertThat(e.reason).isNull();
        assertThat(e.counter).isEqualTo("a");
        assertThat(e.delta).isEqualTo(3);
    }

    @Test
    void aMissingValueIsADeadLetterNotACrash() {
        Event e = parser.parse(null, "k".getBytes(StandardCharsets.UTF_8), "t/0/9", NOW, NOW);
        assertThat(e.reason).isEqualTo(EventParser.INVALID_JSON);
        assertThat(e.key).isEqualTo("k".getBytes(StandardCharsets.UTF_8));
    }

    /** Issue 18 item 10: users (and event ids) of lone surrogates have no UTF-8 form, so distinct ones would count as one. */
    @Test
    void loneSurrogatesInUserOrEventIdAreDeadLetteredNotMerged() {
        Event high = parse("{\"counter\":\"a\",\"user\":\"\\ud800\"}");
        Event low = parse("{\"counter\":\"a\",\"user\":\"x\\udc00\"}");
        assertThat(high.reason).isEqualTo(EventParser.INVALID_USER);
        assertThat(high.detail).isEqualTo("'user' contains an unpaired surrogate at index 0");
        assertThat(low.reason).isEqualTo(EventParser.INVALID_USER);
        assertThat(low.detail).isEqualTo("'user' contains an unpaired surrogate at index 1");
        assertThat(parse("{\"counter\":\"a\",\"user\":\"\\ude00\\ud83d\"}").reason)
                .isEqualTo(EventParser.INVALID_USER); // reversed pair
        Event id = parse("{\"counter\":\"a\",\"event_id\":\"e\\udbff\"}");
        assertThat(id.reason).isEqualTo(EventParser.INVALID_EVENT_ID);
        assertThat(id.detail).isEqualTo("'event_id' contains an unpaired surrogate at index 1");
        // A real pair (U+1F600) is a valid user and event id, distinct from its neighbour U+1F601.
        Event smile = parse("{\"counter\":\"a\",\"user\":\"\\ud83d\\ude00\",\"event_id\":\"\\ud83d\\ude00\"}");
        Event grin = parse("{\"counter\":\"a\",\"user\":\"\\ud83d\\ude01\"}");
        assertThat(smile.isDeadLetter()).isFalse();
        assertThat(smile.user).isEqualTo("\ud83d\ude00").isEqualTo(smile.eventId);
        assertThat(grin.user.getBytes(StandardCharsets.UTF_8))
                .isNotEqualTo(smile.user.getBytes(StandardCharsets.UTF_8));
        // The dead letter of a lone surrogate is valid JSON (the payload is the raw, valid UTF-8 record).
        assertThat(new String(Json.deadLetter(high), StandardCharsets.UTF_8)).contains("\"reason\":\"invalid_user\"");
    }
}
