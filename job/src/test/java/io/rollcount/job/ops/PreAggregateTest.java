package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.parse.EventParser;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.operators.StreamMap;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * {@link PreAggregate} in Flink's operator test harness: partial sums per (counter, 5 s bucket), sent on before a
 * watermark, before a checkpoint barrier, at end of input, when the buffer is full and on the processing-time
 * flush; late events dead-lettered; a partial that would overflow sent on as it is.
 */
class PreAggregateTest {
    private static final long T0 = 1_764_000_000_000L; // a 5 s bucket start
    private static final long LATENESS = 60_000;
    private static final long FLUSH = 200;
    private static final long HALF_LIFE = 3_600_000;

    private static OneInputStreamOperatorTestHarness<Event, PartialSum> harness(int maxEntries) throws Exception {
        var h = new OneInputStreamOperatorTestHarness<Event, PartialSum>(
                new PreAggregate(LATENESS, maxEntries, FLUSH, HALF_LIFE));
        h.open();
        return h;
    }

    private static Event event(String counter, long ts, long delta, String user) {
        Event e = new Event();
        e.counter = counter;
        e.ts = ts;
        e.delta = delta;
        e.user = user;
        return e;
    }

    private static void send(OneInputStreamOperatorTestHarness<Event, PartialSum> h, Event e) throws Exception {
        h.processElement(e, e.ts);
    }

    @Test
    void combinesPerCounterAndBucketAndSendsThePartialsBeforeTheWatermark() throws Exception {
        try (var h = harness(1000)) {
            send(h, event("a", T0 + 100, 2, "u1"));
            send(h, event("a", T0 + 200, 3, "u2"));
            send(h, event("a", T0 + 200, 1, "u1"));
            send(h, event("a", T0 + 5_100, 1, null));
            send(h, event("b", T0 + 300, -4, null));
            assertThat(h.getOutput()).as("nothing before a flush").isEmpty();

            h.processWatermark(new Watermark(T0));
            List<Object> out = new ArrayList<>(h.getOutput());
            assertThat(out).hasSize(4);
            assertThat(out.get(3)).isEqualTo(new Watermark(T0));
            List<PartialSum> partials = h.extractOutputValues();
            // in the order of their first event
            assertThat(partials)
                    .extracting(p -> p.counter, p -> p.bucket, p -> p.sum, p -> p.events)
                    .containsExactly(
                            org.assertj.core.groups.Tuple.tuple("a", T0, 6L, 3L),
                            org.assertj.core.groups.Tuple.tuple("a", T0 + 5_000, 1L, 1L),
                            org.assertj.core.groups.Tuple.tuple("b", T0, -4L, 1L));
            assertThat(partials.get(0).users).containsExactlyInAnyOrder("u1", "u2");
            assertThat(partials.get(1).users).isEmpty();
            assertThat(partials.get(2).negative).isTrue();
            // each partial is stamped with its bucket's start
            for (Object o : out.subList(0, 3)) {
                StreamRecord<?> r = (StreamRecord<?>) o;
                assertThat(r.getTimestamp()).isEqualTo(((PartialSum) r.getValue()).bucket);
            }
            assertThat(h.getSideOutput(PreAggregate.LATE)).isNull();
        }
    }

    @Test
    void anEventBeyondTheAllowedLatenessIsDeadLetteredAndOneWithinItCounts() throws Exception {
        try (var h = harness(1000)) {
            long wm = T0 + 600_000;
            h.processWatermark(new Watermark(wm));
            send(h, event("a", wm - LATENESS - 1, 1, null));
            send(h, event("a", wm - LATENESS, 1, null));
            h.endInput();

            assertThat(h.extractOutputValues())
                    .singleElement()
                    .satisfies(p -> assertThat(p.sum).isOne());
            var late = h.getSideOutput(PreAggregate.LATE);
            assertThat(late).hasSize(1);
            Event dead = late.peek().getValue();
            assertThat(dead.reason).isEqualTo(EventParser.LATE);
            assertThat(dead.detail)
                    .isEqualTo("ts " + (wm - LATENESS - 1) + " is " + (LATENESS + 1) + " ms behind the watermark " + wm
                            + ", more than the allowed lateness of " + LATENESS + " ms");
        }
    }

    /**
     * An idle status from the inputs is not passed on, so the counting operator's watermark stays the minimum
     * over every subtask of this one (see {@link PreAggregate}, Idleness); partials and watermarks still go
     * out. The harness does record a status an ordinary operator forwards (checked first on a map).
     */
    @Test
    void neverMarksItsOutputIdle() throws Exception {
        try (var plain = new OneInputStreamOperatorTestHarness<Long, Long>(new StreamMap<Long, Long>(x -> x))) {
            plain.open();
            plain.processWatermarkStatus(WatermarkStatus.IDLE);
            assertThat(plain.getOutput())
                    .as("the harness records a forwarded status")
                    .contains(WatermarkStatus.IDLE);
        }
        try (var h = harness(1000)) {
            send(h, event("a", T0, 1, null));
            h.processWatermarkStatus(WatermarkStatus.IDLE);
            h.setProcessingTime(FLUSH);
            h.processWatermarkStatus(WatermarkStatus.ACTIVE);
            h.processWatermark(new Watermark(T0 + 10_000));
            assertThat(h.getOutput()).noneMatch(o -> o instanceof WatermarkStatus);
            assertThat(h.extractOutputValues()).extracting(p -> p.counter).containsExactly("a");
            assertThat(h.getOutput()).contains(new Watermark(T0 + 10_000));
        }
    }

    @Test
    void theBufferIsEmptiedBeforeACheckpointBarrierAndAtTheEndOfInput() throws Exception {
        try (var h = harness(1000)) {
            send(h, event("a", T0, 1, null));
            h.prepareSnapshotPreBarrier(1);
            assertThat(h.extractOutputValues()).extracting(p -> p.counter).containsExactly("a");

            send(h, event("b", T0, 1, null));
            h.endInput();
            assertThat(h.extractOutputValues()).extracting(p -> p.counter).containsExactly("a", "b");
        }
    }

    @Test
    void aFullBufferAndTheProcessingTimeFlushSendThePartialsOn() throws Exception {
        try (var h = harness(2)) {
            send(h, event("a", T0, 1, null));
            assertThat(h.getOutput()).isEmpty();
            send(h, event("b", T0, 1, null));
            assertThat(h.extractOutputValues())
                    .as("two partials fill the buffer")
                    .extracting(p -> p.counter)
                    .containsExactly("a", "b");

            send(h, event("c", T0, 1, null));
            h.setProcessingTime(FLUSH);
            assertThat(h.extractOutputValues()).extracting(p -> p.counter).containsExactly("a", "b", "c");
        }
    }

    @Test
    void aPartialThatCannotTakeTheNextDeltaGoesOnAsItIs() throws Exception {
        try (var h = harness(1000)) {
            send(h, event("a", T0, Long.MAX_VALUE - 1, null));
            send(h, event("a", T0 + 1, 5, null));
            h.endInput();
            assertThat(h.extractOutputValues()).extracting(p -> p.sum).containsExactly(Long.MAX_VALUE - 1, 5L);
        }
    }

    /** Each partial's users once each, however many times they came: a few (kept in an array) or more (a set). */
    @Test
    void aPartialCarriesEachOfItsUsersOnce() throws Exception {
        try (var h = harness(1000)) {
            for (int n : new int[] {1, 2, 3, 8, 9, 40}) {
                String counter = "c" + n;
                for (int round = 0; round < 3; round++)
                    for (int i = 0; i < n; i++) send(h, event(counter, T0, 1, "u" + i));
                send(h, event(counter, T0, 1, null));
            }
            h.endInput();
            for (PartialSum p : h.extractOutputValues()) {
                int n = Integer.parseInt(p.counter.substring(1));
                String[] want = new String[n];
                for (int i = 0; i < n; i++) want[i] = "u" + i;
                assertThat(p.users).as(p.counter).containsExactlyInAnyOrder(want);
                assertThat(p.events).isEqualTo(3L * n + 1);
            }
            assertThat(h.extractOutputValues()).hasSize(6);
        }
    }

    @Test
    void aPartialWithTooManyUsersGoesOnAtOnce() throws Exception {
        try (var h = harness(1000)) {
            for (int i = 0; i < PreAggregate.MAX_USERS_PER_PARTIAL; i++) send(h, event("a", T0, 1, "u" + i));
            List<PartialSum> out = h.extractOutputValues();
            assertThat(out).singleElement().satisfies(p -> {
                assertThat(p.users).hasSize(PreAggregate.MAX_USERS_PER_PARTIAL);
                assertThat(p.events).isEqualTo(PreAggregate.MAX_USERS_PER_PARTIAL);
            });
        }
    }
}
