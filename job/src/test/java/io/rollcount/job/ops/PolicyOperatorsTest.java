package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.policy.PoliciesFile;
import io.rollcount.job.redis.CounterUpdateWrites;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisWrite;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.api.Test;

/**
 * The operators under namespace policies, in Flink's test harnesses: no unique-users sketch in keyed state
 * where a namespace's uniques (of a kept resolution) are off, no window slot of a resolution it does not
 * keep, and (savepoint restored with other policies) open windows keep counting while what the new
 * policies turn off is no longer written; no deduplication where dedup is off, and each namespace's horizon.
 */
class PolicyOperatorsTest {
    private static final long T0 = 1_764_000_000_000L; // a whole hour
    private static final long DAY = 86_400_000L;

    private static Policies policies(String yaml) {
        return PoliciesFile.parse("test.yaml", yaml, 100, DAY);
    }

    /** The Redis commands of the counting operator's updates, as the job makes them beside the sink. */
    private static final CounterUpdateWrites TO_REDIS = new CounterUpdateWrites(new RedisKeys("rc"));

    private static final String POLICIES = """
            - {match: api, resolutions: [5s, 1m], uniques: false}
            - {match: post, resolutions: [1m, 1h], uniques: [1d]}
            """;

    private static KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> counting(Policies p)
            throws Exception {
        return new KeyedOneInputStreamOperatorTestHarness<>(
                new CountPerCounter(CountPerCounterSettings.of(60_000, 1_000)
                        .withPolicies(p)
                        .withSliceMillis(Long.MAX_VALUE)),
                x -> x.counter,
                Types.STRING);
    }

    private static PartialSum partial(String counter, long ts, String... users) {
        PartialSum p = new PartialSum(counter, Resolution.S5.windowStart(ts));
        p.add(1, ts, 3_600_000);
        p.users = users;
        return p;
    }

    private static Set<String> keysWithState(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h, String state) {
        KeyedStateBackend<String> backend = h.getOperator().getKeyedStateBackend();
        try (var keys = backend.getKeys(state, VoidNamespace.INSTANCE)) {
            return keys.collect(Collectors.toSet());
        }
    }

    private static List<String> keysWritten(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h) {
        List<String> keys = new ArrayList<>();
        for (Object o : h.getOutput())
            if (o instanceof StreamRecord<?> r && r.getValue() instanceof CounterUpdate u)
                keys.add(TO_REDIS.map(u).key);
        return keys;
    }

    @Test
    void noSketchInStateWhereUniquesAreOffAndNoSlotOfAResolutionNotKept() throws Exception {
        try (var h = counting(policies(POLICIES))) {
            h.open();
            for (String c : new String[] {"api:1", "post:1", "user:1"})
                h.processElement(partial(c, T0 + 1_000, "u1", "u2"), T0);
            h.setProcessingTime(10_000); // the flush
            h.snapshot(1, 10_000); // the heap cache into keyed state
            // user:1 (no rule): the 1h and 1d sketches; api:1 uniques off: none; post:1: u:1d written, but no 1d
            // window kept, so no sketch either.
            assertThat(keysWithState(h, "uniques")).containsExactly("user:1");
            assertThat(keysWithState(h, "counter")).containsExactlyInAnyOrder("api:1", "post:1", "user:1");

            List<String> written = keysWritten(h);
            long m = T0 / 1000;
            assertThat(written)
                    .filteredOn(k -> k.startsWith("rc:{api:1}:") && !k.contains("_v:"))
                    .containsExactlyInAnyOrder("rc:{api:1}:total", "rc:{api:1}:5s:" + m, "rc:{api:1}:1m:" + m);
            assertThat(written)
                    .filteredOn(k -> k.startsWith("rc:{post:1}:") && !k.contains("_v:"))
                    .containsExactlyInAnyOrder(
                            "rc:{post:1}:total",
                            "rc:{post:1}:1m:" + m,
                            "rc:{post:1}:1h:" + m,
                            "rc:{post:1}:u:1d:" + (T0 / DAY * DAY) / 1000);
            assertThat(written)
                    .filteredOn(k -> k.startsWith("rc:{user:1}:") && !k.contains("_v:"))
                    .hasSize(6 + 3);
        }
    }

    @Test
    void aRestoreWithOtherPoliciesKeepsCountingOpenWindowsAndNoLongerWritesWhatTheyTurnOff() throws Exception {
        OperatorSubtaskState snapshot;
        long m = T0 / 1000;
        try (var h = counting(Policies.none(100, DAY))) {
            h.open();
            h.processElement(partial("post:1", T0 + 1_000, "u1"), T0);
            h.setProcessingTime(10_000);
            snapshot = h.snapshot(1, 10_000);
        }
        // post now keeps 1m and 1h and uniques of 1d only.
        try (var h = counting(policies(POLICIES))) {
            h.initializeState(snapshot);
            h.open();
            h.processElement(partial("post:1", T0 + 2_000, "u2"), T0);
            h.setProcessingTime(20_000);
            List<String> written = keysWritten(h);
            List<String> sums = new ArrayList<>();
            for (Object o : h.getOutput()) {
                if (o instanceof StreamRecord<?> r
                        && r.getValue() instanceof CounterUpdate u
                        && u.kind == CounterUpdate.COUNT) {
                    RedisWrite w = TO_REDIS.map(u);
                    sums.add(w.key + "=" + w.value);
                }
            }
            // the open 1m and 1h windows go on from their restored sums; 5s, 5m, 1d, u:1h, u:all no longer written
            assertThat(sums)
                    .contains("rc:{post:1}:total=2", "rc:{post:1}:1m:" + m + "=2", "rc:{post:1}:1h:" + m + "=2");
            assertThat(written)
                    .noneMatch(k -> k.contains(":5s:")
                            || k.contains(":5m:")
                            || k.contains("}:1d:")
                            || k.contains(":u:1h:")
                            || k.endsWith(":u:all"));
            assertThat(written).contains("rc:{post:1}:u:1d:" + (T0 / DAY * DAY) / 1000);
            // The restored windows of resolutions turned off are dropped when their lateness ends, their sketches too.
            h.processWatermark(new Watermark(T0 + 2 * DAY));
            h.snapshot(2, 30_000);
            assertThat(keysWithState(h, "uniques")).isEmpty();
        }
    }

    private static Event event(String counter, String id, long ts) {
        return DropDuplicatesTest.event(counter, id, ts);
    }

    @Test
    void withDedupOffEventsWithAnIdGoStraightOnAndEachNamespaceHasItsHorizon() throws Exception {
        Policies p = policies("""
                - {match: api, dedup: false}
                - {match: ad, dedup: 7d}
                - {match: post, dedup: 10s}
                """);
        try (var h = new KeyedOneInputStreamOperatorTestHarness<>(
                DropDuplicates.operator(new DropDuplicates(p)), DropDuplicates::keyOf, Types.STRING)) {
            h.open();
            // dedup off, and no event_id: every delivery goes on, nothing is kept
            for (int i = 0; i < 2; i++) {
                h.processElement(event("api:1", "e1", T0), T0);
                h.processElement(event("ad:1", null, T0), T0);
            }
            assertThat(h.extractOutputValues())
                    .extracting(e -> e.counter)
                    .containsExactly("api:1", "ad:1", "api:1", "ad:1");
            assertThat(h.numKeyedStateEntries()).isZero();
            h.getOutput().clear();
            for (String c : new String[] {"ad:1", "post:1", "user:1"}) h.processElement(event(c, "e1", T0), T0);
            h.processWatermark(new Watermark(T0 + 60_000)); // past post's 10 s horizon, within the others'
            for (String c : new String[] {"ad:1", "post:1", "user:1"}) h.processElement(event(c, "e1", T0), T0);
            h.processWatermark(new Watermark(T0 + 2 * DAY)); // past user's 24 h default, within ad's 7 d
            for (String c : new String[] {"ad:1", "post:1", "user:1"})
                h.processElement(event(c, "e1", T0 + 2 * DAY), T0 + 2 * DAY);
            assertThat(h.extractOutputValues())
                    .extracting(e -> e.counter)
                    .containsExactly("ad:1", "post:1", "user:1", "post:1", "post:1", "user:1");
        }
    }
}
