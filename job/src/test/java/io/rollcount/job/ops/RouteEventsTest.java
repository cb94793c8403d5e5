package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.model.Event;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.flink.api.common.accumulators.Accumulator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/** {@link RouteEvents} in Flink's operator test harness: where each record goes and what it counts. */
class RouteEventsTest {
    private static final long LATENESS = 60_000;

    private static Event event(String counter, String eventId, String payload) {
        Event e = new Event();
        e.counter = counter;
        e.eventId = eventId;
        e.ts = 1_000;
        e.payload = payload.getBytes(StandardCharsets.UTF_8);
        return e;
    }

    @Test
    void deadLettersGoAsideTheRestOnAndAllAreCounted() throws Exception {
        try (var h = new OneInputStreamOperatorTestHarness<Event, Event>(new RouteEvents(null, LATENESS))) {
            h.open();
            Event plain = event("a", null, "{\"counter\":\"a\"}");
            Event withId = event("b", "id-1", "{\"counter\":\"b\",\"event_id\":\"id-1\"}");
            Event bad = event(null, null, "{oops").deadLetter("invalid_json", "not JSON");
            Event cut = event(null, null, "x").deadLetter("invalid_json", "too long");
            cut.payloadSize = 100_000; // a payload cut when read counts with its whole size
            Event missing = event(null, null, "{}").deadLetter("missing_counter", "no counter");
            long plainBytes = plain.payload.length + 1;
            long withIdBytes = withId.payload.length + 1;
            for (Event e : new Event[] {plain, withId, bad, cut, missing}) h.processElement(e, e.ts);

            assertThat(h.extractOutputValues()).containsExactly(plain, withId);
            assertThat(h.getSideOutput(RouteEvents.DEAD_LETTERS))
                    .extracting(r -> r.getValue())
                    .containsExactly(bad, cut, missing);
            // dead letters keep their raw input
            assertThat(bad.payload).isNotNull();

            Map<String, Accumulator<?, ?>> acc =
                    h.getEnvironment().getAccumulatorRegistry().getUserMap();
            assertThat(acc.get(JobAccumulators.EVENTS_READ).getLocalValue()).isEqualTo(5L);
            long bytes =
                    plainBytes + withIdBytes + (bad.payload.length + 1) + (100_000 + 1) + (missing.payload.length + 1);
            assertThat(acc.get(JobAccumulators.BYTES_READ).getLocalValue()).isEqualTo(bytes);
            assertThat(acc.get(JobAccumulators.DEAD_LETTERS_PREFIX + "invalid_json")
                            .getLocalValue())
                    .isEqualTo(2L);
            assertThat(acc.get(JobAccumulators.DEAD_LETTERS_PREFIX + "missing_counter")
                            .getLocalValue())
                    .isEqualTo(1L);
        }
    }

    @Test
    void anEventThatCannotTurnLateGoesOnWithoutItsRawInput() throws Exception {
        try (var h = new OneInputStreamOperatorTestHarness<Event, Event>(new RouteEvents(null, LATENESS))) {
            h.open();
            // no watermark yet: the one downstream has none either, nothing can be late there
            Event first = withRawInput(event("a", "id-1", "{\"counter\":\"a\"}"), 1_000);
            h.processElement(first, first.ts);
            h.processWatermark(new Watermark(100_000));
            Event atTheBound = withRawInput(event("a", "id-2", "{\"counter\":\"a\"}"), 100_000 - LATENESS);
            Event behind = withRawInput(event("a", "id-3", "{\"counter\":\"a\",\"ts\":1}"), 100_000 - LATENESS - 1);
            Event bad = withRawInput(event(null, null, "{oops"), 1).deadLetter("invalid_json", "not JSON");
            for (Event e : new Event[] {atTheBound, behind, bad}) h.processElement(e, e.ts);

            assertThat(h.extractOutputValues()).containsExactly(first, atTheBound, behind);
            for (Event e : new Event[] {first, atTheBound}) {
                assertThat(e.payload).isNull();
                assertThat(e.key).isNull();
                assertThat(e.source).isNull();
                assertThat(e.counter).isEqualTo("a"); // what is counted stays
            }
            // may be late where the job's watermark is: it keeps what its dead letter needs
            assertThat(new String(behind.payload, StandardCharsets.UTF_8)).isEqualTo("{\"counter\":\"a\",\"ts\":1}");
            assertThat(behind.key).isNotNull();
            assertThat(behind.source).isEqualTo("topic/0/7");
            assertThat(bad.payload).isNotNull();
        }
    }

    @Test
    void afterItsOutputWasIdleEveryEventKeepsItsRawInput() throws Exception {
        try (var h = new OneInputStreamOperatorTestHarness<Event, Event>(new RouteEvents(null, LATENESS))) {
            h.open();
            h.processWatermark(new Watermark(100_000));
            h.processWatermarkStatus(WatermarkStatus.IDLE);
            h.processWatermarkStatus(WatermarkStatus.ACTIVE);
            h.processWatermark(new Watermark(200_000));
            // the channel may be out of the valve's minimum downstream: its events may be late there
            Event e = withRawInput(event("a", "id-1", "{\"counter\":\"a\"}"), 200_000);
            h.processElement(e, e.ts);
            assertThat(h.extractOutputValues()).containsExactly(e);
            assertThat(e.payload).isNotNull();
            assertThat(e.source).isEqualTo("topic/0/7");
        }
    }

    private static Event withRawInput(Event e, long ts) {
        e.ts = ts;
        e.key = "k".getBytes(StandardCharsets.UTF_8);
        e.source = "topic/0/7";
        return e;
    }
}
