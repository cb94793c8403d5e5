package io.rollcount.chaos;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The Flink session cluster of {@code deploy/local-cluster/}, driven from a test through its own scripts
 * (ProcessBuilder): {@code start.sh}, {@code stop.sh}, {@code taskmanager.sh}, {@code jobmanager.sh} and
 * {@code flink} (Flink's CliFrontend). The cluster lives in its own folder under {@code target/} with a free
 * REST port, so it never meets a developer's cluster. {@link #close()} stops every process it started; a
 * JVM shutdown hook does the same if the test JVM ends early.
 */
public final class LocalCluster implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Pattern JOB_ID = Pattern.compile("JobID ([0-9a-f]{32})");
    private static final Pattern SAVEPOINT = Pattern.compile("Savepoint completed\\. Path: (\\S+)");

    public final Path repo;
    public final Path scripts;
    public final Path dir;
    private final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(3)).build();
    private final Thread hook;
    private String restUrl;
    /** What start.sh printed. */
    public String startOutput;

    /** A result of one script call. */
    public record Result(int exit, String output) {}

    private LocalCluster(Path repo, Path dir) {
        this.repo = repo;
        this.scripts = repo.resolve("deploy/local-cluster");
        this.dir = dir;
        this.hook = new Thread(
                () -> {
                    try {
                        run(Duration.ofSeconds(60), "stop.sh");
                    } catch (RuntimeException ignored) {
                        // best effort at JVM exit
                    }
                },
                "local-cluster-stop");
    }

    /** The repository root: the working directory of a test is the {@code job} module. */
    public static Path repoRoot() {
        Path p = Path.of("").toAbsolutePath();
        while (p != null && !Files.isRegularFile(p.resolve("deploy/local-cluster/start.sh"))) p = p.getParent();
        if (p == null) p = repoOfCode();
        if (p == null)
            throw new IllegalStateException(
                    "no deploy/local-cluster/start.sh above " + Path.of("").toAbsolutePath());
        return p;
    }

    /** The repository this class was loaded from (job/target/classes or job/target/rollcount-job.jar), when run from another folder. */
    private static Path repoOfCode() {
        try {
            Path p = Path.of(LocalCluster.class
                            .getProtectionDomain()
                            .getCodeSource()
                            .getLocation()
                            .toURI())
                    .toAbsolutePath();
            while (p != null && !Files.isRegularFile(p.resolve("deploy/local-cluster/start.sh"))) p = p.getParent();
            return p;
        } catch (java.net.URISyntaxException | RuntimeException e) {
            return null;
        }
    }

    /** The shaded job jar: {@code mvn package} builds it (failsafe runs after package in {@code verify}). */
    public static Path jobJar() {
        Path jar = repoRoot().resolve("job/target/rollcount-job.jar");
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException(
                    jar + " is missing: run `mvn -B verify -Pcluster-tests` (or `mvn package` first)");
        }
        return jar;
    }

    /** Starts a cluster of {@code taskmanagers} TaskManagers (2 slots each) in a fresh folder under job/target. */
    public static LocalCluster start(int taskmanagers) throws IOException {
        return start(taskmanagers, new String[0]);
    }

    /** As {@link #start(int)}, with more options of start.sh (e.g. {@code --metrics-ports A-B}). */
    public static LocalCluster start(int taskmanagers, String... startOptions) throws IOException {
        return startIn(
                repoRoot()
                        .resolve("job/target/local-cluster-"
                                + UUID.randomUUID().toString().substring(0, 8)),
                taskmanagers,
                startOptions);
    }

    /** As {@link #start(int, String...)}, in a given (new) folder. */
    public static LocalCluster startIn(Path dir, int taskmanagers, String... startOptions) throws IOException {
        List<String> args =
                new ArrayList<>(List.of("--taskmanagers", Integer.toString(taskmanagers), "--rest-port", "0"));
        args.addAll(List.of(startOptions));
        return startWith(dir, "start.sh", args);
    }

    /**
     * An application cluster ({@code start-application.sh}) of {@code taskmanagers} TaskManagers in a given (new)
     * folder, with ZooKeeper HA at {@code zookeeper} (HOST:PORT), running the job jar with {@code jobArgs};
     * {@code savepoint} (may be null) is its {@code execution.savepoint.path}.
     */
    public static LocalCluster startApplicationIn(
            Path dir, int taskmanagers, String zookeeper, String savepoint, List<String> jobArgs) throws IOException {
        List<String> args = new ArrayList<>(List.of(
                "--zookeeper",
                zookeeper,
                "--jar",
                jobJar().toString(),
                "--taskmanagers",
                Integer.toString(taskmanagers),
                "--rest-port",
                "0"));
        if (savepoint != null) args.addAll(List.of("--from-savepoint", savepoint));
        args.add("--");
        args.addAll(jobArgs);
        return startWith(dir, "start-application.sh", args);
    }

    private static LocalCluster startWith(Path dir, String script, List<String> args) throws IOException {
        Path repo = repoRoot();
        Files.createDirectories(dir);
        LocalCluster c = new LocalCluster(repo, dir);
        Runtime.getRuntime().addShutdownHook(c.hook);
        Result r = c.run(Duration.ofMinutes(5), script, args.toArray(String[]::new));
        if (r.exit() != 0) {
            c.close();
            throw new IllegalStateException(script + " failed (" + r.exit() + "):\n" + r.output());
        }
        Matcher m = Pattern.compile("REST (http://\\S+)").matcher(r.output());
        if (!m.find()) {
            c.close();
            throw new IllegalStateException(script + " printed no REST address:\n" + r.output());
        }
        c.restUrl = m.group(1);
        c.startOutput = r.output();
        return c;
    }

    public String restUrl() {
        return restUrl;
    }

    /** Runs a script of deploy/local-cluster with this cluster's folder; output is stdout and stderr together. */
    public Result run(Duration timeout, String script, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(scripts.resolve(script).toString());
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(repo.toFile()).redirectErrorStream(true);
        pb.environment().put("ROLLCOUNT_CLUSTER_DIR", dir.toString());
        try {
            Path out = Files.createTempFile(dir, "script-", ".out");
            pb.redirectOutput(out.toFile());
            Process p = pb.start();
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
                throw new IllegalStateException(
                        String.join(" ", cmd) + " took over " + timeout.toSeconds() + " s:\n" + Files.readString(out));
            }
            String output = Files.readString(out, StandardCharsets.UTF_8);
            Files.deleteIfExists(out);
            return new Result(p.exitValue(), output);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Runs a script and fails on a non-zero exit. */
    public String ok(Duration timeout, String script, String... args) {
        Result r = run(timeout, script, args);
        if (r.exit() != 0)
            throw new IllegalStateException(
                    script + " " + String.join(" ", args) + " failed (" + r.exit() + "):\n" + r.output());
        return r.output();
    }

    /** {@code flink <args>}: Flink's CliFrontend against this cluster. */
    public String flink(String... args) {
        return ok(Duration.ofMinutes(3), "flink", args);
    }

    /**
     * The arguments of a job reading {@code topic} of the broker at {@code bootstrap} from its earliest offsets
     * (group {@code g-<id>}, transactional ids {@code t-<id>}) into {@code prefix} of the Redis at {@code redisUrl},
     * checkpointing every 2 s at {@code parallelism}, then {@code more}.
     */
    public static List<String> kafkaJobArgs(
            String bootstrap,
            String topic,
            String id,
            String redisUrl,
            String prefix,
            int parallelism,
            String... more) {
        List<String> args = new java.util.ArrayList<>(List.of(
                "--kafka.bootstrap",
                bootstrap,
                "--kafka.topic",
                topic,
                "--kafka.group-id",
                "g-" + id,
                "--kafka.starting-offsets",
                "earliest",
                "--kafka.transactional-id-prefix",
                "t-" + id,
                "--redis",
                redisUrl,
                "--redis.key-prefix",
                prefix,
                "--checkpoint.interval",
                "2s",
                "--parallelism",
                Integer.toString(parallelism)));
        args.addAll(List.of(more));
        return args;
    }

    /** {@code flink run -d [extra] jar jobArgs}; returns the job id. */
    public String submit(List<String> runOptions, List<String> jobArgs) {
        List<String> args = new ArrayList<>(List.of("run", "-d"));
        args.addAll(runOptions);
        args.add(jobJar().toString());
        args.addAll(jobArgs);
        String out = flink(args.toArray(String[]::new));
        Matcher m = JOB_ID.matcher(out);
        if (!m.find()) throw new IllegalStateException("flink run printed no job id:\n" + out);
        return m.group(1);
    }

    /** {@code flink stop --savepointPath dir jobId}; returns the savepoint's path. */
    public String stopWithSavepoint(String jobId, Path savepoints) {
        String out = flink("stop", "--savepointPath", savepoints.toUri().toString(), jobId);
        Matcher m = SAVEPOINT.matcher(out);
        if (!m.find()) throw new IllegalStateException("flink stop printed no savepoint path:\n" + out);
        return m.group(1);
    }

    public void cancel(String jobId) {
        run(Duration.ofMinutes(2), "flink", "cancel", jobId);
    }

    public void killTaskManager(int n) {
        ok(Duration.ofSeconds(30), "taskmanager.sh", "kill", Integer.toString(n));
    }

    /**
     * Starts TaskManager {@code n} and waits until it is registered; when the JobManager is down too (killed in the
     * same fault slot, restarted by another thread), waits up to 3 minutes for it to run first.
     */
    public void startTaskManager(int n) {
        long deadline = System.nanoTime() + Duration.ofMinutes(3).toNanos();
        while (run(Duration.ofSeconds(30), "jobmanager.sh", "pid").exit() != 0 && System.nanoTime() < deadline) {
            try {
                Thread.sleep(500);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        ok(Duration.ofMinutes(3), "taskmanager.sh", "start", Integer.toString(n));
    }

    public void killJobManager() {
        ok(Duration.ofSeconds(30), "jobmanager.sh", "kill");
    }

    public void startJobManager() {
        ok(Duration.ofMinutes(3), "jobmanager.sh", "start");
    }

    /** The pid of the JobManager process, or empty when none runs. */
    public Optional<Long> jobManagerPid() {
        Result r = run(Duration.ofSeconds(30), "jobmanager.sh", "pid");
        return r.exit() == 0 ? Optional.of(Long.parseLong(r.output().trim())) : Optional.empty();
    }

    /**
     * POST of {@code body} (JSON) to the REST API; returns the answer as JSON. Fails on a status other than
     * 200 and 202.
     */
    public JsonNode restPost(String path, String body) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(
                HttpRequest.newBuilder(URI.create(restUrl + path))
                        .timeout(Duration.ofSeconds(10))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200 && r.statusCode() != 202)
            throw new IllegalStateException("POST " + path + ": " + r.statusCode() + " " + r.body());
        return JSON.readTree(r.body());
    }

    /** The ids of the jobs the JobManager knows, whatever their state. */
    public List<String> jobIds() {
        List<String> ids = new ArrayList<>();
        rest("/jobs")
                .ifPresent(j ->
                        j.path("jobs").forEach(job -> ids.add(job.path("id").asText())));
        return ids;
    }

    /** GET of the REST API as JSON, or empty when it does not answer (e.g. the JobManager is down). */
    public Optional<JsonNode> rest(String path) {
        try {
            HttpResponse<String> r = http.send(
                    HttpRequest.newBuilder(URI.create(restUrl + path))
                            .timeout(Duration.ofSeconds(5))
                            .GET()
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) return Optional.empty();
            return Optional.of(JSON.readTree(r.body()));
        } catch (IOException e) {
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Optional.empty();
        }
    }

    /** The job's state, e.g. RUNNING, RESTARTING, or "?" when the REST API does not know it. */
    public String jobState(String jobId) {
        return rest("/jobs/" + jobId).map(j -> j.path("state").asText("?")).orElse("?");
    }

    /** The job is RUNNING and so is every subtask of every vertex (sources read, state restored). */
    public boolean allRunning(String jobId) {
        Optional<JsonNode> job = rest("/jobs/" + jobId);
        if (job.isEmpty() || !"RUNNING".equals(job.get().path("state").asText())) return false;
        for (JsonNode v : job.get().path("vertices")) {
            if (!"RUNNING".equals(v.path("status").asText())) return false;
        }
        return job.get().path("vertices").size() > 0;
    }

    /** Waits until {@link #allRunning}; returns the time it took. */
    public Duration awaitAllRunning(String jobId, Duration timeout) throws InterruptedException {
        long t0 = System.nanoTime();
        while (!allRunning(jobId)) {
            if (System.nanoTime() - t0 > timeout.toNanos()) {
                throw new AssertionError("job " + jobId + " not running with every task after " + timeout.toSeconds()
                        + " s; state " + jobState(jobId) + "; exceptions: "
                        + rest("/jobs/" + jobId + "/exceptions")
                                .map(String::valueOf)
                                .orElse("?")
                                .lines()
                                .limit(5)
                                .toList());
            }
            Thread.sleep(100);
        }
        return Duration.ofNanos(System.nanoTime() - t0);
    }

    /** The TaskManager ids (tm-N) that run subtasks of the job. */
    public List<String> taskManagersOf(String jobId) {
        List<String> ids = new ArrayList<>();
        rest("/jobs/" + jobId).ifPresent(job -> {
            for (JsonNode v : job.path("vertices")) {
                rest("/jobs/" + jobId + "/vertices/" + v.path("id").asText() + "/taskmanagers")
                        .ifPresent(tms -> {
                            for (JsonNode tm : tms.path("taskmanagers")) {
                                String id = tm.path("taskmanager-id").asText();
                                if (!id.isEmpty() && !ids.contains(id)) ids.add(id);
                            }
                        });
            }
        });
        ids.sort(Comparator.naturalOrder());
        return ids;
    }

    /** The newest complete retained checkpoint of a job (a chk-N folder with its _metadata), if any. */
    public Optional<Path> latestCheckpoint(String jobId) throws IOException {
        Path jobDir = dir.resolve("checkpoints").resolve(jobId);
        if (!Files.isDirectory(jobDir)) return Optional.empty();
        try (Stream<Path> s = Files.list(jobDir)) {
            return s.filter(p -> p.getFileName().toString().matches("chk-\\d+")
                            && Files.isRegularFile(p.resolve("_metadata")))
                    .max(Comparator.comparingLong(
                            p -> Long.parseLong(p.getFileName().toString().substring(4))));
        }
    }

    @Override
    public void close() {
        try {
            run(Duration.ofSeconds(90), "stop.sh");
        } finally {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException ignored) {
                // the JVM is already shutting down
            }
        }
    }
}
