package io.rollcount.bench;

/** What a Rollcount run of the bench does with its Redis writes ({@link BenchRuns#ours}). */
enum RedisWrites {
    /** Sent to Redis, as {@code rollcount run} sends them. */
    SENT,
    /** Sent as plain writes only (no guard, no mark): the floor of Redis's cost. */
    FLOOR,
    /** Built and discarded: the job's own cost without Redis's. */
    DISCARDED
}
