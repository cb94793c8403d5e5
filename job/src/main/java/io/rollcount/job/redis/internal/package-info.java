/**
 * The machinery of the Redis sink ({@link io.rollcount.job.redis.RedisSink}), not part of its public face: the
 * writer's buffer and batch pipeline, the retrying connection, the one list of Redis's errors, the write guard,
 * the epoch watch, the wait for replicas, the Lua scripts and their encoding, the metrics. Its classes are public
 * only for the sink's packages ({@code redis}, {@code redis.lease}); nothing outside them should use them.
 *
 * <p>Threads: state marked {@link io.rollcount.job.util.IoThreadOnly} belongs to the writer's I/O thread;
 * state shared with the task's mailbox thread is {@code volatile} or concurrent, and says so.
 */
package io.rollcount.job.redis.internal;
