package io.rollcount.bench;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Launcher;
import io.rollcount.job.Pipeline;
import io.rollcount.job.gen.EventGenerator.Workload;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import redis.clients.jedis.Jedis;

/**
 * The runs of {@code bench peers} ({@link PeersCommand}): ours against the competent peer doing the same work,
 * in Kafka mode. The events (every one with an {@code event_id}, 3% redeliveries) are produced once to a topic
 * of a Kafka broker in a child JVM ({@link BrokerProcess}); every variant reads that topic, after an unmeasured
 * warm-up of its own over a warm-up topic, in interleaved rounds. Per run: the job's CPU (this JVM less the
 * harness, {@link JobCpu}), Redis's ({@code INFO cpu}) and the broker's (its process) over the same span, the
 * last checkpoint's size, and a check of the sampled counters' Redis values against the input's exact sums
 * ({@link ExactSums}); the bench's keys are deleted after each run.
 */
final class PeersBench {
    /** The variants, in the order of the first round. */
    enum Variant {
        SQL_EXACT("sql-exact"),
        OURS_EXACT("ours-exact"),
        OURS_FULL("ours-full");

        final String label;

        Variant(String label) {
            this.label = label;
        }
    }

    /** Counters whose values are checked after each run. */
    static final int SAMPLE_COUNTERS = 200;

    /** ours-exact's policies: every namespace without unique users, trending and window top-K. */
    static final String EXACT_POLICIES =
            "# bench peers, ours-exact: the work of sql-exact\n- match: \"*\"\n  uniques: false\n  trending: false\n  topk: false\n";

    private final BenchRuns runs;
    private final BenchReport report;
    private final PrintStream out;
    private final Workload workload;
    private final long events;
    private final long warmup;
    private final int rounds;
    private int runNumber;

    PeersBench(BenchRuns runs, PrintStream out, Workload workload, long events, long warmup, int rounds) {
        this.runs = runs;
        this.report = new BenchReport(out);
        this.out = out;
        this.workload = workload;
        this.events = events;
        this.warmup = warmup;
        this.rounds = rounds;
    }

    /** The whole benchmark: produce, warm up, measure in rounds, print the RESULT lines. */
    void run() throws Exception {
        Files.createDirectories(runs.work);
        Launcher.of(runs.options(), Launcher.Place.HERE, "-").startingOver().checkStart(null, null);
        BenchEvents ev = runs.events(workload, events).withEventIdOnEvery();
        BenchEvents warm =
                runs.events(workload, Math.max(warmup, JobBench.PARALLELISM)).withEventIdOnEvery();
        out.printf(
                "bench peers: %s, %,d events per variant after a warm-up of %,d, users from %,d, %d round(s), Kafka mode (broker in a child JVM), parallelism %d, Redis %s prefix %s%n",
                workload, ev.count, warmup, ev.users, rounds, JobBench.PARALLELISM, runs.redisUrl, runs.prefix);
        Set<String> sample = ExactSums.sampleCounters(ev, SAMPLE_COUNTERS);
        Map<String, Long> expected = ExactSums.expected(ev, sample, runs.keys);
        long distinct = BenchRuns.distinctCounters(ev);
        Path policies = runs.work.resolve("peers-exact-policies.yaml");
        Files.writeString(policies, EXACT_POLICIES, StandardCharsets.UTF_8);
        Map<Variant, List<PeerFigures.Run>> figures = new EnumMap<>(Variant.class);
        Map<Variant, BenchCluster.Run> last = new EnumMap<>(Variant.class);
        String topic = "peers-events-" + runs.prefix;
        String warmTopic = "peers-warm-" + runs.prefix;
        try (BrokerProcess broker = BrokerProcess.start(runs.work.resolve("kafka"))) {
            broker.createTopics(JobBench.PARALLELISM, topic, warmTopic);
            KafkaBench.produce(broker.clientProperties(), warmTopic, warm);
            KafkaBench.produce(broker.clientProperties(), topic, ev);
            BenchClock.brokerCpu = broker::cpuNanos;
            Setup setup = new Setup(broker.bootstrap(), policies);
            if (warmup > 0) {
                for (Variant v : Variant.values()) {
                    run(v, setup, warmTopic, warm);
                    runs.cleanRedis();
                }
            }
            for (int round = 0; round < rounds; round++) {
                for (Variant v : order(round)) {
                    BenchRuns.Measured m = run(v, setup, topic, ev);
                    boolean exact = check(v, expected);
                    runs.cleanRedis();
                    figures.computeIfAbsent(v, k -> new ArrayList<>()).add(figuresOf(m, ev.count, distinct, exact));
                    last.put(v, m.run());
                    printRun(round, v, m, ev.count, exact);
                }
            }
        } finally {
            BenchClock.brokerCpu = null;
        }
        results(figures, ev.count, last);
    }

    /** The variants of round {@code round}: the first order rotated by one per round. */
    static List<Variant> order(int round) {
        Variant[] all = Variant.values();
        List<Variant> order = new ArrayList<>();
        for (int k = 0; k < all.length; k++) order.add(all[(k + round) % all.length]);
        return order;
    }

    private record Setup(String bootstrap, Path exactPolicies) {}

    /** One run of a variant over {@code topic}, measured (the warm-up's runs are measured too, and not used). */
    private BenchRuns.Measured run(Variant v, Setup setup, String topic, BenchEvents ev) throws Exception {
        int n = ++runNumber;
        String ids = runs.prefix + "-" + v.label + "-" + n;
        JobSettings o = jobOptions(setup, topic, ids, v == Variant.OURS_EXACT ? setup.exactPolicies() : null);
        StreamExecutionEnvironment env = runs.environment(FlinkSettings.configuration(o));
        String group = v.label + "-" + n;
        int ends = switch (v) {
            case OURS_EXACT, OURS_FULL -> ours(env, o, group, v == Variant.OURS_FULL);
            case SQL_EXACT -> sql(env, o, group);
        };
        String name = "peers-" + v.label + "-" + n;
        return runs.measured(() -> runs.cluster().run(env, name, ends, true, BenchRuns.timeout(ev.count, 500), null));
    }

    /**
     * The job's settings as {@code ./rollcount run} gets them, from an argument list: the bench's Redis and prefix,
     * parallelism, checkpoints every 10 s, the Kafka source of {@code topic}, transactional ids of their own.
     */
    private JobSettings jobOptions(Setup setup, String topic, String transactionalIds, Path policies) {
        List<String> args = new ArrayList<>(List.of(
                "--redis",
                runs.redisUrl,
                "--redis.key-prefix",
                runs.prefix,
                "--parallelism",
                String.valueOf(JobBench.PARALLELISM),
                "--checkpoint.interval",
                "10s",
                "--dlq",
                runs.work.resolve("dlq.jsonl").toString(),
                "--source",
                "kafka",
                "--kafka.bootstrap",
                setup.bootstrap(),
                "--kafka.topic",
                topic,
                "--kafka.transactional-id-prefix",
                transactionalIds));
        if (policies != null) args.addAll(List.of("--policies", policies.toString()));
        return JobSettings.of(args.toArray(new String[0]));
    }

    /** Ours as {@code run} builds it, reading the topic; {@code trending}: with its {@code counter-trending} sink. */
    private static int ours(StreamExecutionEnvironment env, JobSettings o, String group, boolean trending) {
        JobConnectors.ensureOutputTopics(o);
        Pipeline.build(
                env,
                o,
                KafkaBench.kafkaSource(o, group),
                new Pipeline.Outputs(
                        new StampingSink<>(JobConnectors.redisSink(o)),
                        JobConnectors.deadLetterSink(o),
                        0,
                        JobConnectors.rollupsSink(o),
                        trending ? JobConnectors.trendingSink(o) : null,
                        JobConnectors.redisSink(o).withoutWatermark()));
        return JobBench.PARALLELISM;
    }

    private int sql(StreamExecutionEnvironment env, JobSettings o, String group) {
        SqlPeer.Built built = SqlPeer.build(
                env,
                KafkaBench.kafkaSource(o, group),
                new SqlPeer.Outputs(runs.redisHost, runs.redisPort, runs.keys, JobConnectors.rollupsSink(o)),
                o.dedupHorizon);
        if (System.getenv("ROLLCOUNT_BENCH_VERBOSE") != null) System.err.println(built.plan());
        return built.stampingSinks();
    }

    /** Whether the sampled counters' Redis values equal the exact sums; the first wrong ones are printed. */
    private boolean check(Variant v, Map<String, Long> expected) {
        Map<String, String> actual = new java.util.HashMap<>();
        List<String> keys = new ArrayList<>(expected.keySet());
        try (Jedis jedis = new Jedis(runs.redisHost, runs.redisPort)) {
            for (int from = 0; from < keys.size(); from += 500) {
                List<String> batch = keys.subList(from, Math.min(keys.size(), from + 500));
                List<String> values = jedis.mget(batch.toArray(new String[0]));
                for (int k = 0; k < batch.size(); k++) actual.put(batch.get(k), values.get(k));
            }
        }
        List<String> wrong = ExactSums.mismatches(expected, actual);
        if (!wrong.isEmpty()) {
            out.printf(
                    "  %s: %,d of %,d sampled keys differ from the exact sums, e.g. %s%n",
                    v.label,
                    wrong.size(),
                    expected.size(),
                    String.join("; ", wrong.subList(0, Math.min(3, wrong.size()))));
        }
        return wrong.isEmpty();
    }

    private static PeerFigures.Run figuresOf(BenchRuns.Measured m, long n, long distinct, boolean exact) {
        BenchCluster.Run r = m.run();
        long state = r.lastCheckpointFullBytes < 0 || distinct <= 0 ? -1 : r.lastCheckpointFullBytes / distinct;
        return new PeerFigures.Run(
                m.eps(n), m.jobMicros(n), m.redisMicros(n), r.brokerCpuSeconds * 1e6 / n, state, exact);
    }

    private void printRun(int round, Variant v, BenchRuns.Measured m, long n, boolean exact) {
        out.printf(
                "  round %d %-10s %,9.0f ev/s, CPU per event: job %.2f us, Redis %.2f us, broker %.2f us; values %s%n",
                round + 1,
                v.label,
                m.eps(n),
                m.jobMicros(n),
                m.redisMicros(n),
                m.run().brokerCpuSeconds * 1e6 / n,
                exact ? "exact" : "NOT exact");
    }

    private void results(Map<Variant, List<PeerFigures.Run>> figures, long n, Map<Variant, BenchCluster.Run> last) {
        Map<Variant, PeerFigures.Variant> v = new EnumMap<>(Variant.class);
        for (Variant k : Variant.values()) {
            v.put(k, PeerFigures.Variant.of(figures.get(k)));
            report.result("peers." + k.label, PeerFigures.variantFields(workload.name(), n, v.get(k)));
        }
        // Where ours' job CPU goes, with and without unique users, lists and trending: the gap between the two
        // is what ours_full_vs_exact measures.
        for (Variant k : List.of(Variant.OURS_EXACT, Variant.OURS_FULL)) {
            if (last.containsKey(k)) report.threads("peers." + k.label + ".threads", last.get(k), n);
        }
        report.result(
                "peers.ratio",
                PeerFigures.ratioFields(
                        workload.name(),
                        v.get(Variant.SQL_EXACT),
                        v.get(Variant.OURS_EXACT),
                        v.get(Variant.OURS_FULL)));
    }
}
