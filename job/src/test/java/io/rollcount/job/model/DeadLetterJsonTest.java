package io.rollcount.job.model;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import io.rollcount.job.kafka.DeadLetterRecords;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The layout of a dead letter (contract section 4) and its limits (issue 18 item 1): the payload cut to
 * 64 KiB on a code-point boundary, base64 decided on the whole input, the other fields capped, and every
 * dead letter under {@link DeadLetterPayload#MAX_SERIALIZED_BYTES}.
 */
class DeadLetterJsonTest {
    private static final int MAX = DeadLetterPayload.MAX_PAYLOAD_BYTES;

    private static Event deadLetter(byte[] payload, String reason, String detail, String source) {
        Event e = new Event();
        e.payload = payload;
        e.source = source;
        return e.deadLetter(reason, detail);
    }

    @Test
    void aSmallRecordIsWholeWithEveryFieldInTheContractsOrder() throws IOException {
        byte[] json = Json.deadLetter(deadLetter(
                "{\"counter\":\"a b\"}".getBytes(StandardCharsets.UTF_8),
                "invalid_counter",
                "'counter' contains whitespace",
                "counter-events/0/7"));
        assertThat(new String(json, StandardCharsets.UTF_8))
                .isEqualTo("{\"reason\":\"invalid_counter\",\"detail\":\"'counter' contains whitespace\","
                        + "\"payload\":\"{\\\"counter\\\":\\\"a b\\\"}\",\"payload_encoding\":\"utf8\",\"payload_truncated\":false,\"size\":17,"
                        + "\"source\":\"counter-events/0/7\"}");
        Map<String, Object> tombstone =
                parse(Json.deadLetter(deadLetter(null, "invalid_json", "the record has no value", "t/0/1")));
        assertThat(tombstone)
                .containsEntry("payload", null)
                .containsEntry("payload_encoding", null)
                .containsEntry("payload_truncated", false)
                .containsEntry("size", 0L);
    }

    @Test
    void controlBytesAndInvalidUtf8AreBase64CutTo64KiBWithTheirSize() throws IOException {
        byte[] control = new byte[200_000];
        for (int i = 0; i < control.length; i++) control[i] = (byte) (1 + i % 31);
        byte[] invalid = new byte[800_000];
        Arrays.fill(invalid, (byte) 0xFF);
        for (byte[] raw : new byte[][] {control, invalid}) {
            byte[] json = Json.deadLetter(deadLetter(raw, "invalid_json", "x", "t/0/1"));
            assertThat(json.length).isLessThanOrEqualTo(DeadLetterPayload.MAX_SERIALIZED_BYTES);
            Map<String, Object> v = parse(json);
            assertThat(v)
                    .containsEntry("payload_encoding", "base64")
                    .containsEntry("payload_truncated", true)
                    .containsEntry("size", (long) raw.length);
            assertThat(Base64.getDecoder().decode((String) v.get("payload"))).isEqualTo(Arrays.copyOf(raw, MAX));
        }
        // A single control byte in plain text makes the whole record base64, tab/CR/LF do not.
        assertThat(parse(Json.deadLetter(deadLetter(new byte[] {'a', 1, 'b'}, "r", "d", "s"))))
                .containsEntry("payload_encoding", "base64");
        assertThat(parse(Json.deadLetter(deadLetter("a\tb\r\n".getBytes(StandardCharsets.UTF_8), "r", "d", "s"))))
                .containsEntry("payload_encoding", "utf8")
                .containsEntry("payload", "a\tb\r\n");
    }

    @Test
    void textIsCutOnACodePointBoundaryAndTheEncodingIsDecidedOnTheWholeInput() throws IOException {
        String text = "日".repeat(30_000); // 3 bytes each: 64 KiB falls inside a character
        Map<String, Object> v =
                parse(Json.deadLetter(deadLetter(text.getBytes(StandardCharsets.UTF_8), "invalid_json", "d", "s")));
        String payload = (String) v.get("payload");
        assertThat(v)
                .containsEntry("payload_encoding", "utf8")
                .containsEntry("payload_truncated", true)
                .containsEntry("size", 90_000L);
        assertThat(payload.getBytes(StandardCharsets.UTF_8)).hasSize(MAX - MAX % 3);
        assertThat(text).startsWith(payload);
        // Valid UTF-8 in the first 64 KiB, a bad byte after: base64, though the part kept is valid text.
        byte[] late = Arrays.copyOf("x".repeat(100_000).getBytes(StandardCharsets.UTF_8), 100_001);
        late[100_000] = (byte) 0xC3;
        Map<String, Object> w = parse(Json.deadLetter(deadLetter(late, "invalid_utf8", "d", "s")));
        assertThat(w).containsEntry("payload_encoding", "base64").containsEntry("size", 100_001L);
        assertThat(Base64.getDecoder().decode((String) w.get("payload"))).isEqualTo(Arrays.copyOf(late, MAX));
    }

    @Test
    void aPayloadCutWhenReadWritesTheSameDeadLetterAsTheWholeOne() {
        byte[] raw = new byte[300_000];
        Arrays.fill(raw, (byte) 0x01);
        byte[] whole = Json.deadLetter(deadLetter(raw, "invalid_json", "d", "s"));
        Event cut = deadLetter(raw.clone(), "invalid_json", "d", "s").cutPayload();
        assertThat(cut.payload).hasSize(MAX);
        assertThat(cut.payloadSize).isEqualTo(300_000L);
        assertThat(Json.deadLetter(cut)).isEqualTo(whole);
        // A file line over the line limit keeps only its first bytes: the dead letter still says how large it was.
        Event line = new Event()
                .keepPayload(DeadLetterPayload.ofPrefix(
                        Arrays.copyOf("y".repeat(70_000).getBytes(StandardCharsets.UTF_8), MAX + 4), 5_000_000L, MAX));
        line.deadLetter("invalid_json", "long");
        assertThat(new String(Json.deadLetter(line), StandardCharsets.UTF_8))
                .contains("\"payload_encoding\":\"utf8\",\"payload_truncated\":true,\"size\":5000000");
    }

    @Test
    void otherFieldsAreCappedAndLoneSurrogatesReplaced() throws IOException {
        String detail = "'ts' '\ud800" + "\u0001".repeat(5_000) + "' is not ISO-8601";
        byte[] json = Json.deadLetter(deadLetter(
                "\"".repeat(MAX + 10).getBytes(StandardCharsets.UTF_8),
                "r".repeat(500),
                detail,
                "\u0002".repeat(3_000)));
        // The worst case of every field at once: quotes escape to 2 bytes, control characters to 6.
        assertThat(json.length)
                .isLessThanOrEqualTo(DeadLetterPayload.MAX_SERIALIZED_BYTES)
                .isGreaterThan(2 * MAX);
        Map<String, Object> v = parse(json);
        assertThat((String) v.get("reason")).hasSize(DeadLetterPayload.MAX_REASON_CHARS);
        assertThat((String) v.get("detail"))
                .hasSize(DeadLetterPayload.MAX_DETAIL_CHARS)
                .startsWith("'ts' '\uFFFD\u0001");
        assertThat((String) v.get("source")).hasSize(DeadLetterPayload.MAX_SOURCE_CHARS);
        assertThat(DeadLetterPayload.cap("ab\ud83d\ude00", 3)).isEqualTo("ab"); // never half a pair
        assertThat(DeadLetterPayload.cap("a\udc00b", 10)).isEqualTo("a\uFFFDb");
        assertThat(DeadLetterPayload.key(new byte[5_000])).hasSize(DeadLetterPayload.MAX_KEY_BYTES);
        assertThat(DeadLetterPayload.key(null)).isNull();
        assertThat(DeadLetterPayload.MAX_SERIALIZED_BYTES)
                .as("far under Kafka's 1 MiB")
                .isLessThan(200 * 1024);
    }

    @Test
    void aSmallerRecordLimitCutsThePayloadFurtherAndTooSmallAOneIsRefused() throws IOException {
        byte[] raw = "z".repeat(200_000).getBytes(StandardCharsets.UTF_8);
        Event e = deadLetter(raw, "invalid_json", "d", "t/0/1");
        byte[] v = DeadLetterRecords.value(e, 20_000);
        assertThat(v.length).isLessThanOrEqualTo(20_000);
        assertThat(parse(v)).containsEntry("payload_truncated", true).containsEntry("size", 200_000L);
        assertThat(DeadLetterRecords.value(e, 10_000_000)).isEqualTo(Json.deadLetter(e));
        assertThatThrownBy(() -> new DeadLetterRecords("counter-events-dlq", 4_096))
                .hasMessageContaining("at least " + DeadLetterRecords.MIN_LIMIT);
    }

    /** The fields of a flat JSON object: strings, longs, booleans and nulls. */
    static Map<String, Object> parse(byte[] json) throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        try (JsonParser p = new JsonFactory().createParser(json)) {
            assertThat(p.nextToken()).isEqualTo(JsonToken.START_OBJECT);
            while (p.nextToken() == JsonToken.FIELD_NAME) {
                String name = p.currentName();
                JsonToken t = p.nextToken();
                m.put(
                        name,
                        switch (t) {
                            case VALUE_STRING -> p.getText();
                            case VALUE_NUMBER_INT -> p.getLongValue();
                            case VALUE_TRUE -> true;
                            case VALUE_FALSE -> false;
                            case VALUE_NULL -> null;
                            default -> throw new AssertionError(t);
                        });
            }
            assertThat(p.nextToken()).isNull();
        }
        assertThat(m.keySet())
                .containsExactly(
                        "reason", "detail", "payload", "payload_encoding", "payload_truncated", "size", "source");
        return m;
    }
}
