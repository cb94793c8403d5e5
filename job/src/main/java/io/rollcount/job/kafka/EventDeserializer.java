package io.rollcount.job.kafka;

import io.rollcount.job.model.Event;
import io.rollcount.job.parse.EventParser;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.record.RecordBatch;

/**
 * Turns every Kafka record into exactly one {@link Event}: a valid increment or a dead letter; it never
 * throws, so a bad record (a null value, garbage, a time too far ahead of the wall clock) is dead-lettered
 * rather than failing the job in a restart loop.
 *
 * <p>The record's time is the event time of an event without {@code ts}; {@code source} is
 * {@code topic/partition/offset}; the key is kept for the dead-letter topic.
 */
public final class EventDeserializer implements KafkaRecordDeserializationSchema<Event> {
    private static final long serialVersionUID = 1L;

    /** Reason of a record the parser could not handle at all (a bug in the parser, not in the record). */
    public static final String PARSER_FAILURE = "parser_failure";

    private final EventParser parser;

    /** @param maxFutureMillis records more than this ahead of the wall clock are dead-lettered (contract section 1) */
    public EventDeserializer(long maxFutureMillis) {
        this.parser = new EventParser(maxFutureMillis);
    }

    @Override
    public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Event> out) {
        out.collect(toEvent(record, System.currentTimeMillis()));
    }

    /** The event of one record, given the wall clock. */
    public Event toEvent(ConsumerRecord<byte[], byte[]> record, long wallClockMillis) {
        String source = record.topic() + "/" + record.partition() + "/" + record.offset();
        // A record without a timestamp (magic v0) counts at the time it is read.
        long ts = record.timestamp() == RecordBatch.NO_TIMESTAMP ? wallClockMillis : record.timestamp();
        Event e;
        try {
            e = parser.parse(record.value(), record.key(), source, ts, wallClockMillis);
        } catch (RuntimeException ex) {
            e = parserFailure(ts, String.valueOf(ex));
        }
        if (e == null) e = parserFailure(ts, "the parser returned nothing");
        // Whatever the parser did, the raw input and where it came from travel with the event.
        e.payload = record.value();
        e.key = record.key();
        e.source = source;
        // Only the first 64 KiB of a large record travel on (a dead letter carries no more), with its size.
        return e.cutPayload();
    }

    private static Event parserFailure(long ts, String detail) {
        Event e = new Event();
        e.ts = ts;
        return e.deadLetter(PARSER_FAILURE, detail);
    }

    @Override
    public TypeInformation<Event> getProducedType() {
        return TypeInformation.of(Event.class);
    }
}
