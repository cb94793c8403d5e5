package io.rollcount.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;

/**
 * What can be checked of {@code deploy/Dockerfile} without a Docker engine (none is available here): its base
 * is the official Flink image of the pom's Flink version on Java 17, it copies the jar the build makes to
 * {@code /opt/flink/usrlib/rollcount-job.jar} (where k8s/ points the operator), and it switches on the
 * Prometheus reporter whose factory class is the one of the pom's {@code flink-metrics-prometheus}.
 */
class DeployFilesTest {
    private static final Pattern FROM = Pattern.compile("(?m)^FROM\\s+(\\S+)\\s*$");
    private static final Pattern COPY = Pattern.compile("(?m)^COPY\\s+(?:--\\S+\\s+)*(\\S+)\\s+(\\S+)\\s*$");

    @Test
    void theBaseImageIsTheOfficialFlinkImageOfThePomsFlinkVersionOnJava17() throws Exception {
        String dockerfile = Files.readString(RepoFiles.root().resolve("deploy/Dockerfile"));
        Matcher from = FROM.matcher(dockerfile);
        assertThat(from.find()).as("a FROM line").isTrue();
        assertThat(from.group(1)).isEqualTo("flink:" + RepoFiles.rootPomProperty("flink.version") + "-java17");
        assertThat(from.find()).as("one stage only").isFalse();
    }

    @Test
    void theJarCopiedToUsrlibIsTheShadedJarTheBuildMakes() throws Exception {
        String dockerfile = Files.readString(RepoFiles.root().resolve("deploy/Dockerfile"));
        Matcher copy = COPY.matcher(dockerfile);
        assertThat(copy.find()).as("a COPY line").isTrue();
        assertThat(copy.group(2)).isEqualTo("/opt/flink/usrlib/rollcount-job.jar");
        assertThat(copy.group(1)).isEqualTo(builtJar());
        assertThat(copy.find()).as("one COPY only").isFalse();
    }

    @Test
    void thePrometheusReporterIsSwitchedOnWithTheFactoryOfThePomsReporter() throws Exception {
        String dockerfile = Files.readString(RepoFiles.root().resolve("deploy/Dockerfile"));
        assertThat(dockerfile)
                .contains(
                        "metrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory",
                        "metrics.reporter.prom.port: 9249",
                        "EXPOSE 9249");
        // flink-metrics-prometheus of the pom's Flink version is on the test class path (test scope)
        Class<?> factory = Class.forName("org.apache.flink.metrics.prometheus.PrometheusReporterFactory");
        assertThat(org.apache.flink.metrics.reporter.MetricReporterFactory.class)
                .isAssignableFrom(factory);
    }

    /**
     * The path, relative to the repository root, of the shaded jar {@code mvn package} leaves in the job module: the
     * shade plugin's {@code <outputFile>}, {@code ${project.build.directory}/<name>.jar} (the module's own artifact
     * stays the plain jar), with no classifier.
     */
    static String builtJar() throws Exception {
        Path jobPom = RepoFiles.root().resolve("job/pom.xml");
        Document pom = RepoFiles.pom(jobPom);
        Element shade = null;
        var plugins = pom.getElementsByTagName("plugin");
        for (int i = 0; i < plugins.getLength(); i++) {
            Element p = (Element) plugins.item(i);
            if ("maven-shade-plugin"
                    .equals(p.getElementsByTagName("artifactId")
                            .item(0)
                            .getTextContent()
                            .trim())) shade = p;
        }
        assertThat(shade).as("the shade plugin in job/pom.xml").isNotNull();
        for (String other : List.of("shadedArtifactAttached", "outputDirectory", "shadedClassifierName", "finalName")) {
            assertThat(shade.getElementsByTagName(other).getLength())
                    .as("the shade plugin names its jar by <outputFile> only (no <%s>)", other)
                    .isZero();
        }
        assertThat(shade.getElementsByTagName("outputFile").getLength())
                .as("one <outputFile>")
                .isOne();
        String outputFile = shade.getElementsByTagName("outputFile")
                .item(0)
                .getTextContent()
                .trim();
        String dir = "${project.build.directory}/";
        assertThat(outputFile)
                .as("the shaded jar in the job module's target/")
                .startsWith(dir)
                .endsWith(".jar");
        return "job/target/" + outputFile.substring(dir.length());
    }

    /**
     * The build context (the repository root) holds the jar the Dockerfile copies and nothing of .git, .rollcount/ or
     * any other target/ folder: the root's .dockerignore, read as Docker does (each path against every pattern in
     * order, the last that matches it or a folder above it deciding; '!' includes again).
     */
    @Test
    void theDockerBuildContextHoldsTheJarAndLeavesOutGitRunFilesAndOtherBuildOutput() throws Exception {
        List<String> patterns = Files.readAllLines(RepoFiles.root().resolve(".dockerignore")).stream()
                .map(String::trim)
                .filter(l -> !l.isEmpty() && !l.startsWith("#"))
                .toList();
        assertThat(inContext(patterns, "job/target/rollcount-job.jar")).isTrue();
        for (String out : List.of(
                ".git/HEAD",
                ".git/objects/ab/cdef",
                ".rollcount/checkpoints/rc/chk-1/_metadata",
                ".rollcount/tmp/run-1/x",
                "job/target/classes/io/rollcount/job/RollcountJob.class",
                "job/target/local-cluster-1234/log/jobmanager.log",
                "cli/target/rollcount-cli.jar",
                "deploy/local-cluster/target/lib/flink-runtime-2.2.1.jar",
                "README.md")) {
            assertThat(inContext(patterns, out)).as(out).isFalse();
        }
    }

    /** Whether Docker sends {@code path} with the build context, given the .dockerignore {@code patterns}. */
    static boolean inContext(List<String> patterns, String path) {
        boolean included = true;
        for (String p : patterns) {
            boolean negated = p.startsWith("!");
            String glob = negated ? p.substring(1) : p;
            Pattern re = Pattern.compile(globRegex(glob));
            String at = path;
            boolean matches = false;
            while (!at.isEmpty()) {
                if (re.matcher(at).matches()) {
                    matches = true;
                    break;
                }
                int slash = at.lastIndexOf('/');
                at = slash < 0 ? "" : at.substring(0, slash);
            }
            if (matches) included = negated;
        }
        return included;
    }

    /** Go's filepath.Match with Docker's {@code **}: {@code *} within a path element, {@code **} across them. */
    private static String globRegex(String glob) {
        StringBuilder re = new StringBuilder();
        for (int i = 0; i < glob.length(); i++) {
            char c = glob.charAt(i);
            if (c == '*' && i + 1 < glob.length() && glob.charAt(i + 1) == '*') {
                re.append(".*");
                i++;
            } else if (c == '*') re.append("[^/]*");
            else if (c == '?') re.append("[^/]");
            else re.append(Pattern.quote(String.valueOf(c)));
        }
        return re.toString();
    }
}
