package io.rollcount.bench;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.parse.EventParser;
import io.rollcount.job.redis.RedisKeys;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The exact count values a sample of counters must have in Redis after a run over {@link BenchEvents}: every
 * window sum of the five resolutions and the total, computed from the generated lines with each
 * {@code event_id} counted once per counter: a redelivery is the line of an earlier event sent again, id
 * included, and is counted only the first time that line is sent. Pure: the caller reads Redis and compares
 * ({@link #mismatches}).
 */
final class ExactSums {
    private ExactSums() {}

    /**
     * {@code n} counters (fewer only if the events have fewer): the 10 hottest ranks, then the counters of events
     * at evenly spaced indices, passes shifted by one index until there are enough (so the sample follows the
     * traffic: hot and tail counters alike), in the order found.
     */
    static Set<String> sampleCounters(BenchEvents events, int n) {
        BenchEvents ev = events.copy();
        Set<String> sample = new LinkedHashSet<>();
        for (int rank = 0; rank < Math.min(10, n); rank++) sample.add(BenchEvents.counterId(rank));
        long step = Math.max(1, ev.count / Math.max(1, n));
        for (long from = 0; from < step && sample.size() < n; from++) {
            for (long i = from; i < ev.count && sample.size() < n; i += step)
                sample.add(BenchEvents.counterId(ev.rank(i)));
        }
        return sample;
    }

    /**
     * The Redis key and exact value of every window of every resolution and of the total of the counters in
     * {@code counters}, under {@code keys}' prefix; a counter that received no event has no key.
     */
    static Map<String, Long> expected(BenchEvents events, Set<String> counters, RedisKeys keys) {
        BenchEvents ev = events.copy();
        EventParser parser = new EventParser(0);
        Map<String, Long> sums = new TreeMap<>();
        Set<Long> firstSentLate = new HashSet<>();
        for (long i = 0; i < ev.count; i++) {
            long source = ev.redeliveryOf(i);
            // A redelivery sends event `source` again: counted only where that event was first sent, which is at its
            // own index, unless that index itself redelivered another event; then here, the first time only.
            if (source != i && (ev.redeliveryOf(source) == source || !firstSentLate.add(source))) continue;
            Event e = parser.parse(ev.line(i), null, null, 0, 0);
            if (!counters.contains(e.counter)) continue;
            sums.merge(keys.total(e.counter), e.delta, Long::sum);
            for (Resolution r : Resolution.all())
                sums.merge(keys.window(e.counter, r, r.windowStart(e.ts)), e.delta, Long::sum);
        }
        return sums;
    }

    /**
     * Each key whose value in {@code actual} (key to the string Redis returned, null where the key is missing) is
     * not the expected one, as {@code key expected=E found=F}; empty when every value is exact.
     */
    static List<String> mismatches(Map<String, Long> expected, Map<String, String> actual) {
        List<String> wrong = new ArrayList<>();
        for (Map.Entry<String, Long> e : expected.entrySet()) {
            String found = actual.get(e.getKey());
            if (found == null || !found.equals(Long.toString(e.getValue())))
                wrong.add(e.getKey() + " expected=" + e.getValue() + " found=" + found);
        }
        return wrong;
    }
}
