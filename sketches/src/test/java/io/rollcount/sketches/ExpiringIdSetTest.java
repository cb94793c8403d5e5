package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link ExpiringIdSet}: the exact expiry of every id it holds, {@code NONE} for any other, ids refused only when
 * both buckets are full of live ones, never an id already held, and most slots filled before the first refusal.
 */
class ExpiringIdSetTest {
    private static final long T = 1_764_000_000_000L;

    @Test
    void holdsAnIdsExactExpiryUntilItIsReplaced() {
        ExpiringIdSet s = new ExpiringIdSet(1024);
        assertThat(s.expiryOf(1, 2)).isEqualTo(ExpiringIdSet.NONE);
        assertThat(s.add(1, 2, T + 60_001, T)).isTrue();
        assertThat(s.expiryOf(1, 2)).isEqualTo(T + 60_001);
        assertThat(s.expiryOf(1, 3)).as("another lo").isEqualTo(ExpiringIdSet.NONE);
        assertThat(s.expiryOf(3, 2)).as("another hi").isEqualTo(ExpiringIdSet.NONE);
        assertThat(s.add(1, 2, T + 5, T)).isTrue();
        assertThat(s.expiryOf(1, 2)).as("replaced, also by an earlier time").isEqualTo(T + 5);
    }

    @Test
    void idsDifferingInOneHalfAreToldApartInTheSameBuckets() {
        ExpiringIdSet s = new ExpiringIdSet(4 * ExpiringIdSet.BUCKET);
        int n = ExpiringIdSet.BUCKET;
        // same upper 32 bits of each half: the same two buckets
        long hi = 0x1234_5678_0000_0001L;
        long lo = 0x0BAD_CAFE_0000_0001L;
        for (int i = 0; i < n; i++) assertThat(s.add(hi + i, lo, T + i, T - 1)).isTrue();
        for (int i = 0; i < n; i++)
            assertThat(s.add(hi, lo + i + 1, T + 100 + i, T - 1)).isTrue();
        for (int i = 0; i < n; i++) assertThat(s.expiryOf(hi + i, lo)).isEqualTo(T + i);
        for (int i = 0; i < n; i++) assertThat(s.expiryOf(hi, lo + i + 1)).isEqualTo(T + 100 + i);
        assertThat(s.add(hi, lo + 999, T + 1_000, T - 1))
                .as("both buckets full of live ids")
                .isFalse();
        assertThat(s.expiryOf(hi, lo + 999)).isEqualTo(ExpiringIdSet.NONE);
        assertThat(s.add(hi + 3, lo, T + 2_000, T - 1))
                .as("an id held is never refused")
                .isTrue();
        assertThat(s.add(hi, lo + 999, T + 1_000, T + 5))
                .as("room once the first ids expired")
                .isTrue();
        assertThat(s.expiryOf(hi, lo + 999)).isEqualTo(T + 1_000);
        assertThat(s.expiryOf(hi + 3, lo)).as("the live one kept").isEqualTo(T + 2_000);
    }

    @Test
    void addIfNotLiveLeavesALiveIdAsItIsAndOtherwiseAddsOrRefusesAsAddDoes() {
        ExpiringIdSet s = new ExpiringIdSet(4 * ExpiringIdSet.BUCKET);
        assertThat(s.addIfNotLive(1, 2, T + 10, T)).isEqualTo(ExpiringIdSet.Added.ADDED);
        assertThat(s.addIfNotLive(1, 2, T + 99, T)).isEqualTo(ExpiringIdSet.Added.LIVE);
        assertThat(s.expiryOf(1, 2)).as("a live id left as it is").isEqualTo(T + 10);
        assertThat(s.addIfNotLive(1, 2, T + 99, T + 10)).isEqualTo(ExpiringIdSet.Added.ADDED);
        assertThat(s.expiryOf(1, 2)).as("expired at T + 10: taken again").isEqualTo(T + 99);

        // the same two buckets for every id below (1 and 3, not the first id's 0): filled with live ids, then a
        // new id is refused
        long hi = 0x1234_5679_0000_0001L;
        long lo = 0x0BAD_CAFF_0000_0001L;
        for (int i = 0; i < 2 * ExpiringIdSet.BUCKET; i++)
            assertThat(s.addIfNotLive(hi + i, lo, T + 1_000, T)).isEqualTo(ExpiringIdSet.Added.ADDED);
        assertThat(s.addIfNotLive(hi, lo + 1, T + 1_000, T)).isEqualTo(ExpiringIdSet.Added.REFUSED);
        assertThat(s.expiryOf(hi, lo + 1)).isEqualTo(ExpiringIdSet.NONE);
    }

    @Test
    void addIfNotLiveAnswersAsExpiryOfThenAddOnRandomIdsAndTimes() {
        ExpiringIdSet one = new ExpiringIdSet(1 << 10);
        ExpiringIdSet two = new ExpiringIdSet(1 << 10);
        SplittableRandom r = new SplittableRandom(11);
        long now = T;
        for (int i = 0; i < 200_000; i++) {
            long hi = r.nextLong(3_000); // ids come back, and most buckets fill
            long lo = Hashing.mix64(hi);
            long at = now + r.nextLong(1, 2_000);
            ExpiringIdSet.Added expected = two.expiryOf(hi, lo) > now
                    ? ExpiringIdSet.Added.LIVE
                    : two.add(hi, lo, at, now) ? ExpiringIdSet.Added.ADDED : ExpiringIdSet.Added.REFUSED;
            assertThat(one.addIfNotLive(hi, lo, at, now))
                    .as("id %d at %d", hi, now)
                    .isEqualTo(expected);
            assertThat(one.expiryOf(hi, lo)).isEqualTo(two.expiryOf(hi, lo));
            now += r.nextLong(2);
        }
    }

    @Test
    void matchesAMapOfRandomIdsAndFillsMostSlotsBeforeTheFirstRefusal() {
        int capacity = 1 << 16;
        ExpiringIdSet s = new ExpiringIdSet(capacity);
        Map<Long, Long> expected = new HashMap<>();
        SplittableRandom r = new SplittableRandom(7);
        int added = 0;
        while (true) {
            long hi = r.nextLong();
            long lo = Hashing.mix64(hi);
            if (!s.add(hi, lo, T + added, T - 1)) break;
            expected.put(hi, T + added);
            added++;
        }
        assertThat(added).as("slots filled before the first refusal").isGreaterThan(capacity * 85 / 100);
        for (Map.Entry<Long, Long> e : expected.entrySet())
            assertThat(s.expiryOf(e.getKey(), Hashing.mix64(e.getKey()))).isEqualTo(e.getValue());
        for (int i = 0; i < 10_000; i++) {
            long hi = r.nextLong();
            if (!expected.containsKey(hi))
                assertThat(s.expiryOf(hi, Hashing.mix64(hi))).isEqualTo(ExpiringIdSet.NONE);
        }
        assertThat(s.bytes()).isEqualTo(24L * capacity + 8L * (capacity / ExpiringIdSet.BUCKET / 64));
    }

    @Test
    void growsWithTheLiveIdsUpToItsBoundAndRefusesNoneBelowIt() {
        int bound = 1 << 14;
        ExpiringIdSet s = new ExpiringIdSet(64, bound);
        Map<Long, Long> expected = new HashMap<>();
        SplittableRandom r = new SplittableRandom(5);
        int added = 0;
        while (true) {
            long hi = r.nextLong();
            boolean held = s.add(hi, Hashing.mix64(hi), T + added, T - 1);
            if (!held) break;
            expected.put(hi, T + added);
            added++;
            if (added == 1_000)
                assertThat(s.capacity()).as("slots at 1,000 live ids").isBetween(2_048, 4_096);
        }
        assertThat(s.capacity()).as("refused only at its bound").isEqualTo(bound);
        assertThat(added).as("slots filled before the first refusal").isGreaterThan(bound * 85 / 100);
        for (Map.Entry<Long, Long> e : expected.entrySet())
            assertThat(s.expiryOf(e.getKey(), Hashing.mix64(e.getKey()))).isEqualTo(e.getValue());
    }

    @Test
    void doesNotGrowForIdsThatExpire() {
        ExpiringIdSet s = new ExpiringIdSet(64, 1 << 16);
        SplittableRandom r = new SplittableRandom(9);
        for (int i = 0; i < 200_000; i++) {
            long hi = r.nextLong();
            assertThat(s.add(hi, Hashing.mix64(hi), T + i + 100, T + i)).isTrue(); // at most 100 live at a time
        }
        assertThat(s.capacity()).isLessThanOrEqualTo(256);
    }

    @Test
    void idsSharingBothBucketsGrowItToItsBoundThenAreRefused() {
        ExpiringIdSet s = new ExpiringIdSet(64, 1 << 10);
        long hi = 0x1234_5679_0000_0001L;
        long lo = 0x0BAD_CAFF_0000_0001L;
        for (int i = 0; i < 2 * ExpiringIdSet.BUCKET; i++)
            assertThat(s.add(hi + i, lo, T + i, T - 1)).isTrue();
        assertThat(s.add(hi + 99, lo, T, T - 1))
                .as("both its buckets full at every size")
                .isFalse();
        assertThat(s.capacity()).isEqualTo(1 << 10);
        for (int i = 0; i < 2 * ExpiringIdSet.BUCKET; i++)
            assertThat(s.expiryOf(hi + i, lo)).isEqualTo(T + i);
    }

    @Test
    void refusesACapacityThatIsNotAPowerOfTwo() {
        assertThatThrownBy(() -> new ExpiringIdSet(1000)).hasMessageContaining("power of two");
        assertThatThrownBy(() -> new ExpiringIdSet(4)).hasMessageContaining("at least " + ExpiringIdSet.BUCKET);
    }
}
