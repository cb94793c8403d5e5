package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.model.Event;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.flink.api.common.accumulators.Accumulator;
import org.apache.flink.streaming.api.operators.ProcessOperator;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/** {@link RouteEvents} in Flink's operator test harness: where each record goes and what it counts. */
class RouteEventsTest {
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
        try (var h = new OneInputStreamOperatorTestHarness<Event, Event>(new ProcessOperator<>(new RouteEvents()))) {
            h.open();
            Event plain = event("a", null, "{\"counter\":\"a\"}");
            Event withId = event("b", "id-1", "{\"counter\":\"b\",\"event_id\":\"id-1\"}");
            Event bad = event(null, null, "{oops").deadLetter("invalid_json", "not JSON");
            Event cut = event(null, null, "x").deadLetter("invalid_json", "too long");
            cut.payloadSize = 100_000; // a payload cut when read counts with its whole size
            Event missing = event(null, null, "{}").deadLetter("missing_counter", "no counter");
            for (Event e : new Event[] {plain, withId, bad, cut, missing}) h.processElement(e, e.ts);

            assertThat(h.extractOutputValues()).containsExactly(plain, withId);
            assertThat(h.getSideOutput(RouteEvents.DEAD_LETTERS))
                    .extracting(r -> r.getValue())
                    .containsExactly(bad, cut, missing);

            Map<String, Accumulator<?, ?>> acc =
                    h.getEnvironment().getAccumulatorRegistry().getUserMap();
            assertThat(acc.get(JobAccumulators.EVENTS_READ).getLocalValue()).isEqualTo(5L);
            long bytes = (plain.payload.length + 1)
                    + (withId.payload.length + 1)
                    + (bad.payload.length + 1)
                    + (100_000 + 1)
                    + (missing.payload.length + 1);
            assertThat(acc.get(JobAccumulators.BYTES_READ).getLocalValue()).isEqualTo(bytes);
            assertThat(acc.get(JobAccumulators.DEAD_LETTERS_PREFIX + "invalid_json")
                            .getLocalValue())
                    .isEqualTo(2L);
            assertThat(acc.get(JobAccumulators.DEAD_LETTERS_PREFIX + "missing_counter")
                            .getLocalValue())
                    .isEqualTo(1L);
        }
    }
}
