package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.redis.CounterUpdateWrites;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisWrite;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * Values past the 64-bit range: {@link PreAggregate} splits a partial sum rather than overflow it, and
 * {@link CountPerCounter} dead-letters ({@code overflow}, naming the counter) a partial sum that would take
 * the total or a window past it, counts nothing of it, and goes on counting that counter and every other.
 */
class OverflowTest {
    private static final long START = 1_764_000_000_000L;
    private static final long MAX = Long.MAX_VALUE;
    private static final ObjectMapper JSON = new ObjectMapper();

    private static PartialSum partial(String counter, long bucket, long sum, long events) {
        PartialSum p = new PartialSum(counter, bucket);
        p.sum = sum;
        p.events = events;
        p.negative = sum < 0;
        return p;
    }

    @Test
    void aPartialSumThatWouldOverflowIsOneDeadLetterAndTheCounterGoesOn() throws Exception {
        CountPerCounter op =
                new CountPerCounter(CountPerCounterSettings.of(60_000, 1_000).withSliceMillis(Long.MAX_VALUE));
        try (var h = new KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate>(
                op, p -> p.counter, Types.STRING)) {
            h.open();
            h.processElement(partial("big", START, MAX - 10, 3), START);
            h.processElement(partial("other", START, 5, 5), START);
            h.processElement(partial("big", START, 7, 1), START); // MAX - 3: fits
            h.processElement(partial("big", START + 5_000, 5, 1), START); // past MAX: dead letter
            h.processElement(partial("other", START + 5_000, 2, 2), START);
            h.processElement(partial("big", START + 10_000, 3, 1), START); // exactly MAX: fits
            h.processElement(partial("big", START + 10_000, 1, 1), START); // past MAX: dead letter
            // Below the range: a total of MIN + 2, then -3.
            h.processElement(partial("low", START, Long.MIN_VALUE + 2, 2), START);
            h.processElement(partial("low", START, -3, 1), START);
            // A window overflows while the total does not: -10 in one 5 s bucket, MAX in the next, then +5 there.
            h.processElement(partial("win", START, -10, 1), START);
            h.processElement(partial("win", START + 5_000, MAX, 1), START);
            h.processElement(partial("win", START + 5_000, 5, 1), START);
            h.processWatermark(new Watermark(START + 3_600_000));
            h.setProcessingTime(10_000);

            Map<String, Long> written = new HashMap<>();
            CounterUpdateWrites toRedis = new CounterUpdateWrites(new RedisKeys("rc"));
            for (CounterUpdate u : h.extractOutputValues()) {
                RedisWrite w = toRedis.map(u);
                written.put(w.key, w.value);
            }
            assertThat(written)
                    .containsEntry("rc:{big}:total", MAX)
                    .containsEntry("rc:{big}:1m:" + START / 1000, MAX)
                    .containsEntry("rc:{big}:5s:" + START / 1000, MAX - 3)
                    .containsEntry("rc:{big}:5s:" + (START + 10_000) / 1000, 3L)
                    .doesNotContainKey("rc:{big}:5s:" + (START + 5_000) / 1000)
                    .containsEntry("rc:{other}:total", 7L)
                    .containsEntry("rc:{low}:total", Long.MIN_VALUE + 2)
                    .containsEntry("rc:{win}:total", MAX - 10)
                    .containsEntry("rc:{win}:5s:" + (START + 5_000) / 1000, MAX);

            List<StreamRecord<Event>> dead = List.copyOf(h.getSideOutput(CountPerCounter.OVERFLOW));
            assertThat(dead).hasSize(4);
            assertThat(dead).allSatisfy(r -> {
                Event e = r.getValue();
                assertThat(e.reason).isEqualTo("overflow");
                assertThat(e.source).isEqualTo("count-per-counter");
                assertThat(e.detail).contains("counter " + e.counter).contains("64-bit range");
                JsonNode payload = JSON.readTree(new String(e.payload, StandardCharsets.UTF_8));
                assertThat(payload.get("counter").asText()).isEqualTo(e.counter);
                assertThat(payload.get("delta").asLong()).isEqualTo(e.delta);
                assertThat(payload.get("events").asLong()).isEqualTo(1);
                assertThat(payload.get("ts").asLong()).isEqualTo(e.ts);
            });
            assertThat(dead)
                    .extracting(r -> r.getValue().counter + " " + r.getValue().delta + "@" + r.getValue().ts)
                    .containsExactly(
                            "big 5@" + (START + 5_000),
                            "big 1@" + (START + 10_000),
                            "low -3@" + START,
                            "win 5@" + (START + 5_000));
            assertThat(dead.get(0).getValue().detail).contains("total " + (MAX - 3));
            assertThat(dead.get(3).getValue().detail).contains("5s window");
        }
    }

    @Test
    void preAggregationSplitsAPartialSumInsteadOfOverflowingIt() throws Exception {
        try (var h = new OneInputStreamOperatorTestHarness<Event, PartialSum>(
                new PreAggregate(60_000, 20_000, 200, 3_600_000))) {
            h.open();
            long[] deltas = {MAX / 2, MAX / 2, 5, -7, Long.MIN_VALUE / 2, Long.MIN_VALUE / 2, -1, 3};
            for (long d : deltas) {
                Event e = new Event();
                e.counter = "c";
                e.delta = d;
                e.ts = START + 1;
                h.processElement(e, e.ts);
            }
            h.endInput();
            List<PartialSum> out = h.extractOutputValues();
            // In order, each partial as large as it can be: MAX/2 * 2 + 5 would pass MAX; 5 - 7 + MIN/2 + MIN/2
            // would pass MIN; the rest fits.
            assertThat(out)
                    .extracting(p -> p.sum)
                    .containsExactly(MAX / 2 * 2, Long.MIN_VALUE / 2 - 2, Long.MIN_VALUE / 2 + 2);
            assertThat(out).extracting(p -> p.events).containsExactly(2L, 3L, 3L);
            assertThat(out).allSatisfy(p -> assertThat(p.bucket).isEqualTo(Resolution.S5.windowStart(START)));
        }
    }
}
