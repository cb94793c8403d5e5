package io.rollcount.job.pipeline;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.JobConnectors;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Pipeline;
import io.rollcount.job.gen.EventGenerator;
import io.rollcount.job.gen.EventGenerator.Generated;
import io.rollcount.job.redis.RedisClusterProcesses;
import io.rollcount.job.support.JobAwait;
import io.rollcount.job.support.JobRuns;
import java.io.IOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.flink.api.common.JobStatus;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;

/**
 * One run of the real job graph ({@link Pipeline#build}) from generated files into a
 * {@link RedisClusterProcesses} cluster, with its ground truth, and what must hold after it: every key in
 * the slot of the master that holds it, and every value exact.
 */
final class ClusterRuns {
    static final long START = io.rollcount.job.support.RecentTime.HOUR_START; // window keys expire at end + retention

    final RedisClusterProcesses cluster;
    final Path dir;
    final String prefix = "rcc" + UUID.randomUUID().toString().substring(0, 8);
    final GroundTruth truth = new GroundTruth();
    final List<String> hotTotals = new ArrayList<>();

    ClusterRuns(RedisClusterProcesses cluster, Path dir) {
        this.cluster = cluster;
        this.dir = dir;
    }

    /** Writes {@code events} zipf events (positive deltas only, with redeliveries) into two files. */
    ClusterRuns writeInput(int events, int counters) throws IOException {
        EventGenerator gen =
                new EventGenerator(7, EventGenerator.Workload.zipf, counters, 300, START, 1_000, 3_000, 0.0);
        try (Writer a = Files.newBufferedWriter(dir.resolve("a.jsonl"), StandardCharsets.UTF_8);
                Writer b = Files.newBufferedWriter(dir.resolve("b.jsonl"), StandardCharsets.UTF_8)) {
            for (int i = 0; i < events; i++) {
                Generated g = gen.next();
                truth.add(g);
                (i % 2 == 0 ? a : b).write(g.line() + "\n");
            }
        }
        EventGenerator names = new EventGenerator(7, EventGenerator.Workload.zipf, counters, 1, START, 1, 0, 0);
        for (int rank = 0; rank < 30; rank++) hotTotals.add(prefix + ":{" + names.counterId(rank) + "}:total");
        return this;
    }

    JobSettings options() {
        JobSettings o = JobRuns.fileSettings(dir, cluster.url(), prefix, Duration.ofMillis(300), dir).toBuilder()
                .set("--redis.cluster", true)
                .build();
        return o;
    }

    /** Parallelism 2, a bounded number of restarts. */
    static StreamExecutionEnvironment environment(JobSettings o) {
        return JobRuns.environment(JobRuns.configuration(o, 5, Duration.ofMillis(500)), 2);
    }

    /** The job graph from the files (held after {@code holdAt} records per reader until the gate opens, if positive). */
    void build(StreamExecutionEnvironment env, JobSettings o, long holdAt) {
        var source = JobConnectors.fileSource(o);
        Pipeline.build(env, o, holdAt > 0 ? new GatedSource<>(source, holdAt) : source, JobRuns.fileOutputs(o));
    }

    /**
     * Starts the job from the files, its readers held after {@code holdAt} records each until the gate opens
     * ({@link FailureInjection}, reset here).
     */
    JobClient startHeld(JobSettings o, long holdAt, String name) throws Exception {
        FailureInjection.reset(FailureInjection.Place.NONE, false);
        StreamExecutionEnvironment env = environment(o);
        build(env, o, holdAt);
        return env.executeAsync(name);
    }

    /** Waits up to 120 s for two completed checkpoints and at least {@code totals} hot totals seen by {@code poller}. */
    static void awaitCheckpointsAndTotals(TotalsPoller poller, int totals, JobClient job) throws Exception {
        JobAwait.await(
                "two checkpoints and totals in Redis",
                Duration.ofSeconds(120),
                () -> FailureInjection.completedCheckpoints() >= 2 && poller.maxSeen.size() >= totals,
                job);
    }

    /** Waits for the job's end, failing on a timeout or a failed job. */
    static void awaitFinished(JobClient job, Duration timeout) throws Exception {
        job.getJobExecutionResult().get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(job.getJobStatus().get()).isEqualTo(JobStatus.FINISHED);
    }

    /**
     * Every key of the prefix lies in a slot of the master that holds it ({@code CLUSTER KEYSLOT} on that
     * master), and all keys of one counter are on one master; returns how many keys were checked.
     */
    int assertEveryKeyInItsSlot() {
        Map<Integer, List<int[]>> slots = cluster.slotsByMaster();
        Map<String, Integer> nodeOfCounter = new HashMap<>();
        List<String> misplaced = new ArrayList<>();
        int checked = 0;
        for (Map.Entry<Integer, List<String>> e : cluster.keysByMaster(prefix).entrySet()) {
            int port = e.getKey();
            try (Jedis j = new Jedis("127.0.0.1", port)) {
                for (String key : e.getValue()) {
                    long slot = j.clusterKeySlot(key);
                    boolean mine =
                            slots.getOrDefault(port, List.of()).stream().anyMatch(r -> slot >= r[0] && slot <= r[1]);
                    if (!mine) misplaced.add(key + " (slot " + slot + ") on " + port);
                    if (key.startsWith(prefix + ":{")) {
                        String counter = key.substring(prefix.length() + 2, key.indexOf('}'));
                        Integer before = nodeOfCounter.put(counter, port);
                        if (before != null && before != port)
                            misplaced.add("counter " + counter + " on " + before + " and " + port);
                    }
                    checked++;
                }
            }
        }
        assertThat(misplaced).as("keys outside their slot's master").isEmpty();
        return checked;
    }

    /**
     * Every total and window sum equals the ground truth, every uniques key counts as PFADD of its users, the
     * watermark says end of input, and no key but these, bookkeeping and the sorted sets exists ({@code skip}:
     * keys the test planted).
     */
    void assertExact(Set<String> skip) {
        Map<String, Long> expected = truth.redisKeys(prefix);
        Map<String, Set<String>> uniques = truth.uniquesKeys(prefix);
        Pattern bookkeeping = Pattern.compile(Pattern.quote(prefix) + ":(\\{[^}]*\\}:)?_.*");
        List<String> unexpected = new ArrayList<>();
        Map<String, String> wrong = new HashMap<>();
        int values = 0;
        int uniquesSeen = 0;
        try (RedisClusterClient c = cluster.client()) {
            for (String key : cluster.keys(prefix)) {
                if (skip.contains(key)
                        || bookkeeping.matcher(key).matches()
                        || key.startsWith(prefix + ":meta:")
                        || key.startsWith(prefix + ":top:")
                        || key.startsWith(prefix + ":trending:")) {
                    continue;
                }
                if (uniques.containsKey(key)) {
                    String scratch = key.substring(0, key.indexOf('}') + 1) + ":_scratch";
                    c.del(scratch);
                    c.pfadd(scratch, uniques.get(key).toArray(String[]::new));
                    long want = c.pfcount(scratch);
                    c.del(scratch);
                    if (c.pfcount(key) != want)
                        wrong.put(key, "PFCOUNT " + c.pfcount(key) + ", PFADD of its users " + want);
                    uniquesSeen++;
                    continue;
                }
                if (!expected.containsKey(key)) {
                    unexpected.add(key);
                    continue;
                }
                values++;
                String v = c.get(key);
                if (!Long.toString(expected.get(key)).equals(v))
                    wrong.put(key, "expected " + expected.get(key) + " got " + v);
            }
            assertThat(c.get(prefix + ":meta:watermark"))
                    .as("the watermark after the end of input")
                    .isEqualTo(Long.toString(Long.MAX_VALUE));
        }
        Set<String> missing = new HashSet<>(expected.keySet());
        missing.removeAll(skip);
        assertThat(unexpected).as("keys that should not exist").isEmpty();
        assertThat(wrong).as("keys with a wrong value").isEmpty();
        assertThat(values).as("every expected key exists").isEqualTo(missing.size());
        assertThat(uniquesSeen).as("every uniques key exists").isEqualTo(uniques.size());
    }
}
