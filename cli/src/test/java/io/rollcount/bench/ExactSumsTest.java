package io.rollcount.bench;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.parse.EventParser;
import io.rollcount.job.redis.RedisKeys;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/** The exact sums {@code bench peers} checks each variant's Redis values against, and the events they come from. */
class ExactSumsTest {
    private static final RedisKeys KEYS = new RedisKeys("t");

    private static BenchEvents events() {
        return new BenchEvents(7, Workload.zipf, 500, 100, 20_000, 2, 1_700_000_000_000L, 2_000, 2_000)
                .withEventIdOnEvery();
    }

    @Test
    void everyEventCarriesAnIdAndSomeAreRedeliveriesOfTheSameLine() {
        BenchEvents ev = events();
        EventParser parser = new EventParser(0);
        Set<String> seen = new HashSet<>();
        int again = 0;
        for (long i = 0; i < ev.count; i++) {
            Event e = parser.parse(ev.line(i), null, null, 0, 0);
            assertThat(e.eventId).as("event %d", i).isNotNull();
            if (!seen.add(e.counter + " " + e.eventId)) again++;
        }
        // 3% redeliveries, each the line of an earlier event
        assertThat(again).isBetween(400, 800);
    }

    @Test
    void idsOnEveryEventLeaveEveryOtherDrawAsItWas() {
        BenchEvents half = new BenchEvents(7, Workload.zipf, 500, 100, 2_000, 2, 1_700_000_000_000L, 2_000, 2_000);
        BenchEvents all = half.withEventIdOnEvery();
        EventParser parser = new EventParser(0);
        int withoutId = 0;
        for (long i = 0; i < half.count; i++) {
            Event a = parser.parse(all.line(i), null, null, 0, 0);
            Event h = parser.parse(half.line(i), null, null, 0, 0);
            if (h.eventId == null) withoutId++;
            // a redelivery may pick another earlier event: one with an id among more of them
            if (half.redeliveryOf(i) == i && all.redeliveryOf(i) == i) {
                assertThat(all.rank(i)).isEqualTo(half.rank(i));
                assertThat(a.counter).isEqualTo(h.counter);
                assertThat(a.delta).isEqualTo(h.delta);
                assertThat(a.ts).isEqualTo(h.ts);
            }
        }
        assertThat(withoutId).as("about half of the default events carry no id").isBetween(800, 1_200);
    }

    @Test
    void theSumsCountEachIdOncePerCounter() {
        BenchEvents ev = events();
        EventParser parser = new EventParser(0);
        Set<String> counters = new HashSet<>();
        Map<String, Long> byId = new TreeMap<>();
        Set<String> ids = new HashSet<>();
        for (long i = 0; i < ev.count; i++) {
            Event e = parser.parse(ev.line(i), null, null, 0, 0);
            counters.add(e.counter);
            if (!ids.add(e.counter + " " + e.eventId)) continue;
            byId.merge(KEYS.total(e.counter), e.delta, Long::sum);
            for (Resolution r : Resolution.all())
                byId.merge(KEYS.window(e.counter, r, r.windowStart(e.ts)), e.delta, Long::sum);
        }
        assertThat(ExactSums.expected(ev, counters, KEYS)).isEqualTo(byId);
    }

    @Test
    void onlyTheSampledCountersHaveExpectedKeys() {
        BenchEvents ev = events();
        Set<String> sample = ExactSums.sampleCounters(ev, 40);
        assertThat(sample).hasSize(40).contains(BenchEvents.counterId(0));
        Map<String, Long> expected = ExactSums.expected(ev, sample, KEYS);
        assertThat(expected.keySet())
                .allSatisfy(key ->
                        assertThat(sample).anySatisfy(c -> assertThat(key).startsWith(KEYS.counterBase(c))));
        assertThat(expected).containsKey(KEYS.total(BenchEvents.counterId(0)));
    }

    @Test
    void aMissingOrDifferentValueIsAMismatch() {
        Map<String, Long> expected = new TreeMap<>(Map.of("a", 3L, "b", 5L, "c", 7L));
        Map<String, String> actual = new HashMap<>();
        actual.put("a", "3");
        actual.put("b", "6");
        assertThat(ExactSums.mismatches(expected, actual))
                .containsExactly("b expected=5 found=6", "c expected=7 found=null");
        actual.put("b", "5");
        actual.put("c", "7");
        assertThat(ExactSums.mismatches(expected, actual)).isEmpty();
    }
}
