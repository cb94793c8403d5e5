package io.rollcount.bench;

import java.util.ArrayList;
import java.util.List;

/** The figures of one workload over the rounds of a full run, for their medians ({@link BenchReport#rounds}). */
final class WorkloadFigures {
    final List<Double> ours = new ArrayList<>();
    final List<Double> naive = new ArrayList<>();
    final List<Double> sql = new ArrayList<>();
    final List<Double> redis = new ArrayList<>();
    final List<Double> limit = new ArrayList<>();
    final List<Double> cmdsPerEvent = new ArrayList<>();
    final List<Double> redisMicrosPerEvent = new ArrayList<>();
    /** Redis CPU per event of the same job with the sink's plain-writes-only floor mode, same Redis, same round. */
    final List<Double> redisFloorMicrosPerEvent = new ArrayList<>();
    /** Rollcount with its Redis writes built and discarded (zipf only): the job's own cost. */
    final List<Double> oursNoRedis = new ArrayList<>();

    final List<Double> oursNoRedisJobMicros = new ArrayList<>();
    /** The last round's run with Redis discarded, for its CPU by kind of thread. */
    BenchCluster.Run noRedisThreads;

    final List<Double> ratioNaive = new ArrayList<>();
    final List<Double> ratioSql = new ArrayList<>();
    /** The fair references: the same Redis outputs as ours. */
    final List<Double> naiveRedis = new ArrayList<>();

    final List<Double> sqlRedis = new ArrayList<>();
    final List<Double> ratioNaiveRedis = new ArrayList<>();
    final List<Double> ratioSqlRedis = new ArrayList<>();
    final List<Double> jobMicrosPerEvent = new ArrayList<>();
    final List<Double> naiveJobMicros = new ArrayList<>();
    final List<Double> sqlJobMicros = new ArrayList<>();
    final List<Double> naiveRedisJobMicros = new ArrayList<>();
    final List<Double> naiveRedisRedisMicros = new ArrayList<>();
    final List<Double> sqlRedisJobMicros = new ArrayList<>();
    final List<Double> sqlRedisRedisMicros = new ArrayList<>();
    final List<Double> redisBytesPerCounter = new ArrayList<>();
    long distinctCounters = -1;
    long peakHeap;
}
