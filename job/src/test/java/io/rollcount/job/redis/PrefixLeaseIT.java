package io.rollcount.job.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.JobSettings;
import io.rollcount.job.support.RedisTestSupport;
import io.rollcount.job.support.StartChecks;
import java.time.Duration;
import java.util.List;
import org.apache.flink.runtime.execution.SuppressRestartsException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.UnifiedJedis;

/**
 * Issue 18, item 3: one job per key prefix, against the real Redis. The job's sink holds {@code P:_lease}
 * (renewed, given up at close, its token the writers' state); a second writer of another token is refused
 * and writes nothing; a restored writer takes its lease back, or waits for another token's to expire; an
 * empty start over an earlier job's keys is refused unless {@code --fresh}, which deletes the prefix's keys.
 */
class PrefixLeaseIT {
    private String prefix;
    private RedisKeys keys;
    private UnifiedJedis redis;
    private PrefixGuard guard;

    @BeforeEach
    void setUp() {
        prefix = RedisTestSupport.randomPrefix();
        keys = new RedisKeys(prefix);
        redis = RedisEndpoint.parse("redis://127.0.0.1:6379").client();
        guard = new PrefixGuard(prefix);
    }

    @AfterEach
    void tearDown() {
        RedisTestSupport.deleteAll(redis, prefix);
        redis.close();
    }

    private RedisSink sink(String token) {
        return RedisSink.builder()
                .setUrl(RedisTestSupport.SHARED_URL)
                .setKeyPrefix(prefix)
                .setRetryTimeout(Duration.ofSeconds(5))
                .build()
                .holdingLease(token);
    }

    private RedisWrite total(String counter, long value) {
        String k = keys.total(counter);
        return RedisWrite.count(k, keys.versionOf(counter, k), value, value, true, RedisWrite.NO_WINDOW, 0);
    }

    private static void writeAndFlush(RedisSinkWriter w, RedisWrite write) throws Exception {
        w.write(write, null);
        w.flush(false);
    }

    @Test
    void aSecondJobIsRefusedAndWritesNothingWhileTheFirstHoldsThePrefix() throws Exception {
        RedisSinkWriter a = (RedisSinkWriter) sink("job-a").createWriter(new TestWriterContext());
        writeAndFlush(a, total("a", 7));
        assertThat(redis.get(keys.lease())).isEqualTo("job-a");
        assertThat(redis.pttl(keys.lease())).isBetween(1L, PrefixGuard.LEASE_TTL.toMillis());
        assertThat(redis.get(keys.job())).isEqualTo("job-a");
        assertThat(redis.pttl(keys.job())).as("the mark never expires").isEqualTo(-1L);

        RedisSinkWriter b = (RedisSinkWriter) sink("job-b").createWriter(new TestWriterContext());
        assertThatThrownBy(() -> writeAndFlush(b, total("b", 5)))
                .isInstanceOf(SuppressRestartsException.class)
                .rootCause()
                .isInstanceOf(PrefixInUseException.class)
                .hasMessage("key prefix '" + prefix + "' is in use by a running job (lease " + prefix
                        + ":_lease, renewed every 5 s, gone 30 s"
                        + " after that job stops): stop it, or give this job its own --redis.key-prefix");
        b.close();
        assertThat(redis.exists(keys.total("b")))
                .as("the refused writer wrote nothing")
                .isFalse();
        assertThat(redis.get(keys.lease())).as("and left the lease alone").isEqualTo("job-a");
        assertThat(guard.refusal(redis, false, true, "job-c", "--resume PATH"))
                .isEqualTo("key prefix '" + prefix + "' is in use by a running job (lease " + prefix
                        + ":_lease, renewed every 5 s, gone 30 s"
                        + " after that job stops): stop it, or give this job its own --redis.key-prefix");

        a.close();
        assertThat(redis.exists(keys.lease())).as("given up at close").isFalse();
        assertThat(redis.get(keys.total("a"))).isEqualTo("7");
    }

    @Test
    void aWriterRefusingEarlierJobsRefusesAnotherJobsMarkButNotItsOwnOrARestore() throws Exception {
        RedisSinkWriter first = (RedisSinkWriter) sink("job-1").createWriter(new TestWriterContext());
        writeAndFlush(first, total("a", 7));
        first.close();
        assertThat(redis.get(keys.job())).isEqualTo("job-1");

        RedisSinkWriter again =
                (RedisSinkWriter) sink("job-1").refusingEarlierJob().createWriter(new TestWriterContext());
        writeAndFlush(again, total("a", 8));
        again.close();
        assertThat(redis.get(keys.total("a")))
                .as("the same job graph, restarted")
                .isEqualTo("8");

        RedisSinkWriter other =
                (RedisSinkWriter) sink("job-2").refusingEarlierJob().createWriter(new TestWriterContext());
        assertThatThrownBy(() -> writeAndFlush(other, total("a", 1)))
                .isInstanceOf(SuppressRestartsException.class)
                .rootCause()
                .isInstanceOf(PrefixInUseException.class)
                .hasMessage(guard.startedOverEarlierJob());
        other.close();
        assertThat(redis.get(keys.total("a")))
                .as("the refused writer wrote nothing")
                .isEqualTo("8");

        RedisSinkWriter restored = (RedisSinkWriter) sink("job-3")
                .refusingEarlierJob()
                .restoreWriter(
                        new TestWriterContext(), List.of(new RedisWriterState("job-1", Long.MAX_VALUE, List.of())));
        writeAndFlush(restored, total("a", 9));
        restored.close();
        assertThat(redis.get(keys.total("a"))).as("a restore").isEqualTo("9");
    }

    @Test
    void theLeaseIsRenewedEveryFiveSeconds() throws Exception {
        TestWriterContext ctx = new TestWriterContext();
        RedisSinkWriter a = (RedisSinkWriter) sink("job-a").createWriter(ctx);
        writeAndFlush(a, total("a", 1));
        redis.pexpire(keys.lease(), 2_000);
        ctx.advance(5_000);
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (redis.pttl(keys.lease()) <= 2_000 && System.nanoTime() < deadline) Thread.sleep(20);
        assertThat(redis.pttl(keys.lease())).isGreaterThan(20_000L);
        assertThat(a.snapshotState(1)).extracting(s -> s.leaseToken).containsExactly("job-a");
        a.close();
    }

    @Test
    void aRestoredWriterTakesItsLeaseBackWithTheTokenOfItsState() throws Exception {
        redis.set(keys.lease(), "job-a"); // the run it continues died holding it
        RedisSinkWriter r = (RedisSinkWriter) sink("new-graph-token")
                .restoreWriter(
                        new TestWriterContext(), List.of(new RedisWriterState("job-a", Long.MAX_VALUE, List.of())));
        long t0 = System.nanoTime();
        writeAndFlush(r, total("a", 3));
        assertThat(System.nanoTime() - t0).as("no wait").isLessThan(5_000_000_000L);
        assertThat(redis.get(keys.total("a"))).isEqualTo("3");
        assertThat(redis.get(keys.lease())).isEqualTo("job-a");
        assertThat(r.snapshotState(2)).extracting(s -> s.leaseToken).containsExactly("job-a");
        r.close();
    }

    @Test
    void aRestoredWriterWithoutTokenWaitsForAnotherTokensLeaseToExpire() throws Exception {
        redis.psetex(keys.lease(), 1_500, "old-run");
        RedisSinkWriter r = (RedisSinkWriter) sink("job-n").restoreWriter(new TestWriterContext(), List.of());
        writeAndFlush(r, total("a", 4));
        assertThat(redis.get(keys.total("a"))).isEqualTo("4");
        assertThat(redis.get(keys.lease())).isEqualTo("job-n");
        r.close();
    }

    @Test
    void anEmptyStartOverAnEarlierJobsKeysIsRefusedUnlessFresh() {
        JobSettings o = JobSettings.builder()
                .set("--redis", RedisTestSupport.SHARED_URL)
                .set("--redis.key-prefix", prefix)
                .set("--input", "-")
                .build();
        assertThat(StartChecks.prefixRefusal(o, false, "flink run -s PATH"))
                .as("a prefix never used")
                .isNull();

        redis.set(keys.total("a"), "1000");
        redis.set(keys.watermark(), "123");
        redis.set(keys.trending("_all"), "x");
        redis.set(prefix + "x:{a}:total", "5"); // another prefix that begins the same
        String refusal = StartChecks.prefixRefusal(o, false, "flink run -s PATH");
        assertThat(refusal)
                .isEqualTo(
                        "key prefix '" + prefix + "' holds the counts of an earlier job (" + prefix
                                + ":meta:watermark exists)"
                                + " and this job would start empty: its smaller totals would never replace the larger ones. Resume that job (flink run -s PATH),"
                                + " choose a new --redis.key-prefix, or give --fresh to delete the prefix's keys and count from zero");
        assertThat(StartChecks.prefixRefusal(o, true, "flink run -s PATH"))
                .as("restoring")
                .isNull();
        assertThat(redis.get(keys.total("a"))).isEqualTo("1000");

        JobSettings fresh = o.toBuilder().set("--fresh", true).build();
        assertThat(StartChecks.prefixRefusal(fresh, false, "flink run -s PATH")).isNull();
        assertThat(RedisTestSupport.keysOf(redis, prefix))
                .as("--fresh deleted the prefix's keys")
                .isEmpty();
        assertThat(redis.get(prefix + "x:{a}:total"))
                .as("and no other prefix's")
                .isEqualTo("5");
        redis.del(prefix + "x:{a}:total");
    }
}
