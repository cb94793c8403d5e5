package io.rollcount.sketches;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashMap;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * {@link ExpiringIdFilter}: "no" only for ids never added or expired, "maybe" for every live id however full the
 * table, answering again once the refused ids have expired; most slots fill before the first refusal.
 */
class ExpiringIdFilterTest {
    private static final long T = 1_764_000_000_000L;

    /** A hash whose first bucket is {@code bucket} (of at most 2^32) and fingerprint {@code fingerprint}. */
    private static long hash(int bucket, long fingerprint) {
        return fingerprint << 32 | bucket;
    }

    @Test
    void anIdIsAMaybeFromItsAddUntilItsExpiry() {
        ExpiringIdFilter f = new ExpiringIdFilter(1024);
        long h = Hashing.mix64(42);
        assertThat(f.mayContain(h, T)).as("never added").isFalse();
        assertThat(f.add(h, T + 60_000, T)).isTrue();
        assertThat(f.mayContain(h, T)).isTrue();
        assertThat(f.mayContain(h, T + 59_999)).isTrue();
        assertThat(f.mayContain(h, T + 60_000)).as("at its expiry").isFalse();
        assertThat(f.mayContain(Hashing.mix64(43), T)).as("another id").isFalse();
    }

    @Test
    void anExpiryWithinASecondIsRoundedUpNeverDown() {
        ExpiringIdFilter f = new ExpiringIdFilter(1024);
        long h = Hashing.mix64(7);
        f.add(h, T + 1_001, T);
        assertThat(f.mayContain(h, T + 1_000)).isTrue();
        assertThat(f.mayContain(h, T + 1_999))
                .as("rounded up to the next second")
                .isTrue();
        assertThat(f.mayContain(h, T + 2_000)).isFalse();
        assertThat(ExpiringIdFilter.secondsOf(-5)).isZero();
        assertThat(ExpiringIdFilter.secondsOf(Long.MAX_VALUE)).isEqualTo(ExpiringIdFilter.NEVER);
    }

    @Test
    void addingAgainKeepsTheLaterExpiry() {
        ExpiringIdFilter f = new ExpiringIdFilter(1024);
        long h = Hashing.mix64(1);
        f.add(h, T + 60_000, T);
        f.add(h, T + 10_000, T);
        assertThat(f.mayContain(h, T + 30_000))
                .as("the earlier expiry does not shorten it")
                .isTrue();
        f.add(h, T + 90_000, T + 30_000);
        assertThat(f.mayContain(h, T + 80_000)).isTrue();
        assertThat(f.mayContain(h, T + 90_000)).isFalse();
    }

    @Test
    void anExpiryBeyond32BitsOfSecondsExpiresOnlyAtTheEndOfTime() {
        ExpiringIdFilter f = new ExpiringIdFilter(1024);
        long h = Hashing.mix64(9);
        f.add(h, Long.MAX_VALUE - 1, T);
        assertThat(f.mayContain(h, 8_000_000_000_000L * 1000)).isTrue();
        assertThat(f.mayContain(h, Long.MAX_VALUE)).isFalse();
    }

    @Test
    void idsSharingABucketAndAFingerprintAreEachOthersMaybe() {
        ExpiringIdFilter f = new ExpiringIdFilter(1024); // 64 buckets
        f.add(hash(5, 77), T + 60_000, T);
        assertThat(f.mayContain(hash(5 + 64, 77), T)).as("same bucket bits").isTrue();
        assertThat(f.mayContain(hash(5, 78), T)).isFalse();
    }

    @Test
    void anIdWhoseBucketsAreFullIsRefusedAndEveryIdIsAMaybeUntilItExpires() {
        ExpiringIdFilter f = new ExpiringIdFilter(ExpiringIdFilter.BUCKET); // one bucket: both choices the same
        for (int i = 0; i < ExpiringIdFilter.BUCKET; i++)
            assertThat(f.add(hash(0, 100 + i), T + 60_000, T)).isTrue();
        assertThat(f.answersAt(T)).isTrue();
        assertThat(f.mayContain(hash(0, 5), T)).isFalse();
        assertThat(f.add(hash(0, 999), T + 120_000, T)).as("no room").isFalse();
        assertThat(f.answersAt(T)).isFalse();
        assertThat(f.mayContain(hash(0, 5), T + 119_999)).as("any id").isTrue();
        assertThat(f.mayContain(hash(0, 5), T + 120_000)).isFalse();
        assertThat(f.mayContain(hash(0, 999), T + 120_000))
                .as("the refused id has expired")
                .isFalse();
    }

    @Test
    void anExpiredSlotTakesANewId() {
        ExpiringIdFilter f = new ExpiringIdFilter(ExpiringIdFilter.BUCKET);
        for (int i = 0; i < ExpiringIdFilter.BUCKET; i++) f.add(hash(0, 100 + i), T + 60_000, T);
        assertThat(f.add(hash(0, 999), T + 120_000, T + 60_000)).isTrue();
        assertThat(f.answersAt(T + 60_000)).isTrue();
        assertThat(f.mayContain(hash(0, 999), T + 60_000)).isTrue();
        assertThat(f.mayContain(hash(0, 100), T + 60_000)).isFalse();
    }

    @Test
    void twoChoicesFillMostSlotsBeforeTheFirstRefusal() {
        ExpiringIdFilter f = new ExpiringIdFilter(1 << 16);
        SplittableRandom random = new SplittableRandom(3);
        int added = 0;
        while (f.add(Hashing.mix64(random.nextLong()), T + 60_000, T)) added++;
        assertThat(added).as("ids before the first refusal").isGreaterThan((1 << 16) * 3 / 4);
    }

    /** Random adds and lookups against an exact map: a live id is never a "no", however small the table. */
    @Test
    void neverSaysNoForALiveIdAtAnyLoad() {
        for (int capacity : new int[] {16, 64, 4096}) {
            SplittableRandom random = new SplittableRandom(capacity);
            ExpiringIdFilter f = new ExpiringIdFilter(capacity);
            Map<Long, Long> expiries = new HashMap<>();
            long now = T;
            int noes = 0;
            for (int step = 0; step < 200_000; step++) {
                now += random.nextInt(50);
                long id = random.nextInt(3_000);
                long h = Hashing.mix64(id);
                Long expiry = expiries.get(id);
                boolean live = expiry != null && now < expiry;
                boolean maybe = f.mayContain(h, now);
                if (live)
                    assertThat(maybe)
                            .as("live id %d at %d (capacity %d)", id, now, capacity)
                            .isTrue();
                if (!maybe) noes++;
                if (random.nextInt(3) == 0) {
                    long at = now + random.nextInt(60_000);
                    f.add(h, at, now);
                    expiries.merge(id, at, Math::max);
                }
            }
            if (capacity == 4096)
                assertThat(noes).as("a table that fits answers").isGreaterThan(100_000);
        }
    }

    @Test
    void refusesACapacityThatIsNotAPowerOfTwo() {
        assertThatThrownBy(() -> new ExpiringIdFilter(1000)).hasMessageContaining("power of two");
        assertThatThrownBy(() -> new ExpiringIdFilter(8)).hasMessageContaining("at least 16");
        assertThat(new ExpiringIdFilter(1 << 10).bytes()).isEqualTo(8192);
    }
}
