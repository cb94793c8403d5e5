package io.rollcount.job.redis.lease;

import redis.clients.jedis.UnifiedJedis;

/**
 * A Redis sink writer's part in the key prefix's lease (see {@link io.rollcount.job.redis.PrefixGuard}):
 * {@link PrefixLease} for the job's sink, {@link #NONE} for a writer without a lease.
 */
public interface LeaseHolder {
    /** No lease: nothing is taken, renewed, checked or given up. */
    LeaseHolder NONE = new LeaseHolder() {
        @Override
        public String token() {
            return null;
        }

        @Override
        public void renewIfDue(long now) {}

        @Override
        public void checkHeld() {}

        @Override
        public void retake(UnifiedJedis client) {}

        @Override
        public void release() {}
    };

    /** The token to keep in the writer's state, or null for none. */
    String token();

    /** Mailbox thread: queues a renewal on the I/O thread when one is due; throws if another job holds the lease. */
    void renewIfDue(long now);

    /** Any thread: throws (restarts suppressed) if another job holds the lease: nothing more may be written. */
    void checkHeld();

    /** I/O thread, after Redis lost the job's data: takes the lease again at once. */
    void retake(UnifiedJedis client);

    /** Mailbox thread, as the writer closes (before its I/O thread stops): gives the lease up. */
    void release() throws InterruptedException;
}
