package io.rollcount.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.support.RedisTestSupport;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The commands of the documentation's {@code bash}/{@code sh} blocks (README.md and docs/*.md) work as written: each
 * one runs here through the real {@code ./rollcount} script at the repository root, against the real Redis at
 * 127.0.0.1:6379, and must exit 0 and print what it is for, or is listed in {@link #NOT_RUN} with the reason, or in
 * {@link #SHORTER} with the shorter form the test runs (the documentation says so beside it). A command of the
 * documentation that is none of these fails the test until it is classified, and so does a listed command that is no
 * longer in the documentation. The {@code --help} of every command and subcommand {@code ./rollcount --help} lists
 * runs too.
 *
 * <p>Every command that reads or writes Redis gets a key prefix of this test's own: {@code --redis.key-prefix V}
 * becomes {@code <own>-V}, and a command without one gets {@code <own>-rc} (the default prefix, mapped the same way),
 * so that a query after a run reads what that run wrote. {@code ./rollcount run} gets a dead-letter file and a
 * checkpoint folder in a temporary folder. Tagged {@code cluster} because it needs the packaged jars
 * ({@code cli/target/rollcount-cli.jar} and {@code classpath.txt}): the cluster-tests profile runs it after
 * {@code package}.
 */
@Tag("cluster")
class DocsCommandsIT {
    /** Why the commands after it are not run. */
    private record Reason(String why, String... commands) {}

    /** Documentation commands the test does not run (whitespace collapsed, comment dropped), by reason. */
    private static final List<Reason> REASONS = List.of(
            new Reason("the whole test suite, this test included", "tools/test.sh", "mvn -B verify -Pcluster-tests"),
            new Reason("the build whose jars this test runs", "mvn -B -DskipTests package"),
            new Reason(
                    "examples of running one test class with Maven (this test runs in the same suite)",
                    "mvn -B -pl job -am test -Dtest=PreAggregateTest",
                    "mvn -B -pl job -am verify -Dit.test=PipelineIT -Dtest=none"),
            new Reason(
                    "needs a Flink cluster, Kafka, a TLS Redis and S3 at example addresses",
                    "flink run job/target/rollcount-job.jar --kafka.bootstrap broker:9092 --redis"
                            + " rediss://rollcount@redis:6380 --redis.password-file /etc/rollcount/redis.pass"
                            + " --checkpoint.dir s3://bucket/rollcount --kafka.transactional-id-prefix rollcount-prod"),
            new Reason(
                    "needs a Docker engine and a registry",
                    "docker build -f deploy/Dockerfile -t rollcount:0.1.0 . && docker push ..."),
            new Reason(
                    "needs a Kubernetes cluster with the Flink operator",
                    "kubectl apply -k k8s/",
                    "kubectl -n rollcount get flinkdeployment rollcount"),
            new Reason(
                    "needs a Redis Cluster at example addresses (RedisClusterCommandsIT runs run and query on one)",
                    "./rollcount run --input samples/events.jsonl.gz --bounded --redis.cluster --redis"
                            + " redis://rollcount@10.0.0.1:7000,10.0.0.2:7000,10.0.0.3:7000 --redis.password-file"
                            + " /etc/rollcount/redis.pass",
                    "./rollcount query post:0:likes --redis.cluster --redis redis://10.0.0.1:7000,10.0.0.2:7000"),
            new Reason(
                    "a benchmark of minutes to hours (JobBenchTest runs bench job at its tiny size)",
                    "./rollcount bench job",
                    "./rollcount bench job --quick",
                    "./rollcount bench job --only-ours zipf --no-redis",
                    "./rollcount bench job --only-kafka --policies none",
                    "./rollcount bench job --only-ours zipf --with-floor",
                    "./rollcount bench job --quick --only-ours uniform --with-floor",
                    "./rollcount bench job --quick --only-ours viral --with-floor",
                    "./rollcount bench job --quick --no-kafka"),
            new Reason(
                    "a benchmark meant to take up to 30 minutes (PeersBenchIT runs bench peers at a tiny size)",
                    "./rollcount bench peers --workload zipf"),
            new Reason(
                    "a benchmark of 15 to 30 minutes (GrowthBenchTest checks its arithmetic)",
                    "ROLLCOUNT_JAVA_OPTS=\"-Xmx8g -XX:+UseParallelGC\" ./rollcount bench growth --sizes 1M,4M,16M"
                            + " --events-per-counter 0.1 --no-redis",
                    "./rollcount bench growth --sizes 1M,4M --events-per-counter 0.5"),
            new Reason(
                    "a benchmark of hours (GrowthTailIT runs its tail scenario at 50k counters)",
                    "ROLLCOUNT_JAVA_OPTS=\"-Xmx8g -XX:+UseParallelGC\" ./rollcount bench growth --scenario tail"),
            new Reason(
                    "a JMH benchmark of about 3 minutes (it builds the sketches module with Maven first)",
                    "./rollcount bench sketches"),
            new Reason(
                    "starts or stops the local multi-process cluster (the cluster tests run it)",
                    "deploy/local-cluster/start.sh",
                    "deploy/local-cluster/stop.sh"),
            new Reason(
                    "needs the local multi-process cluster (and Kafka, a running job's id or a savepoint)",
                    "deploy/local-cluster/flink run job/target/rollcount-job.jar --input $PWD/samples/events.jsonl.gz"
                            + " --dlq $PWD/rollcount-dlq.jsonl",
                    "deploy/local-cluster/flink list -a",
                    "deploy/local-cluster/flink run -d job/target/rollcount-job.jar --kafka.bootstrap 127.0.0.1:9092"
                            + " --kafka.transactional-id-prefix rc-local --checkpoint.interval 5s",
                    "deploy/local-cluster/flink list",
                    "deploy/local-cluster/flink stop --savepointPath file://$PWD/.rollcount/cluster/savepoints"
                            + " <job id>",
                    "deploy/local-cluster/flink run -d -s <savepoint path it printed> job/target/rollcount-job.jar"
                            + " --kafka.bootstrap 127.0.0.1:9092 --kafka.transactional-id-prefix rc-local"
                            + " --parallelism 3",
                    "deploy/local-cluster/flink cancel <job id>"),
            new Reason(
                    "the application-mode HA walk-through: ZooKeeper, an application cluster, a job's id and its"
                            + " savepoint (ApplicationModeHaIT runs it)",
                    "deploy/local-cluster/zookeeper.sh start",
                    "deploy/local-cluster/start-application.sh --zookeeper 127.0.0.1:2181 -- --kafka.bootstrap"
                            + " 127.0.0.1:9092 --kafka.transactional-id-prefix rc-app --checkpoint.interval 5s",
                    "deploy/local-cluster/jobmanager.sh kill",
                    "deploy/local-cluster/jobmanager.sh start",
                    "curl -X POST -H 'Content-Type: application/json' -d"
                            + " '{\"targetDirectory\":\"file:///tmp/sp\",\"drain\":false}'"
                            + " http://127.0.0.1:8081/jobs/<job id>/stop",
                    "ROLLCOUNT_CLUSTER_DIR=.rollcount/cluster-2 deploy/local-cluster/start-application.sh"
                            + " --zookeeper 127.0.0.1:2181 --from-savepoint file:///tmp/sp/savepoint-... -- ...",
                    "deploy/local-cluster/zookeeper.sh stop"));

    /** Each command of {@link #REASONS} with its reason. */
    static final Map<String, String> NOT_RUN = notRun();

    private static Map<String, String> notRun() {
        Map<String, String> out = new HashMap<>();
        for (Reason r : REASONS)
            for (String c : r.commands)
                if (out.put(c, r.why) != null) throw new IllegalStateException("listed twice: " + c);
        return Map.copyOf(out);
    }

    /** Long documentation commands the test runs in a shorter form (the documentation says so beside each). */
    static final Map<String, String> SHORTER =
            Map.of("./rollcount demo --duration 30s", "./rollcount demo --duration 15s");

    /** The {@code ./rollcount} commands run as the documentation writes them. */
    private static final Set<String> RUNNABLE = Set.of("query", "top", "run");

    /** The {@code ./rollcount} commands that take {@code --redis.key-prefix}. */
    private static final Set<String> WITH_KEY_PREFIX = Set.of("demo", "run", "query", "top", "rebuild-redis");

    /** What a command's output must contain, by its first two words (e.g. {@code ./rollcount query}). */
    private static final Map<String, Pattern> EXPECTED = Map.of(
            "./rollcount demo", Pattern.compile("(?s)stopped after .*events produced +[1-9]"),
            "./rollcount run", Pattern.compile("(?s)events read +[1-9].*counted +[1-9].*Redis keys written +[1-9]"),
            "./rollcount query", Pattern.compile("(?m)^\\S+ +total [1-9]|\"total\":[1-9]"),
            "./rollcount top", Pattern.compile("(?m)^trending in |\"trending\":\\{\"at\":[1-9]"),
            "/usr/bin/python3 examples/python/read_counts.py", Pattern.compile("\"total\": [1-9]"));

    private static final Pattern FENCE = Pattern.compile("^```(\\S*)\\s*$");
    private static final Set<String> SHELL = Set.of("bash", "sh", "shell");

    @TempDir
    Path dir;

    @Test
    void everyCommandOfTheDocumentationRunsOrIsListedWithItsReason() throws Exception {
        Path root = RepoFiles.root();
        assertJarsBuilt(root);
        List<DocCommand> commands = commands(root);
        assertThat(commands).as("commands found in the documentation").isNotEmpty();

        List<String> unclassified = new ArrayList<>();
        Set<String> seen = new TreeSet<>();
        List<DocCommand> toRun = new ArrayList<>();
        for (DocCommand c : commands) {
            seen.add(c.text);
            if (NOT_RUN.containsKey(c.text)) continue;
            if (SHORTER.containsKey(c.text) || runnable(c.text)) toRun.add(c);
            else unclassified.add(c.where + ": " + c.text);
        }
        assertThat(unclassified)
                .as("commands of the documentation neither run by this test nor listed in NOT_RUN with a reason")
                .isEmpty();
        Set<String> stale = new TreeSet<>(NOT_RUN.keySet());
        stale.addAll(SHORTER.keySet());
        stale.removeAll(seen);
        assertThat(stale).as("listed commands no longer in the documentation").isEmpty();

        String own = "dc" + Long.toHexString(System.nanoTime() & 0xffffffL);
        Set<String> prefixes = new LinkedHashSet<>();
        try (RedisTestSupport redis = new RedisTestSupport()) {
            try {
                int n = 0;
                for (DocCommand c : toRun) {
                    String text = SHORTER.getOrDefault(c.text, c.text);
                    List<String> args = withOwnPaths(words(text), own, prefixes, n++);
                    Result r = run(root, args);
                    String what = c.where + ": " + String.join(" ", args);
                    assertThat(r.code).as("exit code of %s%n%s", what, r.output).isZero();
                    Pattern expected = expected(args);
                    if (expected != null)
                        assertThat(expected.matcher(r.output).find())
                                .as("%s printed %s:%n%s", what, expected, r.output)
                                .isTrue();
                }
            } finally {
                for (String p : prefixes) RedisTestSupport.deleteAll(redis.jedis, p);
            }
        }
    }

    /** {@code ./rollcount --help}, and the help of every command and subcommand it lists, each exit 0 and its usage. */
    @Test
    void everyCommandHasItsHelp() throws Exception {
        Path root = RepoFiles.root();
        assertJarsBuilt(root);
        List<String> done = helpOf(root, List.of());
        assertThat(done).contains("demo", "run", "query", "top", "bench", "bench job", "bench peers", "bench growth");
    }

    /** The commands under {@code path} whose help was checked, depth first. */
    private List<String> helpOf(Path root, List<String> path) throws Exception {
        List<String> args = new ArrayList<>(List.of("./rollcount"));
        args.addAll(path);
        args.add("--help");
        Result r = run(root, args);
        String usage = "Usage: rollcount" + (path.isEmpty() ? "" : " " + String.join(" ", path)) + " ";
        assertThat(r.code).as("exit code of %s%n%s", args, r.output).isZero();
        assertThat(r.output).as(String.join(" ", args)).contains(usage);
        List<String> done = new ArrayList<>();
        int at = r.output.indexOf("\nCommands:\n");
        if (at < 0) return done;
        Matcher m = Pattern.compile("(?m)^  (\\S+)  ").matcher(r.output.substring(at));
        while (m.find()) {
            if (m.group(1).equals("help")) continue;
            List<String> sub = new ArrayList<>(path);
            sub.add(m.group(1));
            done.add(String.join(" ", sub));
            done.addAll(helpOf(root, sub));
        }
        return done;
    }

    /** The script would build (Maven) when its jar is missing or older than a source: the test needs them built. */
    private static void assertJarsBuilt(Path root) throws IOException {
        Path jar = root.resolve("cli/target/rollcount-cli.jar");
        assertThat(jar).as("run mvn package first").exists();
        assertThat(root.resolve("cli/target/classpath.txt"))
                .as("run mvn package first")
                .exists();
        long built = Files.getLastModifiedTime(jar).toMillis();
        List<Path> sources = new ArrayList<>(List.of(root.resolve("pom.xml")));
        try (Stream<Path> top = Files.list(root)) {
            for (Path module : top.filter(Files::isDirectory).toList()) {
                if (Files.isRegularFile(module.resolve("pom.xml"))) sources.add(module.resolve("pom.xml"));
                if (Files.isDirectory(module.resolve("src/main"))) {
                    try (Stream<Path> s = Files.walk(module.resolve("src/main"))) {
                        s.filter(Files::isRegularFile).forEach(sources::add);
                    }
                }
            }
        }
        List<String> newer = new ArrayList<>();
        for (Path p : sources) if (Files.getLastModifiedTime(p).toMillis() > built) newer.add(root.relativize(p) + "");
        assertThat(newer)
                .as("sources newer than cli/target/rollcount-cli.jar (./rollcount would build): run mvn package first")
                .isEmpty();
    }

    /** A command's words with this test's key prefixes, dead-letter file and checkpoint folder. */
    private List<String> withOwnPaths(List<String> words, String own, Set<String> prefixes, int n) {
        List<String> args = new ArrayList<>(words);
        if (args.get(0).equals("./rollcount") && args.size() > 1 && WITH_KEY_PREFIX.contains(args.get(1))) {
            int i = args.indexOf("--redis.key-prefix");
            if (i < 0) {
                args.addAll(List.of("--redis.key-prefix", own + "-rc"));
                i = args.size() - 2;
            } else args.set(i + 1, own + "-" + args.get(i + 1));
            prefixes.add(args.get(i + 1));
            if (args.get(1).equals("run")) {
                args.addAll(List.of("--dlq", dir.resolve("dlq-" + n + ".jsonl").toString()));
                args.addAll(List.of(
                        "--checkpoint.dir", dir.resolve("checkpoints").toUri().toString()));
            }
        }
        if (args.size() > 1 && args.get(1).startsWith("examples/python/")) {
            int i = args.indexOf("--prefix");
            if (i < 0) args.addAll(2, List.of("--prefix", own + "-rc"));
            else args.set(i + 1, own + "-" + args.get(i + 1));
        }
        return args;
    }

    /**
     * The commands the test runs as written: the reading examples and the {@code ./rollcount} commands that end by
     * themselves in seconds (any other, e.g. {@code kafka} that runs until stopped, must be listed).
     */
    private static boolean runnable(String command) {
        List<String> w = words(command);
        return w.size() > 1
                && (w.get(0).equals("./rollcount") && RUNNABLE.contains(w.get(1))
                        || w.get(0).equals("/usr/bin/python3") && w.get(1).startsWith("examples/python/"));
    }

    private static Pattern expected(List<String> args) {
        return args.size() < 2 ? null : EXPECTED.get(args.get(0) + " " + args.get(1));
    }

    private record Result(int code, String output) {}

    /** Runs {@code args} in the repository root, standard output and error together, within 3 minutes. */
    private Result run(Path root, List<String> args) throws Exception {
        Path out = Files.createTempFile(dir, "out", ".txt");
        Process p = new ProcessBuilder(args)
                .directory(root.toFile())
                .redirectErrorStream(true)
                .redirectOutput(out.toFile())
                .start();
        long started = System.nanoTime();
        if (!p.waitFor(3, TimeUnit.MINUTES)) {
            p.destroy();
            if (!p.waitFor(30, TimeUnit.SECONDS)) p.destroyForcibly().waitFor();
            throw new AssertionError(
                    String.join(" ", args) + " did not end within 3 minutes (a command that runs until stopped "
                            + "belongs in NOT_RUN or SHORTER):\n" + Files.readString(out));
        }
        System.out.printf(
                "%5.1f s  exit %d  %s%n", (System.nanoTime() - started) / 1e9, p.exitValue(), String.join(" ", args));
        return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8));
    }

    /** A command of the documentation: where it is, and its text with continuations joined and comment dropped. */
    record DocCommand(String where, String text) {}

    /** Every command of the shell blocks of README.md and docs/*.md, in file order (README.md first). */
    static List<DocCommand> commands(Path root) throws IOException {
        List<Path> docs = new ArrayList<>(List.of(root.resolve("README.md")));
        try (Stream<Path> s = Files.list(root.resolve("docs"))) {
            s.filter(p -> p.toString().endsWith(".md")).sorted().forEach(docs::add);
        }
        List<DocCommand> out = new ArrayList<>();
        for (Path doc : docs) {
            List<String> lines = Files.readAllLines(doc);
            String lang = null;
            StringBuilder command = new StringBuilder();
            int start = 0;
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i);
                Matcher fence = FENCE.matcher(line);
                if (fence.matches()) {
                    lang = lang == null ? fence.group(1) : null;
                    continue;
                }
                if (lang == null || !SHELL.contains(lang)) continue;
                if (command.length() == 0) start = i + 1;
                String code = withoutComment(line).stripTrailing();
                if (code.endsWith("\\")) {
                    command.append(code, 0, code.length() - 1).append(' ');
                    continue;
                }
                command.append(code);
                String text = command.toString().trim().replaceAll("\\s+", " ");
                command.setLength(0);
                if (!text.isEmpty()) out.add(new DocCommand(root.relativize(doc) + ":" + start, text));
            }
        }
        return out;
    }

    /** The line up to a shell comment: a '#' that begins a word outside quotes. */
    static String withoutComment(String line) {
        char quote = 0;
        for (int i = 0; i < line.length(); i++) {
            char c = line.charAt(i);
            if (quote != 0) {
                if (c == quote) quote = 0;
            } else if (c == '\'' || c == '"') quote = c;
            else if (c == '#' && (i == 0 || Character.isWhitespace(line.charAt(i - 1)))) return line.substring(0, i);
        }
        return line;
    }

    /** A command's words, as the shell splits them (quotes removed; no variables: none of the commands run has one). */
    static List<String> words(String command) {
        List<String> words = new ArrayList<>();
        StringBuilder w = new StringBuilder();
        boolean inWord = false;
        char quote = 0;
        for (char c : command.toCharArray()) {
            if (quote != 0) {
                if (c == quote) quote = 0;
                else w.append(c);
            } else if (c == '\'' || c == '"') {
                quote = c;
                inWord = true;
            } else if (Character.isWhitespace(c)) {
                if (inWord) words.add(w.toString());
                w.setLength(0);
                inWord = false;
            } else {
                w.append(c);
                inWord = true;
            }
        }
        if (inWord) words.add(w.toString());
        return words;
    }
}
