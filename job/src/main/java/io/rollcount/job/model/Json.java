package io.rollcount.job.model;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * The JSON values of the output topics (contract section 4), shared by the Kafka sinks and the dead-letter
 * file, so that both carry byte for byte the same format.
 */
public final class Json {
    private static final JsonFactory FACTORY = new JsonFactory();

    private Json() {}

    /**
     * {@code {"reason","detail","payload","payload_encoding","payload_truncated","size","source"}}, at most
     * {@link DeadLetterPayload#MAX_SERIALIZED_BYTES} bytes: the payload cut to 64 KiB, the other fields capped
     * ({@link DeadLetterPayload} owns the rules).
     */
    public static byte[] deadLetter(Event e) {
        return deadLetter(e, DeadLetterPayload.MAX_PAYLOAD_BYTES);
    }

    /** As {@link #deadLetter(Event)}, with the payload cut to {@code maxPayloadBytes} (a sink that takes less). */
    public static byte[] deadLetter(Event e, int maxPayloadBytes) {
        DeadLetterPayload p = e.deadLetterPayload(Math.min(maxPayloadBytes, DeadLetterPayload.MAX_PAYLOAD_BYTES));
        return write(g -> {
            g.writeStartObject();
            g.writeStringField("reason", DeadLetterPayload.cap(e.reason, DeadLetterPayload.MAX_REASON_CHARS));
            g.writeStringField("detail", DeadLetterPayload.cap(e.detail, DeadLetterPayload.MAX_DETAIL_CHARS));
            g.writeStringField("payload", p.text());
            g.writeStringField("payload_encoding", p.encoding());
            g.writeBooleanField("payload_truncated", p.truncated());
            g.writeNumberField("size", p.size);
            g.writeStringField("source", DeadLetterPayload.cap(e.source, DeadLetterPayload.MAX_SOURCE_CHARS));
            g.writeEndObject();
        });
    }

    /**
     * {@code {"prefix","counter","res","start","end","sum","events","uniques","revision"}}: {@code prefix} the Redis
     * key prefix the window was counted for.
     */
    public static byte[] rollup(String prefix, Rollup r) {
        return write(g -> {
            g.writeStartObject();
            g.writeStringField("prefix", prefix);
            g.writeStringField("counter", r.counter);
            g.writeStringField("res", r.res);
            g.writeNumberField("start", r.start);
            g.writeNumberField("end", r.end);
            g.writeNumberField("sum", r.sum);
            g.writeNumberField("events", r.events);
            if (r.uniques == null) g.writeNullField("uniques");
            else g.writeNumberField("uniques", r.uniques);
            g.writeNumberField("revision", r.revision);
            g.writeEndObject();
        });
    }

    /**
     * {@code {"prefix","ns","kind","res","start","at","items":[{"counter","score","estimate"}]}}; res and start null
     * for trending; {@code prefix} the Redis key prefix the list was counted for.
     */
    public static byte[] topList(String prefix, TopList t) {
        return write(g -> {
            g.writeStartObject();
            g.writeStringField("prefix", prefix);
            g.writeStringField("ns", t.ns);
            g.writeStringField("kind", t.kind);
            g.writeStringField("res", t.res);
            if (t.start == null) g.writeNullField("start");
            else g.writeNumberField("start", t.start);
            g.writeNumberField("at", t.at);
            g.writeArrayFieldStart("items");
            for (int i = 0; i < t.counters.length; i++) {
                g.writeStartObject();
                g.writeStringField("counter", t.counters[i]);
                g.writeNumberField("score", t.scores[i]);
                g.writeNumberField("estimate", t.estimates[i]);
                g.writeEndObject();
            }
            g.writeEndArray();
            g.writeEndObject();
        });
    }

    /** Decodes strictly: null where the bytes are not valid UTF-8. */
    public static String utf8OrNull(byte[] bytes) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /** Writes one JSON value with a generator. */
    public interface Body {
        void write(JsonGenerator g) throws IOException;
    }

    public static byte[] write(Body body) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(128);
        try (JsonGenerator g = FACTORY.createGenerator(out)) {
            body.write(g);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
