package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.CounterUpdate;
import io.rollcount.job.model.PartialSum;
import io.rollcount.job.model.Resolution;
import io.rollcount.job.policy.Policies;
import io.rollcount.job.policy.PoliciesFile;
import io.rollcount.sketches.RedisHyperLogLog;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@link CounterEmission}'s users, through {@link CountPerCounter} in Flink's operator test harness: a user goes
 * to a unique-users key only where it raises a register of the sketch kept for the key (the window's own, or for
 * {@code u:all} the 1d window's, else the 1h window's), and the keys built from what goes out hold exactly the
 * registers of every user (checked against {@link RedisHyperLogLog}, which builds what Redis's {@code PFADD}
 * builds), also across a snapshot and a restore.
 */
class CounterEmissionTest {
    private static final long DAY = Resolution.D1.windowStart(System.currentTimeMillis()) - 86_400_000L;
    private static final long HOUR = 3_600_000L;

    /** Namespace {@code hours} keeps no 1d window: its {@code u:all} follows its 1h sketches. */
    private static final Policies POLICIES = PoliciesFile.parse("test.yaml", """
            - {match: hours, resolutions: [1m, 1h], uniques: [1h, all]}
            - {match: days, resolutions: [1m, 1h, 1d], uniques: [1d, all]}
            - {match: free, resolutions: [1m], uniques: [1h, 1d, all]}
            """, 100, 86_400_000L);

    private static KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> harness(boolean rocksdb)
            throws Exception {
        return CountPerCounterHarnessTest.harness(counting(), rocksdb);
    }

    private static CountPerCounter counting() {
        return new CountPerCounter(
                CountPerCounterSettings.of(60_000, 1_000).withPolicies(POLICIES).withSliceMillis(Long.MAX_VALUE));
    }

    private static void send(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h,
            String counter,
            long ts,
            String... users)
            throws Exception {
        PartialSum p = new PartialSum(counter, Resolution.S5.windowStart(ts));
        p.add(1, ts, HOUR);
        p.users = users;
        h.processElement(p, p.bucket);
    }

    /**
     * The USERS updates emitted since the last call, as {@code key=[users]}, with those held for the next flush
     * (which go out before a checkpoint barrier); the output is cleared.
     */
    private static List<String> users(KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h)
            throws Exception {
        h.prepareSnapshotPreBarrier(0);
        List<String> out = new ArrayList<>();
        for (CounterUpdate u : take(h)) {
            if (u.kind == CounterUpdate.USERS) out.add(key(u) + "=" + List.of(u.users));
        }
        return out;
    }

    private static List<CounterUpdate> take(
            KeyedOneInputStreamOperatorTestHarness<String, PartialSum, CounterUpdate> h) {
        return CountPerCounterHarnessTest.take(h);
    }

    private static String key(CounterUpdate u) {
        return u.counter + "/" + (u.allTime() ? "all" : u.resolution.label + "@" + (u.windowStart - DAY) / HOUR);
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aUserGoesToAKeyOnlyWhereItRaisesARegisterOfTheSketchKeptForIt(boolean rocksdb) throws Exception {
        OperatorSubtaskState snapshot;
        try (var h = harness(rocksdb)) {
            h.open();
            send(h, "b", DAY + 1_000, "u1", "u2");
            assertThat(users(h)).containsExactly("b/1h@0=[u1, u2]", "b/1d@0=[u1, u2]", "b/all=[u1, u2]");
            send(h, "b", DAY + 2_000, "u1", "u3");
            assertThat(users(h))
                    .as("u1 raises no register of the hour's or the day's sketch")
                    .containsExactly("b/1h@0=[u3]", "b/1d@0=[u3]", "b/all=[u3]");
            send(h, "b", DAY + 3_000, "u2", "u1");
            assertThat(users(h)).as("users every sketch has").isEmpty();
            send(h, "b", DAY + HOUR + 1_000, "u1");
            assertThat(users(h))
                    .as("a new hour: its sketch is new; the day's has u1, so u:all has it too")
                    .containsExactly("b/1h@1=[u1]");
            snapshot = h.snapshot(1, 500);
        }
        try (var h = harness(rocksdb)) {
            h.initializeState(snapshot);
            h.open();
            send(h, "b", DAY + HOUR + 2_000, "u1", "u2");
            assertThat(users(h))
                    .as("after a restore the sketches are the restored ones")
                    .containsExactly("b/1h@1=[u2]");
        }
    }

    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void whereNoSketchIsKeptEveryUserGoesOut(boolean rocksdb) throws Exception {
        try (var h = harness(rocksdb)) {
            h.open();
            send(h, "free:x", DAY + 1_000, "u1");
            send(h, "free:x", DAY + 2_000, "u1");
            assertThat(users(h))
                    .as("namespace free keeps no 1h or 1d window, so no sketch: every user goes to every key")
                    .containsExactly(
                            "free:x/1h@0=[u1]",
                            "free:x/1d@0=[u1]",
                            "free:x/all=[u1]",
                            "free:x/1h@0=[u1]",
                            "free:x/1d@0=[u1]",
                            "free:x/all=[u1]");
            send(h, "hours:x", DAY + 1_000, "u1");
            send(h, "hours:x", DAY + HOUR + 1_000, "u1");
            assertThat(users(h))
                    .as("namespace hours: u:all follows the 1h sketches")
                    .containsExactly("hours:x/1h@0=[u1]", "hours:x/all=[u1]", "hours:x/1h@1=[u1]", "hours:x/all=[u1]");
        }
    }

    /**
     * Many users, most of them again and again, over three hours of one day, in namespaces that keep both
     * sketches, only the 1h or only the 1d one, or none: every key built from the USERS that went out has the
     * registers of all its users, though far fewer went out.
     */
    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void theKeysBuiltFromWhatGoesOutHoldEveryRegisterOfAllTheirUsers(boolean rocksdb) throws Exception {
        Random random = new Random(7);
        String[] counters = {"a", "hours:a", "days:a", "free:a"};
        Map<String, RedisHyperLogLog> expected = new HashMap<>();
        Map<String, RedisHyperLogLog> built = new HashMap<>();
        long sent = 0;
        long out = 0;
        OperatorSubtaskState snapshot = null;
        for (int run = 0; run < 2; run++) {
            try (var h = harness(rocksdb)) {
                if (snapshot != null) h.initializeState(snapshot);
                h.open();
                for (int i = 0; i < 1_500; i++) {
                    String counter = counters[random.nextInt(counters.length)];
                    long ts = DAY + (run * 1_500L + i) * (3 * HOUR / 3_000);
                    String[] users = new String[1 + random.nextInt(30)];
                    for (int j = 0; j < users.length; j++) users[j] = "user" + random.nextInt(4_000);
                    send(h, counter, ts, users);
                    sent += 3L * users.length; // three keys each, without the filter
                    for (String k : List.of("1h@" + (ts - DAY) / HOUR, "1d@0", "all")) {
                        RedisHyperLogLog e = expected.computeIfAbsent(counter + "/" + k, x -> new RedisHyperLogLog());
                        for (String u : users) e.add(u);
                    }
                    // the users held since the last flush go out together: by the flush timer, or before a barrier
                    if (i % 37 == 0) h.setProcessingTime(h.getProcessingTime() + 1_000);
                    else if (i % 41 == 0) h.prepareSnapshotPreBarrier(i);
                    out += build(take(h), built);
                }
                h.prepareSnapshotPreBarrier(run + 1);
                out += build(take(h), built);
                snapshot = h.snapshot(run + 1, 500);
            }
        }
        // namespace hours writes no 1d key and days no 1h key
        expected.keySet()
                .removeIf(k ->
                        k.startsWith("hours:") && k.contains("/1d@") || k.startsWith("days:") && k.contains("/1h@"));
        assertThat(built.keySet()).containsExactlyInAnyOrderElementsOf(expected.keySet());
        for (var e : expected.entrySet()) {
            RedisHyperLogLog b = built.get(e.getKey());
            for (int r = 0; r < RedisHyperLogLog.REGISTERS; r++) {
                if (b.register(r) != e.getValue().register(r)) {
                    throw new AssertionError(e.getKey() + ": register " + r + " is " + b.register(r) + ", expected "
                            + e.getValue().register(r));
                }
            }
        }
        assertThat(out)
                .as("users that went out, of %,d without the filter", sent)
                .isLessThan(sent * 3 / 4);
    }

    /** Adds the users of the USERS updates to the keys built; returns how many users went out. */
    private static long build(List<CounterUpdate> updates, Map<String, RedisHyperLogLog> built) {
        long out = 0;
        for (CounterUpdate u : updates) {
            if (u.kind != CounterUpdate.USERS) continue;
            RedisHyperLogLog b = built.computeIfAbsent(key(u), x -> new RedisHyperLogLog());
            for (String user : u.users) b.add(user);
            out += u.users.length;
        }
        return out;
    }

    /**
     * The users of several partial sums of a counter go out as one update per key, with the counter's next flush
     * or before the next checkpoint barrier, whichever comes first; a late partial sum's users go to its own
     * window's key; where no sketch is kept to decide, users go out at once.
     */
    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void theUsersOfACounterGoOutTogetherWithItsFlushOrBeforeABarrier(boolean rocksdb) throws Exception {
        try (var h = harness(rocksdb)) {
            h.open();
            send(h, "b", DAY + HOUR + 1_000, "u1", "u2");
            send(h, "b", DAY + HOUR + 2_000, "u3");
            send(h, "b", DAY + 2_000, "u4"); // the hour before: a late partial sum
            send(h, "free:x", DAY + 1_000, "u1");
            assertThat(users(take(h)))
                    .as("held, but where no sketch decides")
                    .containsExactly("free:x/1h@0=[u1]", "free:x/1d@0=[u1]", "free:x/all=[u1]");
            h.setProcessingTime(1_000); // the flush
            assertThat(users(take(h)))
                    .containsExactly(
                            "b/1h@1=[u1, u2, u3]", "b/1d@0=[u1, u2, u3, u4]", "b/all=[u1, u2, u3, u4]", "b/1h@0=[u4]");
            send(h, "b", DAY + HOUR + 3_000, "u5");
            send(h, "b", DAY + HOUR + 4_000, "u6");
            h.prepareSnapshotPreBarrier(1);
            assertThat(users(take(h)))
                    .as("before the barrier")
                    .containsExactly("b/1h@1=[u5, u6]", "b/1d@0=[u5, u6]", "b/all=[u5, u6]");
            h.setProcessingTime(2_000);
            assertThat(users(take(h))).as("nothing held twice").isEmpty();
        }
    }

    /** A counter that leaves the heap takes its held users out with it. */
    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aCounterLeavingTheHeapTakesItsHeldUsersOut(boolean rocksdb) throws Exception {
        CountPerCounter small = new CountPerCounter(CountPerCounterSettings.of(60_000, 1_000)
                .withPolicies(POLICIES)
                .withSliceMillis(Long.MAX_VALUE)
                .withCacheBytes(1));
        try (var h = CountPerCounterHarnessTest.harness(small, rocksdb)) {
            h.open();
            send(h, "b", DAY + 1_000, "u1");
            send(h, "c", DAY + 1_000, "u2"); // a budget of one byte: b leaves the heap
            assertThat(users(take(h))).contains("b/1h@0=[u1]", "b/1d@0=[u1]", "b/all=[u1]");
        }
    }

    /** The USERS updates among {@code updates}, as {@code key=[users]}. */
    private static List<String> users(List<CounterUpdate> updates) {
        List<String> out = new ArrayList<>();
        for (CounterUpdate u : updates) {
            if (u.kind == CounterUpdate.USERS) out.add(key(u) + "=" + List.of(u.users));
        }
        return out;
    }

    /** Finds a loss at its first check after {@link #lose}. */
    private static final class OneLoss implements LossWatch {
        private static final long serialVersionUID = 1L;
        private boolean lost;

        void lose() {
            lost = true;
        }

        @Override
        public void open(String name, boolean restored) {}

        @Override
        public boolean check() {
            return lossSeen();
        }

        @Override
        public boolean lossSeen() {
            boolean seen = lost;
            lost = false;
            return seen;
        }

        @Override
        public void close() {}
    }

    /**
     * After a loss of Redis's data the users that raised no register went nowhere: the rebuild merges every sketch
     * held into its window's key and into {@code u:all}, which then hold every register of the day's users again.
     */
    @ParameterizedTest(name = "rocksdb={0}")
    @ValueSource(booleans = {false, true})
    void aRebuildAfterALossMergesEverySketchIntoItsWindowsKeyAndIntoUAll(boolean rocksdb) throws Exception {
        OneLoss loss = new OneLoss();
        var h = CountPerCounterHarnessTest.harness(counting().rebuildingAfterLoss(loss, null), rocksdb);
        try (h) {
            h.open();
            send(h, "b", DAY + 1_000, "u1", "u2");
            send(h, "b", DAY + HOUR + 1_000, "u3");
            send(h, "hours:b", DAY + 1_000, "u1");
            h.snapshot(1, 500); // the sketches in keyed state too
            h.setProcessingTime(1_000); // the flush
            take(h);
            loss.lose();
            h.setProcessingTime(2_000); // the next flush finds the loss; the rebuild runs on timers from there
            h.setProcessingTime(60_000);
            Map<String, RedisHyperLogLog> built = new HashMap<>();
            for (CounterUpdate u : take(h)) {
                if (u.kind != CounterUpdate.SKETCH) continue;
                built.computeIfAbsent(key(u), x -> new RedisHyperLogLog())
                        .merge(RedisHyperLogLog.fromRedisBytes(u.sketch));
            }
            assertThat(built.keySet())
                    .containsExactlyInAnyOrder("b/1h@0", "b/1h@1", "b/1d@0", "b/all", "hours:b/1h@0", "hours:b/all");
            assertRegisters(built.get("b/all"), "u1", "u2", "u3");
            assertRegisters(built.get("b/1d@0"), "u1", "u2", "u3");
            assertRegisters(built.get("b/1h@1"), "u3");
            assertRegisters(built.get("hours:b/all"), "u1");
        }
    }

    private static void assertRegisters(RedisHyperLogLog actual, String... users) {
        RedisHyperLogLog expected = new RedisHyperLogLog();
        for (String u : users) expected.add(u);
        for (int r = 0; r < RedisHyperLogLog.REGISTERS; r++) {
            assertThat(actual.register(r)).as("register " + r).isEqualTo(expected.register(r));
        }
    }
}
