package io.rollcount.bench;

import io.rollcount.job.gen.EventGenerator.Workload;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import redis.clients.jedis.Jedis;

/**
 * The zipf workload of {@code bench job} once more under a namespace policy file (by default
 * {@code samples/policies.yaml}), side by side with a run without one over the same events: events/s, job
 * and Redis CPU per event, Redis commands, keys and memory per active counter, and keyed state per active
 * counter at the last checkpoint (both runs checkpoint every second, so that a short run has one). Prints a
 * {@code RESULT job.policies} line per run and a {@code RESULT job.policies.savings} line of their ratios.
 */
final class PolicyBench {
    /** Runs of each variant, interleaved; the figures are their medians. */
    static final int ROUNDS = 3;

    private final BenchRuns bench;
    private final BenchReport report;

    PolicyBench(BenchRuns bench, BenchReport report) {
        this.bench = bench;
        this.report = report;
    }

    /** What one run measured. */
    private record Figures(
            double eps,
            double jobMicros,
            double redisMicros,
            double commandsPerEvent,
            double keysPerCounter,
            double redisBytesPerCounter,
            long stateBytesPerActiveCounter,
            long countingStateBytes,
            long dedupStateBytes,
            long activeAtCheckpoint) {}

    void compare(Path policies) throws Exception {
        BenchEvents ev = bench.events(Workload.zipf, bench.size.events());
        long distinct = BenchRuns.distinctCounters(ev);
        Duration interval = bench.checkpointInterval;
        bench.checkpointInterval = Duration.ofSeconds(1);
        List<Figures> nones = new ArrayList<>();
        List<Figures> withs = new ArrayList<>();
        try {
            // interleaved rounds, medians: the machine's drift hits both alike
            for (int round = 0; round < ROUNDS; round++) {
                bench.policiesFile = null;
                nones.add(run(ev, distinct));
                bench.policiesFile = policies.toString();
                withs.add(run(ev, distinct));
            }
        } finally {
            bench.policiesFile = null;
            bench.checkpointInterval = interval;
        }
        Figures none = median(nones);
        Figures with = median(withs);
        print("default", null, none, ev.count, distinct);
        print("policies", policies, with, ev.count, distinct);
        report.result(
                "job.policies.savings",
                "policies",
                policies.toString(),
                "eps_ratio",
                ratio(with.eps, none.eps),
                "job_cpu_ratio",
                ratio(with.jobMicros, none.jobMicros),
                "redis_cpu_ratio",
                ratio(with.redisMicros, none.redisMicros),
                "redis_cmds_ratio",
                ratio(with.commandsPerEvent, none.commandsPerEvent),
                "redis_keys_ratio",
                ratio(with.keysPerCounter, none.keysPerCounter),
                "redis_bytes_ratio",
                ratio(with.redisBytesPerCounter, none.redisBytesPerCounter),
                "state_ratio",
                with.stateBytesPerActiveCounter <= 0 || none.stateBytesPerActiveCounter <= 0
                        ? "-1"
                        : ratio(with.stateBytesPerActiveCounter, none.stateBytesPerActiveCounter),
                "note",
                "policies/default;below-1-is-a-saving;same-zipf-events");
    }

    private void print(String variant, Path policies, Figures f, long events, long distinct) {
        report.result(
                "job.policies",
                "variant",
                variant,
                "policies",
                policies == null ? "none" : policies.toString(),
                "eps",
                String.format(Locale.ROOT, "%.0f", f.eps),
                "job_cpu_us_per_event",
                String.format(Locale.ROOT, "%.2f", f.jobMicros),
                "redis_cpu_us_per_event",
                String.format(Locale.ROOT, "%.2f", f.redisMicros),
                "redis_cmds_per_event",
                String.format(Locale.ROOT, "%.4f", f.commandsPerEvent),
                "redis_keys_per_counter",
                String.format(Locale.ROOT, "%.2f", f.keysPerCounter),
                "redis_bytes_per_counter",
                String.valueOf(Math.round(f.redisBytesPerCounter)),
                "state_bytes_per_active_counter",
                String.valueOf(f.stateBytesPerActiveCounter),
                "counting_state_bytes",
                String.valueOf(f.countingStateBytes),
                "dedup_state_bytes",
                String.valueOf(f.dedupStateBytes),
                "active_counters_at_checkpoint",
                String.valueOf(f.activeAtCheckpoint),
                "runs",
                String.valueOf(ROUNDS),
                "distinct_counters",
                String.valueOf(distinct),
                "events",
                String.valueOf(events),
                "workload",
                "zipf-checkpoints-every-1s");
    }

    private Figures run(BenchEvents ev, long distinct) throws Exception {
        bench.cleanRedis();
        long memoryBefore = bench.redisUsedMemory();
        long commands = bench.commandsSent();
        List<long[]> progress = new ArrayList<>();
        BenchRuns.Measured m = bench.measured(() -> bench.ours(
                ev,
                RedisWrites.SENT,
                t -> progress.add(new long[] {
                    System.currentTimeMillis(), BenchClock.LAST_INDEX.get(0), BenchClock.LAST_INDEX.get(1)
                })));
        long memory = bench.redisUsedMemory() - memoryBefore;
        double cmds = (bench.commandsSent() - commands) / (double) ev.count;
        long keys = countKeys();
        BenchCluster.Run run = m.run();
        long active = PacedBench.activeCounters(ev, progress, run.lastCheckpointTriggerMillis, 0);
        long counting = run.stateBytesOf("count-per-counter");
        long dedup = run.stateBytesOf("drop-duplicates");
        long perActive = active <= 0 || run.lastCheckpointFullBytes < 0 ? -1 : run.lastCheckpointFullBytes / active;
        bench.cleanRedis();
        return new Figures(
                m.eps(ev.count),
                m.jobMicros(ev.count),
                m.redisMicros(ev.count),
                cmds,
                keys / (double) distinct,
                memory / (double) distinct,
                perActive,
                counting,
                dedup,
                active);
    }

    /** Every key under the bench's prefix (windows, totals, uniques, lists, bookkeeping). */
    private long countKeys() {
        long[] n = {0};
        try (Jedis jedis = new Jedis(bench.redisHost, bench.redisPort)) {
            bench.scanKeys(jedis, 20_000, batch -> n[0] += batch.size());
        }
        return n[0];
    }

    /** Field by field, the median of the runs. */
    private static Figures median(List<Figures> runs) {
        return new Figures(
                med(runs, Figures::eps),
                med(runs, Figures::jobMicros),
                med(runs, Figures::redisMicros),
                med(runs, Figures::commandsPerEvent),
                med(runs, Figures::keysPerCounter),
                med(runs, Figures::redisBytesPerCounter),
                Math.round(med(runs, f -> f.stateBytesPerActiveCounter)),
                Math.round(med(runs, f -> f.countingStateBytes)),
                Math.round(med(runs, f -> f.dedupStateBytes)),
                Math.round(med(runs, f -> f.activeAtCheckpoint)));
    }

    private static double med(List<Figures> runs, java.util.function.ToDoubleFunction<Figures> field) {
        List<Double> values = new ArrayList<>();
        for (Figures f : runs) values.add(field.applyAsDouble(f));
        return BenchReport.median(values);
    }

    private static String ratio(double a, double b) {
        return b == 0 || Double.isNaN(a) || Double.isNaN(b) ? "-1" : String.format(Locale.ROOT, "%.3f", a / b);
    }
}
