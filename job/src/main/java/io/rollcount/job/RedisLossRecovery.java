package io.rollcount.job;

import io.rollcount.job.ops.ClosedWindowsRebuild;
import io.rollcount.job.ops.LossWatch;
import io.rollcount.job.redis.RedisLossWatch;
import io.rollcount.job.redis.RollupsRebuild;
import java.util.concurrent.CompletableFuture;

/**
 * The operators' recovery from a loss of the store's data ({@link LossWatch}, {@link ClosedWindowsRebuild}) as the
 * Redis package does it ({@link RedisLossWatch}, {@link RollupsRebuild}). The job joins the two here, so that the
 * operators know nothing of Redis and the Redis package nothing of the operators.
 */
final class RedisLossRecovery {
    private RedisLossRecovery() {}

    /** {@code watch} as the operators' loss watch. */
    static LossWatch watch(RedisLossWatch watch) {
        return new Watch(watch);
    }

    /** {@code rebuild} as the operators' rebuild of closed windows: every window in the topic, whatever its start. */
    static ClosedWindowsRebuild rebuild(RollupsRebuild rebuild) {
        return new Rebuild(rebuild);
    }

    private record Watch(RedisLossWatch redis) implements LossWatch {
        @Override
        public void open(String name, boolean restored) {
            redis.open(name, restored);
        }

        @Override
        public boolean check() {
            return redis.check();
        }

        @Override
        public boolean lossSeen() {
            return redis.lossSeen();
        }

        @Override
        public void close() {
            redis.close();
        }
    }

    private record Rebuild(RollupsRebuild rollups) implements ClosedWindowsRebuild {
        @Override
        public long rebuild(CompletableFuture<Void> readOn) {
            return rollups.run(Long.MIN_VALUE, Long.MAX_VALUE, readOn).written();
        }
    }
}
