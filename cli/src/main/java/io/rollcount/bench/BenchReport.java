package io.rollcount.bench;

import io.rollcount.job.gen.EventGenerator.Workload;
import java.io.PrintStream;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The printed figures of the job benchmarks: {@code RESULT <benchmark> <field>=<value> ...} lines (read by
 * docs/benchmarks.md and scripts: their names and fields stay as they are), the CPU by kind of thread, the figures
 * of a full run's workloads, and the number formats of them all.
 */
final class BenchReport {

    private final PrintStream out;

    BenchReport(PrintStream out) {
        this.out = out;
    }

    /**
     * The run's job CPU per event by kind of thread ({@link ThreadCpu}): a line for people and a
     * {@code RESULT <benchmark>} line with {@code total_us_per_event=}, {@code covered=} (the share of the
     * job's CPU the kinds account for) and one {@code <kind>=} field per kind of at least 0.05 us per event.
     * Nothing where the threads could not be read (not Linux). {@code first}: fields (name, value, ...) that go
     * before them, such as the size of the run.
     */
    void threads(String benchmark, BenchCluster.Run run, long events, String... first) {
        if (run.threadCpuNanos.isEmpty() || Double.isNaN(run.jobCpuSeconds)) return;
        List<String> pairs = new ArrayList<>(List.of(first));
        pairs.add("total_us_per_event");
        pairs.add(us(run.jobCpuSeconds * 1e6 / events));
        pairs.add("covered");
        pairs.add(r2(ThreadCpu.coverage(run.threadCpuNanos, (long) (run.jobCpuSeconds * 1e9))));
        StringBuilder line = new StringBuilder("  CPU by thread (us/event):");
        for (Map.Entry<String, Long> e : run.threadCpuNanos.entrySet()) {
            double micros = e.getValue() / 1e3 / events;
            if (micros < 0.05) continue;
            pairs.add(e.getKey());
            pairs.add(String.format(Locale.ROOT, "%.2f", micros));
            line.append(String.format(Locale.ROOT, " %s %.2f,", e.getKey(), micros));
        }
        out.println(line.substring(0, line.length() - 1));
        result(benchmark, pairs.toArray(new String[0]));
    }

    void result(String benchmark, String... pairs) {
        StringBuilder sb = new StringBuilder("RESULT ").append(benchmark);
        for (int i = 0; i < pairs.length; i += 2)
            sb.append(' ').append(pairs[i]).append('=').append(pairs[i + 1]);
        out.println(sb);
        out.flush();
    }

    /**
     * The RESULT lines of a full run's rounds: one per workload, then the viral to uniform ratio, the zipf
     * breakdown (with Redis's writes discarded), the read latency of the dashboard reader, the generator alone
     * and the heap.
     */
    void rounds(Map<Workload, WorkloadFigures> figures, long events, Reads reads) {
        for (Workload w : Workload.values()) workload(w, figures.get(w), events);
        double uniform = median(figures.get(Workload.uniform).ours);
        double viral = median(figures.get(Workload.viral).ours);
        result(
                "job.viral_vs_uniform",
                "viral_eps",
                eps(viral),
                "uniform_eps",
                eps(uniform),
                "ratio",
                r2(viral / uniform));
        breakdown(figures.get(Workload.zipf), events);
        readLatency(reads);
        result(
                "job.source",
                "generator_eps",
                eps(median(reads.sourceOnly())),
                "note",
                "generator-and-parse-only-job-zipf");
        result(
                "job.heap",
                "peak_heap_mb",
                String.valueOf(figures.get(Workload.zipf).peakHeap >> 20),
                "max_heap_mb",
                String.valueOf(Runtime.getRuntime().maxMemory() >> 20),
                "note",
                "sampled-heap-used-during-rollcount-zipf-runs-whole-jvm");
    }

    /** The zipf workload's throughput with Redis's writes discarded, and Redis's share. */
    private void breakdown(WorkloadFigures z, long events) {
        result(
                "job.zipf.breakdown",
                "ours_eps",
                eps(median(z.ours)),
                "ours_without_redis_eps",
                eps(median(z.oursNoRedis)),
                "ratio_naive_without_redis",
                r2(median(z.oursNoRedis) / median(z.naive)),
                "redis_cpu_us_per_event",
                us(median(z.redisMicrosPerEvent)),
                "redis_one_core_eps",
                eps(1e6 / median(z.redisMicrosPerEvent)),
                "note",
                "without-redis=same-job-redis-writes-built-and-discarded;redis-cpu=INFO-used_cpu-of-the-server-during-the-run",
                "ours_without_redis_job_cpu_us_per_event",
                us(median(z.oursNoRedisJobMicros)));
        if (z.noRedisThreads != null) threads("job.zipf.breakdown.threads", z.noRedisThreads, events);
    }

    /** The dashboard reader's latencies and stalls during ours at full speed on zipf. */
    private void readLatency(Reads reads) {
        Percentiles p = new Percentiles(
                reads.latencies().stream().mapToDouble(Double::doubleValue).toArray());
        Percentiles stall = new Percentiles(
                reads.stalls().stream().mapToDouble(Double::doubleValue).toArray());
        result(
                "job.read_latency",
                "p50_ms",
                ms(p.at(50)),
                "p99_ms",
                ms(p.at(99)),
                "max_ms",
                ms(p.max()),
                "reads",
                String.valueOf(p.count()),
                "reader_stall_p50_ms",
                ms(stall.at(50)),
                "reader_stall_p99_ms",
                ms(stall.at(99)),
                "reader_stall_max_ms",
                ms(stall.max()),
                "workload",
                "zipf-ours-full-speed",
                "reader",
                "get-total-and-mget-60-1m-keys-alternately-hot-and-cold-every-" + ReadLatencyProbe.PAUSE_MILLIS + "ms");
    }

    /**
     * What the rounds measured besides the variants' figures: the dashboard reader's latencies and stalls (ms)
     * and the generator-only job's events per second.
     */
    record Reads(List<Double> latencies, List<Double> stalls, List<Double> sourceOnly) {
        Reads() {
            this(new ArrayList<>(), new ArrayList<>(), new ArrayList<>());
        }
    }

    private void workload(Workload w, WorkloadFigures f, long events) {
        double ours = median(f.ours);
        List<String> pairs = new ArrayList<>(List.of(throughput(f, ours)));
        pairs.addAll(List.of(costs(f, events)));
        result("job." + w, pairs.toArray(new String[0]));
    }

    /** The first fields of a workload's line: events per second against each reference, Redis's cost. */
    private static String[] throughput(WorkloadFigures f, double ours) {
        return new String[] {
            "ours_eps",
            eps(ours),
            "naive_eps",
            eps(median(f.naive)),
            "ratio_naive",
            r2(median(f.ratioNaive)),
            "sql_eps",
            eps(median(f.sql)),
            "ratio_sql",
            r2(median(f.ratioSql)),
            "redis_eps",
            eps(median(f.redis)),
            "ratio_redis",
            r2(ours / median(f.redis)),
            "limit_eps",
            eps(median(f.limit)),
            "ratio_limit",
            r2(ours / median(f.limit)),
            "redis_cmds_per_event",
            String.format(Locale.ROOT, "%.4f", median(f.cmdsPerEvent)),
            "redis_cpu_us_per_event",
            us(median(f.redisMicrosPerEvent)),
            "redis_floor_us_per_event",
            us(median(f.redisFloorMicrosPerEvent)),
            "runs",
            String.valueOf(f.ours.size()),
            "ours_spread_pct",
            String.valueOf(Math.round(spreadPct(f.ours))),
            "ref",
            "flink-2.2.1-datastream-window-aggregate/flink-sql-tumble-tvf-minibatch-two-phase/redis-7-incrby-16-shards-pipelined/one-thread-parse-map-hll-cms-x"
                    + JobBench.PARALLELISM
        };
    }

    /** The last fields of a workload's line: the fair references, CPU per event, Redis's memory. */
    private static String[] costs(WorkloadFigures f, long events) {
        return new String[] {
            "naive_redis_eps",
            eps(median(f.naiveRedis)),
            "ratio_naive_redis",
            r2(median(f.ratioNaiveRedis)),
            "sql_redis_eps",
            eps(median(f.sqlRedis)),
            "ratio_sql_redis",
            r2(median(f.ratioSqlRedis)),
            "job_cpu_us_per_event",
            us(median(f.jobMicrosPerEvent)),
            "naive_redis_job_cpu_us_per_event",
            us(median(f.naiveRedisJobMicros)),
            "naive_redis_redis_cpu_us_per_event",
            us(median(f.naiveRedisRedisMicros)),
            "sql_redis_job_cpu_us_per_event",
            us(median(f.sqlRedisJobMicros)),
            "sql_redis_redis_cpu_us_per_event",
            us(median(f.sqlRedisRedisMicros)),
            "redis_bytes_per_counter",
            String.valueOf(Math.round(median(f.redisBytesPerCounter))),
            "distinct_counters",
            String.valueOf(f.distinctCounters),
            "events",
            String.valueOf(events),
            "naive_job_cpu_us_per_event",
            us(median(f.naiveJobMicros)),
            "sql_job_cpu_us_per_event",
            us(median(f.sqlJobMicros)),
            "ref_redis",
            "datastream-windows-and-rolling-total/sql-group-by-bucket-upsert-minibatch-two-phase-pipelined-set-pxat"
        };
    }

    static double last(List<Double> l) {
        return l.get(l.size() - 1);
    }

    static double median(List<Double> values) {
        double[] v = values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
        if (v.length == 0) return Double.NaN;
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    static double spreadPct(List<Double> values) {
        double min = values.stream().mapToDouble(Double::doubleValue).min().orElse(0);
        double max = values.stream().mapToDouble(Double::doubleValue).max().orElse(0);
        return 100 * (max - min) / median(values);
    }

    static long pct(long[] sorted, int p) {
        if (sorted.length == 0) return -1;
        return sorted[Math.min(sorted.length - 1, (int) Math.ceil(p / 100.0 * sorted.length) - 1)];
    }

    static String us(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    static String ms(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    static String eps(double v) {
        return String.valueOf(Math.round(v));
    }

    static String r2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
