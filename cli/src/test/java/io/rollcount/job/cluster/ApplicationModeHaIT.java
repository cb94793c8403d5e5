package io.rollcount.job.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.chaos.LocalCluster;
import io.rollcount.chaos.LocalZooKeeper;
import io.rollcount.job.cluster.ClusterFaultIT.Stream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * The job in application mode with ZooKeeper HA, as the Flink Kubernetes Operator runs it, without Kubernetes:
 * {@code deploy/local-cluster/start-application.sh} (a JobManager of {@code StandaloneApplicationClusterEntryPoint}
 * that runs the job's main itself, two TaskManagers, separate JVMs) against a ZooKeeper server in its own JVM
 * ({@code zookeeper.sh}), the in-process Kafka broker and the real Redis. Each test produces a live stream, and
 * checks every Redis total and window sum, {@code counter-rollups} read_committed and the polled totals against
 * the ground truth ({@link ClusterFaultIT.Stream}):
 * <ul>
 *   <li>a JobManager failover: {@code kill -9} of the JobManager mid-stream and a new one of the same command
 *       (as a Kubernetes Deployment restarts the pod) recovers the job from its latest checkpoint, runs main
 *       again without refusing the start, and stays up;
 *   <li>an upgrade, or a delete and redeploy: stop with a savepoint (REST {@code POST /jobs/<id>/stop}), the
 *       application cluster ends, and a new one started from the savepoint ({@code execution.savepoint.path}, the
 *       operator's {@code initialSavepointPath}) counts on from it.
 * </ul>
 *
 * <p>Run by failsafe in {@code mvn -B verify -Pcluster-tests} (after {@code package} built the jar).
 */
@Tag("cluster")
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ApplicationModeHaIT {
    /** How long the new JobManager must stay up after the recovery, running the job: a crash loop ends sooner. */
    private static final Duration STAYS_UP = Duration.ofSeconds(60);

    private static final String MAIN_RAN = "application mode: key prefix";

    private static Path work;
    private static LocalZooKeeper zookeeper;

    @BeforeAll
    static void startZooKeeper() throws Exception {
        LocalCluster.jobJar();
        work = LocalCluster.repoRoot()
                .resolve("job/target/app-ha-" + UUID.randomUUID().toString().substring(0, 8));
        zookeeper = LocalZooKeeper.startIn(work.resolve("zookeeper"));
        log("ZooKeeper at " + zookeeper.address());
    }

    @AfterAll
    static void stopZooKeeper() throws Exception {
        if (zookeeper != null) zookeeper.close();
        if (work != null) {
            // Keep the logs (log/ of each cluster) for a look after a failure; drop the bulky data.
            try (var dirs = Files.list(work)) {
                for (Path d : dirs.toList()) {
                    for (String bulky : List.of("checkpoints", "savepoints", "ha", "usrlib", "tmp", "data"))
                        ClusterFaultIT.deleteTree(d.resolve(bulky));
                    if (d.getFileName().toString().startsWith("kafka-")) ClusterFaultIT.deleteTree(d);
                }
            }
        }
    }

    static void log(String msg) {
        System.out.printf(Locale.ROOT, "%tT app-ha-it: %s%n", System.currentTimeMillis(), msg);
    }

    @Test
    @Order(1)
    void killNineOfTheJobManagerRecoversTheJobFromItsLatestCheckpointAndTheNewJobManagerStaysUp() throws Exception {
        long testStart = System.nanoTime();
        try (Stream s = ClusterFaultIT.onSharedRedis(work, "app-jm-kill");
                LocalCluster cluster = LocalCluster.startApplicationIn(
                        work.resolve("cluster-jm-kill"), 2, zookeeper.address(), null, s.jobArgs(2))) {
            String job = awaitJob(cluster);
            cluster.awaitAllRunning(job, Duration.ofMinutes(2));
            s.startProducing();
            s.awaitProduced(10_000);
            long completed = awaitCompletedCheckpoint(cluster, job);
            long firstPid = cluster.jobManagerPid().orElseThrow();

            long t0 = System.nanoTime();
            cluster.killJobManager();
            Optional<Path> latest = cluster.latestCheckpoint(job);
            log("jm-kill: kill -9 of JobManager " + firstPid + " after " + s.produced + " events; latest completed "
                    + "checkpoint " + completed + ", retained "
                    + latest.map(Path::getFileName).orElse(null));
            cluster.startJobManager();
            long secondPid = cluster.jobManagerPid().orElseThrow();
            cluster.awaitAllRunning(job, Duration.ofMinutes(3));
            long recoveredAt = System.nanoTime();
            log("jm-kill: JobManager " + secondPid + " runs job " + job + " again "
                    + seconds(Duration.ofNanos(recoveredAt - t0)) + " s after the kill");

            JsonNode restored = cluster.rest("/jobs/" + job + "/checkpoints")
                    .orElseThrow()
                    .path("latest")
                    .path("restored");
            long latestId = latest.map(
                            p -> Long.parseLong(p.getFileName().toString().substring(4)))
                    .orElse(completed);
            assertThat(restored.path("id").asLong(-1))
                    .as("the checkpoint the job was restored from: the latest completed before the kill, " + restored)
                    .isEqualTo(Math.max(latestId, completed));
            assertThat(mainRuns(cluster))
                    .as("main ran on each JobManager, in application mode, without refusing the start")
                    .isEqualTo(2);

            s.finishAndTick();
            s.assertExact();
            staysUp(cluster, job, secondPid, recoveredAt);
            log("jm-kill: done in " + seconds(Duration.ofNanos(System.nanoTime() - testStart)) + " s");
        }
    }

    @Test
    @Order(2)
    void stopWithASavepointThenANewApplicationClusterFromItCountsOn() throws Exception {
        long testStart = System.nanoTime();
        try (Stream s = ClusterFaultIT.onSharedRedis(work, "app-savepoint")) {
            String savepoint;
            try (LocalCluster first = LocalCluster.startApplicationIn(
                    work.resolve("cluster-savepoint-1"), 2, zookeeper.address(), null, s.jobArgs(2))) {
                String job = awaitJob(first);
                first.awaitAllRunning(job, Duration.ofMinutes(2));
                s.startProducing();
                s.awaitProduced(10_000);
                Thread.sleep(1_000);
                savepoint = stopWithSavepoint(first, job, work.resolve("savepoints"));
                log("savepoint: job " + job + " stopped with " + savepoint + " after " + s.produced + " events");
                awaitJobManagerExit(first);
            }
            try (LocalCluster second = LocalCluster.startApplicationIn(
                    work.resolve("cluster-savepoint-2"), 2, zookeeper.address(), savepoint, s.jobArgs(2))) {
                String job = awaitJob(second);
                second.awaitAllRunning(job, Duration.ofMinutes(2));
                JsonNode restored = second.rest("/jobs/" + job + "/checkpoints")
                        .orElseThrow()
                        .path("latest")
                        .path("restored");
                assertThat(restored.path("is_savepoint").asBoolean())
                        .as("restored from a savepoint: " + restored)
                        .isTrue();
                assertThat(Path.of(java.net.URI.create(
                                restored.path("external_path").asText())))
                        .isEqualTo(Path.of(java.net.URI.create(savepoint)));
                log("savepoint: the new application cluster runs job " + job + " from " + savepoint);
                s.finishAndTick();
                s.assertExact();
            }
            log("savepoint: done in " + seconds(Duration.ofNanos(System.nanoTime() - testStart)) + " s");
        }
    }

    // ------------------------------------------------------------------ helpers

    /** The application's job, once main submitted it. */
    static String awaitJob(LocalCluster cluster) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (true) {
            List<String> ids = cluster.jobIds();
            if (!ids.isEmpty()) return ids.get(0);
            if (System.nanoTime() > deadline) throw new AssertionError("no job in the application cluster after 2 min");
            Thread.sleep(200);
        }
    }

    /** Waits for a checkpoint completed after production began; returns the id of the latest completed one. */
    static long awaitCompletedCheckpoint(LocalCluster cluster, String job) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline) {
            long id = cluster.rest("/jobs/" + job + "/checkpoints")
                    .map(c -> c.path("latest").path("completed").path("id").asLong(-1))
                    .orElse(-1L);
            if (id >= 2) return id;
            Thread.sleep(200);
        }
        throw new AssertionError("no completed checkpoint of " + job + " within 30 s");
    }

    /** How often main ran on a JobManager of the cluster in application mode (its line in jobmanager.log). */
    static long mainRuns(LocalCluster cluster) throws IOException {
        try (var lines = Files.lines(cluster.dir.resolve("log/jobmanager.log"))) {
            return lines.filter(l -> l.contains(MAIN_RAN)).count();
        }
    }

    /** The JobManager {@code pid} stays up running the job until {@link #STAYS_UP} after {@code since}. */
    static void staysUp(LocalCluster cluster, String job, long pid, long since) throws InterruptedException {
        long until = since + STAYS_UP.toNanos();
        while (System.nanoTime() < until) {
            assertThat(cluster.jobManagerPid())
                    .as("the new JobManager is still up")
                    .contains(pid);
            assertThat(cluster.jobState(job)).as("the job still runs").isEqualTo("RUNNING");
            Thread.sleep(2_000);
        }
        log("JobManager " + pid + " up and the job running " + STAYS_UP.toSeconds() + " s after the recovery");
    }

    /**
     * Stops the job with a savepoint into {@code dir} (REST {@code POST /jobs/<id>/stop}); returns its path. The
     * application cluster shuts down when the job ends, perhaps before it answered the status of the stop: then
     * the savepoint is the one folder in {@code dir} with its metadata.
     */
    static String stopWithSavepoint(LocalCluster cluster, String job, Path dir) throws Exception {
        String body = "{\"targetDirectory\":\"" + dir.toUri() + "\",\"drain\":false}";
        String trigger = cluster.restPost("/jobs/" + job + "/stop", body)
                .path("request-id")
                .asText();
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (System.nanoTime() < deadline) {
            Optional<JsonNode> status = cluster.rest("/jobs/" + job + "/savepoints/" + trigger);
            if (status.isPresent()
                    && "COMPLETED".equals(status.get().path("status").path("id").asText())) {
                JsonNode op = status.get().path("operation");
                if (op.has("location")) return op.path("location").asText();
                throw new AssertionError("the stop with a savepoint failed: " + op);
            }
            Optional<Path> written = savepointIn(dir);
            if (written.isPresent() && status.isEmpty())
                return written.get().toUri().toString();
            Thread.sleep(200);
        }
        throw new AssertionError("no savepoint of " + job + " in " + dir + " within 2 min");
    }

    private static Optional<Path> savepointIn(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) return Optional.empty();
        try (var s = Files.list(dir)) {
            return s.filter(p -> Files.isRegularFile(p.resolve("_metadata")))
                    .max(Comparator.comparing(p -> p.getFileName().toString()));
        }
    }

    /** The application cluster's JobManager ends by itself once its job has ended. */
    static void awaitJobManagerExit(LocalCluster cluster) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofMinutes(1).toNanos();
        while (cluster.jobManagerPid().isPresent()) {
            if (System.nanoTime() > deadline)
                throw new AssertionError("the JobManager still runs a minute after its job ended");
            Thread.sleep(500);
        }
    }

    static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.1f", d.toMillis() / 1000.0);
    }
}
