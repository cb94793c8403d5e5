package io.rollcount.bench;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.files.DeadLetterFileSink;
import io.rollcount.job.gen.EventGenerator.Workload;
import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Response;

/**
 * The paced run of a full {@code bench job}: Rollcount on zipf at a given rate with event times = creation
 * times, and what it shows: how soon a count is visible in Redis ({@code RESULT job.visibility}), the
 * checkpoints ({@code RESULT job.checkpoint}) and the state per active counter ({@code RESULT job.state}).
 */
final class PacedBench {

    private final BenchRuns runs;
    private final BenchReport report;

    PacedBench(BenchRuns runs, BenchReport report) {
        this.runs = runs;
        this.report = report;
    }

    /**
     * Rollcount on zipf at {@code rate} events/s, event times = creation times; every so often a probe event
     * on a counter of its own, whose total a poller waits for in Redis.
     */
    void run(double rate) throws Exception {
        long count = (long) (rate * runs.size.pacedSeconds());
        BenchEvents ev = runs.events(Workload.zipf, count);
        long probeEvery = Math.max(1, (long) (rate / 50));
        StreamExecutionEnvironment env = paced(ev, rate, probeEvery);
        List<Long> latencies = new ArrayList<>();
        List<long[]> progress = new ArrayList<>();
        try (Jedis jedis = new Jedis(runs.redisHost, runs.redisPort)) {
            BenchCluster.Run run = runs.cluster()
                    .run(
                            env,
                            "rollcount-paced",
                            JobBench.PARALLELISM,
                            false,
                            Duration.ofSeconds(runs.size.pacedSeconds() * 3L + 120),
                            t -> {
                                pollProbes(jedis, latencies);
                                progress.add(new long[] {
                                    System.currentTimeMillis(),
                                    BenchClock.LAST_INDEX.get(0),
                                    BenchClock.LAST_INDEX.get(1)
                                });
                            });
            long deadline = System.currentTimeMillis() + 5_000;
            while (!BenchClock.PROBES.isEmpty() && System.currentTimeMillis() < deadline) {
                pollProbes(jedis, latencies);
                Thread.sleep(20);
            }
            visibility(rate, count, run, latencies);
            checkpoints(run);
            state(run, activeCounters(ev, progress, run.lastCheckpointTriggerMillis, probeEvery));
        }
        runs.cleanRedis();
    }

    /** Rollcount as {@code rollcount run} builds it, on {@code ev} paced at {@code rate}, with its probe events. */
    private StreamExecutionEnvironment paced(BenchEvents ev, double rate, long probeEvery) {
        JobSettings o = runs.options();
        StreamExecutionEnvironment env = runs.environment(FlinkSettings.configuration(o));
        Pipeline.build(
                env,
                o,
                GeneratedEvents.paced(ev, rate, probeEvery),
                new Pipeline.Outputs(
                        new StampingSink<>(JobConnectors.redisSink(o)),
                        new DeadLetterFileSink(o.dlq),
                        1,
                        null,
                        null,
                        JobConnectors.redisSink(o).withoutWatermark()));
        return env;
    }

    /** How long after its event a probe's total was in Redis: {@code RESULT job.visibility}. */
    private void visibility(double rate, long count, BenchCluster.Run run, List<Long> latencies) {
        int missing = BenchClock.PROBES.size();
        long[] sorted = latencies.stream().mapToLong(Long::longValue).sorted().toArray();
        report.result(
                "job.visibility",
                "rate_eps",
                BenchReport.eps(rate),
                "achieved_eps",
                BenchReport.eps(count / run.seconds),
                "p50_ms",
                String.valueOf(BenchReport.pct(sorted, 50)),
                "p99_ms",
                String.valueOf(BenchReport.pct(sorted, 99)),
                "max_ms",
                String.valueOf(sorted.length == 0 ? -1 : sorted[sorted.length - 1]),
                "probes",
                String.valueOf(sorted.length),
                "missing",
                String.valueOf(missing),
                "workload",
                "zipf-half-of-max-rate");
    }

    /** The paced run's checkpoints: {@code RESULT job.checkpoint}. */
    private void checkpoints(BenchCluster.Run run) {
        report.result(
                "job.checkpoint",
                "duration_ms",
                String.valueOf(run.lastCheckpointMillis),
                "max_duration_ms",
                String.valueOf(run.maxCheckpointMillis),
                "full_bytes",
                String.valueOf(run.lastCheckpointFullBytes),
                "incremental_bytes",
                String.valueOf(run.lastCheckpointIncrementalBytes),
                "checkpoints",
                String.valueOf(run.checkpoints),
                "workload",
                "zipf-paced");
    }

    /** The state at the last checkpoint per counter active by then: {@code RESULT job.state}. */
    private void state(BenchCluster.Run run, long active) {
        long dedup = run.stateBytesOf("drop-duplicates");
        long counting = run.stateBytesOf("count-per-counter");
        report.result(
                "job.state",
                "bytes_per_active_counter",
                active <= 0 || run.lastCheckpointFullBytes < 0
                        ? "-1"
                        : String.valueOf(run.lastCheckpointFullBytes / active),
                "counting_bytes_per_active_counter",
                active <= 0 ? "-1" : String.valueOf(counting / active),
                "dedup_bytes",
                String.valueOf(dedup),
                "active_counters",
                String.valueOf(active),
                "source",
                "last-checkpoint-full-size");
        runs.out.println("  state by operator at the last checkpoint: " + run.stateBytesByOperator);
        if (run.checkpoints == 0)
            runs.out.println(
                    "  (no checkpoint completed in the paced run: it is shorter than two checkpoint intervals)");
    }

    private void pollProbes(Jedis jedis, List<Long> latencies) {
        if (BenchClock.PROBES.isEmpty()) return;
        List<Map.Entry<String, Long>> pending = new ArrayList<>(BenchClock.PROBES.entrySet());
        redis.clients.jedis.Pipeline p = jedis.pipelined();
        List<Response<String>> values = new ArrayList<>(pending.size());
        for (Map.Entry<String, Long> e : pending) values.add(p.get(runs.keys.total(e.getKey())));
        p.sync();
        long now = System.currentTimeMillis();
        for (int i = 0; i < pending.size(); i++) {
            if (values.get(i).get() != null) {
                latencies.add(now - pending.get(i).getValue());
                BenchClock.PROBES.remove(pending.get(i).getKey());
            }
        }
    }

    /**
     * Distinct counters among the events each generator part had made when the last checkpoint was triggered
     * (probe events, every {@code probeEvery}-th, count one each; {@code probeEvery} 0: none); -1 without a
     * checkpoint. {@code progress}: samples {time, last index of part 0, last index of part 1}.
     */
    static long activeCounters(BenchEvents ev, List<long[]> progress, long triggerMillis, long probeEvery) {
        if (triggerMillis < 0) return -1;
        long[] at = null;
        for (long[] s : progress) if (s[0] <= triggerMillis) at = s;
        if (at == null) return -1;
        BitSet ranks = new BitSet(ev.counters);
        long probes = 0;
        for (int k = 1; k <= 2; k++) {
            long last = at[k];
            if (last < 0) continue;
            long from = last / ev.partSize() * ev.partSize();
            for (long i = from; i <= last; i++) {
                if (probeEvery > 0 && i % probeEvery == 0) probes++;
                else ranks.set(ev.rank(i));
            }
        }
        return ranks.cardinality() + probes;
    }
}
