package io.rollcount.bench;

import io.rollcount.job.Launcher;
import io.rollcount.job.gen.EventGenerator.Workload;
import io.rollcount.job.metrics.JobAccumulators;
import io.rollcount.job.parse.EventParser;
import java.io.PrintStream;
import java.nio.file.Files;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;

/**
 * {@code rollcount bench job}: Rollcount against a textbook DataStream job, Flink SQL, the seeds' Redis
 * design and the per-event limit, side by side in one run on the same generated events. Prints RESULT
 * lines. What runs is its {@link BenchPlan}: every variant ({@link BenchPlan.Full}), only ours for profiling
 * ({@link BenchPlan.OnlyOurs}) or only the Kafka mode ({@link BenchPlan.OnlyKafka}).
 */
public final class JobBench {

    /**
     * Sizes of a run. {@code warmupEvents}: zipf events each variant runs once before anything is measured
     * (the JIT compiles for tens of seconds). {@code events}: per workload and round, measured.
     */
    public record Size(
            String name,
            long events,
            int counters,
            int users,
            int rounds,
            int pacedSeconds,
            long kafkaEvents,
            int limitLines,
            long redisEvents,
            double eventTimeRate,
            long warmupEvents) {
        public static final Size FULL =
                new Size("full", 3_000_000, 1_000_000, 100_000, 3, 60, 3_000_000, 1_000_000, 600_000, 50_000, 500_000);
        /** Small and short: the figures of a quick run are not a steady state, and its first line says so. */
        public static final Size QUICK =
                new Size("quick", 30_000, 1_000_000, 100_000, 1, 10, 30_000, 100_000, 30_000, 50_000, 10_000);
        /** For the automated test: seconds, not figures. */
        public static final Size TINY =
                new Size("tiny", 4_000, 10_000, 1_000, 1, 3, 4_000, 10_000, 4_000, 5_000, 2_000);
    }

    static final int PARALLELISM = 2;

    private final BenchPlan plan;
    private final Size size;
    private final PrintStream out;
    private final BenchRuns runs;
    private final BenchReport report;

    public JobBench(BenchPlan plan, PrintStream out) {
        this.plan = plan;
        this.size = plan.size();
        this.out = out;
        this.runs = new BenchRuns(plan.size(), plan.redisUrl(), plan.work(), out);
        this.report = new BenchReport(out);
    }

    /** Runs the plan; its RESULT lines and the lines for people go to the bench's output. */
    public void run() throws Exception {
        long started = System.nanoTime();
        Files.createDirectories(plan.work());
        // The start checks of every start of the job; the bench clears its own prefix between runs.
        Launcher.of(runs.options(), Launcher.Place.HERE, "-").startingOver().checkStart(null, null);
        header();
        BenchPlan.Mode mode = plan.mode();
        runs.withCluster(() -> {
            if (mode instanceof BenchPlan.OnlyKafka) new KafkaBench(runs, report, plan.kafkaProperties()).run();
            else if (mode instanceof BenchPlan.OnlyOurs only) onlyOurs(only);
            else full((BenchPlan.Full) mode);
        });
        if (mode instanceof BenchPlan.Full)
            out.printf("bench job: done in %.0f s%n", (System.nanoTime() - started) / 1e9);
    }

    private void header() {
        out.printf(
                "bench job (%s): %,d events per workload, %,d counters, %,d users, parallelism %d, RocksDB, checkpoints every 10 s, %d round(s), warm-up %,d events per variant%n",
                size.name, size.events, size.counters, size.users, PARALLELISM, size.rounds, size.warmupEvents);
        if (size != Size.FULL) {
            out.println("  (" + size.name
                    + " run: too few events for a steady state; the CPU figures still include JIT compilation. The full run measures "
                    + String.format(Locale.ROOT, "%,d", Size.FULL.events) + " events per workload.)");
        }
        out.println(
                "  Rollcount: RollcountJob.build with dedup, five resolutions, uniques, trending and window top-K, real Redis at "
                        + runs.redisUrl + " prefix " + runs.prefix);
    }

    /** Only Rollcount on one workload, as the plan says: twice, or alternated with its floor after a warm-up. */
    private void onlyOurs(BenchPlan.OnlyOurs only) throws Exception {
        Workload w = only.workload();
        if (only.withFloor()) {
            // a comparison: JIT and RocksDB warm before the first measured run, as in the full run
            runs.ours(runs.events(w, size.warmupEvents));
            runs.cleanRedis();
            out.printf("  (after an unmeasured warm-up of %,d events)%n", size.warmupEvents);
        }
        for (RedisWrites writes : only.runs()) {
            BenchEvents ev = runs.events(w, size.events);
            long commands = runs.commandsSent();
            BenchRuns.Measured m = runs.measured(() -> runs.ours(ev, writes));
            BenchCluster.Run o = m.run();
            boolean floor = writes == RedisWrites.FLOOR;
            out.printf(
                    "  %s %s %,.0f ev/s, %.4f Redis commands/event, counted %,d, job CPU %.1f us/event, Redis CPU %.2f us/event%n",
                    floor ? "floor" : "ours",
                    w,
                    ev.count / o.seconds,
                    (runs.commandsSent() - commands) / (double) ev.count,
                    o.acc(JobAccumulators.COUNTED),
                    o.jobCpuSeconds * 1e6 / ev.count,
                    m.redisMicros(ev.count));
            report.threads("job." + w + (floor ? ".floor" : "") + ".threads", o, ev.count);
            runs.cleanRedis();
        }
    }

    /**
     * Every variant on every workload for the plan's rounds, their RESULT lines, then the policies run, the paced
     * run and the Kafka mode as the plan says.
     */
    private void full(BenchPlan.Full full) throws Exception {
        // warm-up: JIT, RocksDB and the planner of every kind of job, not measured
        BenchEvents warm = runs.events(Workload.zipf, size.warmupEvents);
        runs.ours(warm);
        runs.cleanRedis();
        runs.naiveRedis(warm);
        runs.cleanRedis();
        runs.sqlRedis(warm);
        runs.cleanRedis();
        Map<Workload, WorkloadFigures> figures = new EnumMap<>(Workload.class);
        for (Workload w : Workload.values()) figures.put(w, new WorkloadFigures());
        BenchReport.Reads reads = new BenchReport.Reads();
        for (int round = 0; round < size.rounds; round++) {
            for (Workload w : Workload.values()) workload(round, w, figures.get(w), reads);
        }
        report.rounds(figures, size.events, reads);
        if (full.comparePolicies() != null) new PolicyBench(runs, report).compare(full.comparePolicies());
        new PacedBench(runs, report).run(BenchReport.median(figures.get(Workload.zipf).ours) / 2);
        if (full.kafka()) new KafkaBench(runs, report, plan.kafkaProperties()).run();
    }

    /** One workload in one round: ours, its floor, (zipf) ours without Redis, and every reference. */
    private void workload(int round, Workload w, WorkloadFigures f, BenchReport.Reads reads) throws Exception {
        BenchEvents ev = runs.events(w, size.events);
        if (f.distinctCounters < 0) f.distinctCounters = BenchRuns.distinctCounters(ev);
        // the floor before ours in odd rounds: neither always runs on the Redis the other has just emptied
        boolean floorFirst = round % 2 == 1;
        if (floorFirst) f.redisFloorMicrosPerEvent.add(runs.floorRedisMicros(ev));
        long commands = runs.commandsSent();
        long memoryBefore = runs.redisUsedMemory();
        BenchRuns.Measured om = oursWithReader(ev, reads);
        // used_memory after minus before: every key of the run under the bench's prefix (windows, totals,
        // HyperLogLogs, top-K and trending sorted sets, bookkeeping), with Redis's per-key overhead
        // (dict entries, expiry entries), and whatever other clients of a shared server changed meanwhile
        long memoryDelta = runs.redisUsedMemory() - memoryBefore;
        BenchCluster.Run o = om.run();
        f.cmdsPerEvent.add((runs.commandsSent() - commands) / (double) ev.count);
        f.redisMicrosPerEvent.add(om.redisMicros(ev.count));
        f.jobMicrosPerEvent.add(om.jobMicros(ev.count));
        f.redisBytesPerCounter.add(memoryDelta / (double) f.distinctCounters);
        f.peakHeap = Math.max(f.peakHeap, runs.heapPeak());
        f.ours.add(ev.count / o.seconds);
        runs.cleanRedis();
        if (!floorFirst) f.redisFloorMicrosPerEvent.add(runs.floorRedisMicros(ev));
        if (w == Workload.zipf) withoutRedis(ev, f);
        references(ev, f);
        printRound(round, w, o, f);
        if (w == Workload.zipf) {
            BenchCluster.Run g = runs.sourceOnly(ev);
            reads.sourceOnly().add(ev.count / g.seconds);
        }
    }

    /** Ours on {@code ev}, measured; on zipf, with the dashboard reader ({@link ReadLatencyProbe}) meanwhile. */
    private BenchRuns.Measured oursWithReader(BenchEvents ev, BenchReport.Reads reads) throws Exception {
        try (ReadLatencyProbe reader = ev.workload == Workload.zipf ? runs.readerFor(ev) : null) {
            BenchRuns.Measured om = runs.measured(() -> runs.ours(ev));
            if (reader != null) {
                // the span of the run in wall-clock time: the reader's calls outside it met no writes
                long wallMinusNanos = System.currentTimeMillis() - System.nanoTime() / 1_000_000;
                long from = BenchClock.FIRST_EVENT_NANOS.get() / 1_000_000 + wallMinusNanos;
                long to = BenchClock.LAST_END_NANOS.get() / 1_000_000 + wallMinusNanos;
                ReadLatencyProbe.Reads r = reader.stop(from, to);
                for (double ms : r.latencies()) reads.latencies().add(ms);
                for (double ms : r.stalls()) reads.stalls().add(ms);
            }
            return om;
        }
    }

    /** Ours with its Redis writes built and discarded: the job's own cost. */
    private void withoutRedis(BenchEvents ev, WorkloadFigures f) throws Exception {
        BenchCluster.Run d = runs.ours(ev, RedisWrites.DISCARDED);
        f.oursNoRedis.add(ev.count / d.seconds);
        f.oursNoRedisJobMicros.add(d.jobCpuSeconds * 1e6 / ev.count);
        f.noRedisThreads = d;
    }

    /** The references on {@code ev}: textbook and SQL (discarding, then to Redis), the seeds' design, the limit. */
    private void references(BenchEvents ev, WorkloadFigures f) throws Exception {
        BenchCluster.Run n = runs.naive(ev);
        BenchCluster.Run s = runs.sql(ev);
        BenchRuns.Measured nr = runs.measured(() -> runs.naiveRedis(ev));
        runs.cleanRedis();
        BenchRuns.Measured sr = runs.measured(() -> runs.sqlRedis(ev));
        runs.cleanRedis();
        double oursEps = BenchReport.last(f.ours);
        double naiveEps = ev.count / n.seconds;
        double sqlEps = ev.count / s.seconds;
        f.naive.add(naiveEps);
        f.sql.add(sqlEps);
        f.ratioNaive.add(oursEps / naiveEps);
        f.ratioSql.add(oursEps / sqlEps);
        f.naiveRedis.add(nr.eps(ev.count));
        f.sqlRedis.add(sr.eps(ev.count));
        f.ratioNaiveRedis.add(oursEps / nr.eps(ev.count));
        f.ratioSqlRedis.add(oursEps / sr.eps(ev.count));
        f.naiveJobMicros.add(n.jobCpuSeconds * 1e6 / ev.count);
        f.sqlJobMicros.add(s.jobCpuSeconds * 1e6 / ev.count);
        f.naiveRedisJobMicros.add(nr.jobMicros(ev.count));
        f.naiveRedisRedisMicros.add(nr.redisMicros(ev.count));
        f.sqlRedisJobMicros.add(sr.jobMicros(ev.count));
        f.sqlRedisRedisMicros.add(sr.redisMicros(ev.count));
        f.redis.add(References.redis(
                ev, size.redisEvents, runs.redisHost, runs.redisPort, runs.prefix + ":seed", PARALLELISM));
        runs.cleanRedis();
        f.limit.add(References.limitOneThread(ev, size.limitLines, 3) * PARALLELISM);
    }

    /** The line for people of one workload in one round. */
    private void printRound(int round, Workload w, BenchCluster.Run o, WorkloadFigures f) {
        out.printf(
                "  round %d %-7s ours %,9.0f ev/s (counted %,d, duplicates %,d, late %,d; %.4f Redis commands/event; job %.1f us, Redis %.1f us CPU/event)"
                        + "  naive %,9.0f  sql %,9.0f  naive+redis %,9.0f  sql+redis %,9.0f  redis %,9.0f  limit %,9.0f%n",
                round + 1,
                w,
                BenchReport.last(f.ours),
                o.acc(JobAccumulators.COUNTED),
                o.acc(JobAccumulators.DUPLICATES),
                o.acc(JobAccumulators.deadLetters(EventParser.LATE)),
                BenchReport.last(f.cmdsPerEvent),
                BenchReport.last(f.jobMicrosPerEvent),
                BenchReport.last(f.redisMicrosPerEvent),
                BenchReport.last(f.naive),
                BenchReport.last(f.sql),
                BenchReport.last(f.naiveRedis),
                BenchReport.last(f.sqlRedis),
                BenchReport.last(f.redis),
                BenchReport.last(f.limit));
    }
}
