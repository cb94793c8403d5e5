package io.rollcount.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.rollcount.job.JobSettings;
import io.rollcount.job.RollcountJob;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The manifests of {@code k8s/}: every file parses; the {@code FlinkDeployment}, as written and with the
 * parameters of {@code kustomization.yaml} applied, is valid against the Flink Kubernetes Operator's own CRD
 * schema (see {@link FlinkDeploymentSchema}); a broken copy fails with the path of the bad field; every job
 * argument is an option {@code flink run} of this jar accepts (parsed and checked into the job's
 * {@link JobSettings}); the files the job reads are the keys of the mounted Secrets; and the settings the
 * issue asks for are there (application mode with the image's jar, RocksDB incremental checkpoints and
 * savepoints in an object store, Kubernetes HA, upgradeMode savepoint, the Prometheus port declared).
 */
class K8sManifestsTest {
    private static final YAMLMapper YAML = new YAMLMapper();
    private static Path k8s;
    private static FlinkDeploymentSchema schema;

    @BeforeAll
    static void load() throws Exception {
        k8s = RepoFiles.root().resolve("k8s");
        schema = FlinkDeploymentSchema.fromOperatorJar().withFlinkVersion(pomFlinkVersion());
    }

    /** {@code v2_2} for the pom's {@code 2.2.1}: the operator's name of a Flink version. */
    static String pomFlinkVersion() throws Exception {
        String[] v = RepoFiles.rootPomProperty("flink.version").split("\\.");
        return "v" + v[0] + "_" + v[1];
    }

    static List<JsonNode> documents(Path file) throws IOException {
        List<JsonNode> docs = new ArrayList<>();
        try (var it = YAML.readerFor(JsonNode.class).<JsonNode>readValues(file.toFile())) {
            while (it.hasNext()) {
                JsonNode d = it.next();
                if (d != null && !d.isNull() && !d.isMissingNode()) docs.add(d);
            }
        }
        return docs;
    }

    static JsonNode kustomization() throws IOException {
        return documents(k8s.resolve("kustomization.yaml")).get(0);
    }

    /** Every document of the kustomization's resources, by kind/name. */
    static Map<String, JsonNode> resources() throws IOException {
        Map<String, JsonNode> out = new TreeMap<>();
        for (JsonNode r : kustomization().path("resources")) {
            for (JsonNode d : documents(k8s.resolve(r.asText()))) {
                out.put(
                        d.path("kind").asText() + "/"
                                + d.path("metadata").path("name").asText(),
                        d);
            }
        }
        return out;
    }

    static ObjectNode flinkDeployment() throws IOException {
        return (ObjectNode) resources().get("FlinkDeployment/rollcount").deepCopy();
    }

    @Test
    void everyManifestParsesAndTheKustomizationListsEveryOne() throws Exception {
        TreeSet<String> files = new TreeSet<>();
        try (Stream<Path> s = Files.list(k8s)) {
            s.map(p -> p.getFileName().toString())
                    .filter(n -> n.endsWith(".yaml") || n.endsWith(".yml"))
                    .forEach(files::add);
        }
        files.remove("kustomization.yaml");
        TreeSet<String> listed = new TreeSet<>();
        kustomization().path("resources").forEach(r -> listed.add(r.asText()));
        assertThat(listed).as("resources of kustomization.yaml").isEqualTo(files);
        for (String f : files) {
            List<JsonNode> docs = documents(k8s.resolve(f));
            assertThat(docs).as(f).isNotEmpty();
            for (JsonNode d : docs) {
                assertThat(d.path("apiVersion").asText()).as(f + " apiVersion").isNotBlank();
                assertThat(d.path("kind").asText()).as(f + " kind").isNotBlank();
                assertThat(d.path("metadata").path("name").asText())
                        .as(f + " metadata.name")
                        .isNotBlank();
            }
        }
        assertThat(resources())
                .containsKeys("FlinkDeployment/rollcount", "Secret/rollcount-redis", "Secret/rollcount-kafka");
    }

    @Test
    void theFlinkDeploymentIsValidAgainstTheOperatorsCrd() throws Exception {
        ObjectNode d = flinkDeployment();
        assertThat(d.path("apiVersion").asText()).isEqualTo("flink.apache.org/" + FlinkDeploymentSchema.API_VERSION);
        assertThat(schema.violations(d))
                .as("violations of the operator's FlinkDeployment schema")
                .isEmpty();
        assertThat(d.path("spec").path("flinkVersion").asText())
                .as("the pom's Flink version")
                .isEqualTo(pomFlinkVersion());
    }

    @Test
    void theParametersOfTheKustomizationKeepItValid() throws Exception {
        ObjectNode d = flinkDeployment();
        int ops = 0;
        for (JsonNode p : kustomization().path("patches")) {
            assertThat(p.path("target").path("kind").asText()).isEqualTo("FlinkDeployment");
            for (JsonNode op : YAML.readTree(p.path("patch").asText())) {
                JsonPatch.apply(d, op);
                ops++;
            }
        }
        assertThat(ops).as("parameters patched").isGreaterThanOrEqualTo(4);
        assertThat(schema.violations(d))
                .as("violations after the kustomization's patches")
                .isEmpty();
        assertThat(d.path("spec").path("job").path("parallelism").isInt()).isTrue();
    }

    @Test
    void aBrokenManifestFailsWithThePathOfTheBadField() throws Exception {
        ObjectNode badEnum = flinkDeployment();
        ((ObjectNode) badEnum.path("spec").path("job")).put("upgradeMode", "sometimes");
        assertThat(schema.violations(badEnum)).singleElement().asString().startsWith("$.spec.job.upgradeMode: ");

        ObjectNode badType = flinkDeployment();
        ((ObjectNode) badType.path("spec").path("taskManager").path("resource")).put("cpu", "two");
        assertThat(schema.violations(badType))
                .singleElement()
                .asString()
                .startsWith("$.spec.taskManager.resource.cpu: ");

        ObjectNode misspelt = flinkDeployment();
        ((ObjectNode) misspelt.path("spec").path("job")).put("paralellism", 4);
        assertThat(schema.violations(misspelt))
                .singleElement()
                .asString()
                .startsWith("$.spec.job: ")
                .contains("paralellism");

        ObjectNode badPort = flinkDeployment();
        ((ObjectNode) badPort.path("spec")
                        .path("podTemplate")
                        .path("spec")
                        .path("containers")
                        .path(0)
                        .path("ports")
                        .path(0))
                .put("containerPort", "nine-two-four-nine");
        assertThat(schema.violations(badPort))
                .singleElement()
                .asString()
                .startsWith("$.spec.podTemplate.spec.containers[0].ports[0].containerPort: ");

        // without the widening, the published 1.10.0 enum refuses Flink 2 (why withFlinkVersion exists)
        assertThat(FlinkDeploymentSchema.fromOperatorJar().flinkVersions()).doesNotContain(pomFlinkVersion());
    }

    @Test
    void everyJobArgumentIsAnOptionFlinkRunOfThisJarAccepts() throws Exception {
        JsonNode job = flinkDeployment().path("spec").path("job");
        assertThat(job.path("entryClass").asText()).isEqualTo(RollcountJob.class.getName());
        List<String> args = new ArrayList<>();
        job.path("args").forEach(a -> args.add(a.asText()));
        assertThat(args).contains("--redis.password-file", "--kafka.properties");
        JobSettings options = parse(args);
        assertThat(options.kafkaConfigured()).isTrue();

        List<String> misspelt = new ArrayList<>(args);
        misspelt.add("--paralellism");
        misspelt.add("4");
        assertThatThrownBy(() -> parse(misspelt)).hasMessageContaining("--paralellism");
    }

    /** What RollcountJob.main does with its arguments before it builds the job: its settings, made and checked. */
    static JobSettings parse(List<String> args) {
        return JobSettings.of(args.toArray(String[]::new));
    }

    @Test
    void theFilesTheJobReadsAreKeysOfTheMountedSecrets() throws Exception {
        ObjectNode d = flinkDeployment();
        Map<String, JsonNode> resources = resources();
        JobSettings options = parse(argsOf(d));
        JsonNode pod = d.path("spec").path("podTemplate").path("spec");
        for (String file : List.of(options.redis.passwordFile(), options.kafkaProperties)) {
            Path p = Path.of(file);
            String dir = p.getParent().toString();
            String key = p.getFileName().toString();
            JsonNode mount = null;
            for (JsonNode m : pod.path("containers").path(0).path("volumeMounts"))
                if (m.path("mountPath").asText().equals(dir)) mount = m;
            assertThat(mount).as("a volume mounted at %s (for %s)", dir, file).isNotNull();
            JsonNode volume = null;
            for (JsonNode v : pod.path("volumes"))
                if (v.path("name").asText().equals(mount.path("name").asText())) volume = v;
            assertThat(volume).as("volume %s", mount.path("name")).isNotNull();
            String secret = volume.path("secret").path("secretName").asText();
            JsonNode s = resources.get("Secret/" + secret);
            assertThat(s).as("Secret %s of the kustomization", secret).isNotNull();
            assertThat(s.path("stringData").has(key) || s.path("data").has(key))
                    .as("Secret %s has key %s", secret, key)
                    .isTrue();
        }
        assertThat(pod.path("containers").path(0).path("name").asText()).isEqualTo("flink-main-container");
    }

    @Test
    void theDeploymentHasTheSettingsOfAProductionRun() throws Exception {
        JsonNode spec = flinkDeployment().path("spec");
        JsonNode conf = spec.path("flinkConfiguration");
        assertThat(spec.path("job").path("jarURI").asText())
                .as("the jar the image holds (deploy/Dockerfile)")
                .isEqualTo("local:///opt/flink/usrlib/rollcount-job.jar");
        assertThat(Files.readString(RepoFiles.root().resolve("deploy/Dockerfile")))
                .contains(" /opt/flink/usrlib/rollcount-job.jar");
        assertThat(spec.path("job").path("upgradeMode").asText()).isEqualTo("savepoint");
        assertThat(spec.path("mode").asText()).isEqualTo("native");
        assertThat(conf.path("state.backend.type").asText()).isEqualTo("rocksdb");
        assertThat(conf.path("execution.checkpointing.incremental").asText()).isEqualTo("true");
        for (String dir : List.of(
                "execution.checkpointing.dir",
                "execution.checkpointing.savepoint-dir",
                "high-availability.storageDir")) {
            assertThat(conf.path(dir).asText())
                    .as(dir + ": an object store URI")
                    .matches("(s3|s3a|s3p|gs|abfss|wasbs|oss)://.+");
        }
        assertThat(conf.path("high-availability.type").asText()).isEqualTo("kubernetes");
        // restarts are bounded as the manifest's comment says (exponential-delay alone retries for ever)
        assertThat(conf.path(org.apache.flink.configuration.RestartStrategyOptions.RESTART_STRATEGY.key())
                        .asText())
                .isEqualTo("exponential-delay");
        String attempts = conf.path(
                        org.apache.flink.configuration.RestartStrategyOptions
                                .RESTART_STRATEGY_EXPONENTIAL_DELAY_ATTEMPTS
                                .key())
                .asText();
        assertThat(attempts)
                .as("restart-strategy.exponential-delay.attempts-before-reset-backoff")
                .matches("[1-9][0-9]*");
        assertThat(Files.readString(RepoFiles.root().resolve("k8s/flinkdeployment.yaml")))
                .contains("At most " + attempts + " restarts");
        assertThat(conf.path("metrics.reporter.prom.factory.class").asText())
                .isEqualTo("org.apache.flink.metrics.prometheus.PrometheusReporterFactory");
        String port = conf.path("metrics.reporter.prom.port").asText();
        boolean declared = false;
        for (JsonNode p :
                spec.path("podTemplate").path("spec").path("containers").path(0).path("ports")) {
            declared |= p.path("containerPort").asText().equals(port)
                    && p.path("name").asText().equals("metrics");
        }
        assertThat(declared).as("container port %s named metrics", port).isTrue();
    }

    static List<String> argsOf(JsonNode d) {
        List<String> args = new ArrayList<>();
        d.path("spec").path("job").path("args").forEach(a -> args.add(a.asText()));
        return args;
    }

    /** The JSON Patch (RFC 6902) operations kustomize's patches use here: add, replace, remove, on object fields. */
    static final class JsonPatch {
        private JsonPatch() {}

        static void apply(ObjectNode doc, JsonNode op) {
            String path = op.path("path").asText();
            String[] parts = path.substring(1).split("/");
            JsonNode parent = doc;
            for (int i = 0; i < parts.length - 1; i++) parent = parent.path(unescape(parts[i]));
            if (!(parent instanceof ObjectNode o))
                throw new IllegalArgumentException("patch path " + path + ": no object at its parent");
            String field = unescape(parts[parts.length - 1]);
            switch (op.path("op").asText()) {
                case "add" -> o.set(field, op.path("value"));
                case "replace" -> {
                    if (!o.has(field))
                        throw new IllegalArgumentException("patch path " + path + ": nothing to replace");
                    o.set(field, op.path("value"));
                }
                case "remove" -> o.remove(field);
                default -> throw new IllegalArgumentException("patch op " + op.path("op") + " is not supported here");
            }
        }

        private static String unescape(String s) {
            return s.replace("~1", "/").replace("~0", "~");
        }
    }
}
