/**
 * The sink writers' side of a key prefix's lease ({@link io.rollcount.job.redis.PrefixGuard} holds the keys, the
 * Lua scripts {@code lease-acquire.lua} and {@code lease-release.lua}, and the start check of the job's client):
 * {@link io.rollcount.job.redis.lease.PrefixLease} takes, renews and gives up the lease on the writer's I/O
 * thread; {@link io.rollcount.job.redis.lease.LeaseHolder#NONE} is a writer without one. Not part of the sink's
 * public face.
 */
package io.rollcount.job.redis.lease;
