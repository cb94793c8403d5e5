package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.support.RedisTestSupport;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@link RedisLossWatch} on its own, against the real Redis under a key prefix of the test's own: the epoch key it
 * learned gone or changed is one loss, reported once; a restored operator that finds no writers' mark learns at
 * {@link RedisLossWatch#open} that Redis lost its data while the job was down.
 */
class RedisLossWatchIT {
    @RegisterExtension
    final RedisTestSupport redis = new RedisTestSupport();

    private RedisKeys keys;
    private RedisLossWatch watch;

    @BeforeEach
    void watch() {
        keys = new RedisKeys(redis.prefix);
        watch = new RedisLossWatch(RedisEndpoint.parse(redis.url()), redis.prefix);
    }

    @AfterEach
    void close() {
        watch.close();
    }

    @Test
    void anEpochKeyRecreatedIsOneLoss() throws Exception {
        watch.open("test", false);
        await("the epoch created", () -> redis.jedis.get(keys.epoch()) != null);
        String epoch = redis.jedis.get(keys.epoch());
        assertThat(checksFor(watch, 1_000)).as("no loss while the epoch stays").isZero();
        assertThat(redis.jedis.get(keys.epoch())).isEqualTo(epoch);

        // Redis lost its data and a writer created the epoch again, with a token of its own
        redis.jedis.set(keys.epoch(), "another");
        await("the loss reported", watch::check);
        assertThat(checksFor(watch, 1_000)).as("the same loss reported once").isZero();
        assertThat(redis.jedis.get(keys.epoch()))
                .as("the new epoch left as it is")
                .isEqualTo("another");
    }

    @Test
    void anEpochKeyGoneIsOneLossAndTheWatchCreatesItAgain() throws Exception {
        watch.open("test", false);
        await("the epoch created", () -> redis.jedis.get(keys.epoch()) != null);
        String epoch = redis.jedis.get(keys.epoch());

        redis.jedis.del(keys.epoch());
        await("the loss reported", watch::check);
        assertThat(checksFor(watch, 1_000)).as("the same loss reported once").isZero();
        assertThat(redis.jedis.get(keys.epoch()))
                .as("a new epoch, created by the watch")
                .isNotNull()
                .isNotEqualTo(epoch);
    }

    @Test
    void aRestoredOperatorWithoutTheWritersMarkLearnsOfTheLossAtOpen() {
        watch.open("test", true);
        assertThat(watch.lossSeen()).as("a loss while the job was down").isTrue();
        assertThat(watch.lossSeen()).as("reported once").isFalse();
    }

    @Test
    void aRestoredOperatorWithTheWritersMarkOrAFreshOneSeesNoLoss() throws Exception {
        redis.jedis.set(keys.mark(), "0");
        watch.open("restored", true);
        assertThat(watch.lossSeen()).isFalse();
        assertThat(checksFor(watch, 500)).isZero();

        RedisLossWatch fresh = new RedisLossWatch(RedisEndpoint.parse(redis.url()), redis.prefix);
        try {
            redis.jedis.del(keys.mark());
            fresh.open("fresh", false);
            assertThat(checksFor(fresh, 500))
                    .as("a fresh operator holds nothing Redis could have lost")
                    .isZero();
        } finally {
            fresh.close();
        }
    }

    /** Calls {@link RedisLossWatch#check} every 50 ms for {@code millis}; returns how many calls reported a loss. */
    private static int checksFor(RedisLossWatch watch, long millis) throws InterruptedException {
        int losses = 0;
        for (long end = System.currentTimeMillis() + millis; System.currentTimeMillis() < end; ) {
            if (watch.check()) losses++;
            Thread.sleep(50);
        }
        return losses;
    }

    /** Polls {@code done} every 50 ms for up to 10 s; fails naming {@code what} if it does not become true. */
    private static void await(String what, BooleanSupplier done) throws InterruptedException {
        for (long end = System.currentTimeMillis() + 10_000; System.currentTimeMillis() < end; ) {
            if (done.getAsBoolean()) return;
            Thread.sleep(50);
        }
        throw new AssertionError(what + " within 10 s");
    }
}
