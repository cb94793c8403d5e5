package io.rollcount.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The shaded job jar ({@code job/target/rollcount-job.jar}, what {@code flink run} and the image run) holds the job
 * and what it needs at run time, and nothing of the command line, the benchmark harness, the event generator, the
 * in-process Kafka broker or the test fixtures. The reactor packages the job module before this module's tests run.
 */
class JobJarContentsTest {
    private static final Path JOB_MODULE = Path.of("..", "job").toAbsolutePath().normalize();

    /** Entry prefixes that belong to the cli, devservices and test-support modules (and their dependencies), never to the job jar. */
    private static final List<String> NOT_IN_THE_JOB = List.of(
            "io/rollcount/cli/",
            "io/rollcount/bench/",
            "io/rollcount/job/gen/",
            "io/rollcount/job/kafka/KafkaBroker",
            "io/rollcount/job/support/",
            "io/rollcount/job/redis/RedisServerProcess",
            "io/rollcount/job/redis/RedisClusterProcesses",
            "kafka/server/",
            "kafka/tools/",
            "org/apache/kafka/common/test/",
            "scala/",
            "org/apache/flink/table/",
            "org/apache/flink/connector/datagen/",
            "org/junit/",
            "log4j2-cli.properties",
            "log4j2-test.properties");

    static Set<String> entries;

    @BeforeAll
    static void readTheJar() throws IOException {
        Path jar = JOB_MODULE.resolve("target/rollcount-job.jar");
        assertThat(jar)
                .as("the shaded job jar: package the job module first (mvn -B -DskipTests package)")
                .isRegularFile();
        try (JarFile j = new JarFile(jar.toFile())) {
            entries =
                    Collections.list(j.entries()).stream().map(e -> e.getName()).collect(Collectors.toSet());
            assertThat(j.getManifest().getMainAttributes().getValue("Main-Class"))
                    .isEqualTo("io.rollcount.job.RollcountJob");
        }
    }

    @Test
    void holdsNoClassOfTheCommandLineTheBenchTheGeneratorTheBrokerOrTheFixtures() {
        List<String> misplaced = entries.stream()
                .filter(e -> NOT_IN_THE_JOB.stream().anyMatch(e::startsWith))
                .sorted()
                .toList();
        assertThat(misplaced)
                .as("entries of the job jar that are not the job's")
                .isEmpty();
    }

    @Test
    void holdsEveryClassAndResourceOfTheJobModuleAndWhatItRunsWith() throws IOException {
        Path classes = JOB_MODULE.resolve("target/classes");
        List<String> own;
        try (Stream<Path> files = Files.walk(classes)) {
            own = files.filter(Files::isRegularFile)
                    .map(f -> classes.relativize(f).toString().replace('\\', '/'))
                    .sorted()
                    .toList();
        }
        assertThat(own).as("the job module's classes").contains("io/rollcount/job/RollcountJob.class");
        assertThat(entries).as("the job module's classes and resources").containsAll(own);
        // Bundled dependencies (Flink itself is provided by the cluster).
        assertThat(entries)
                .contains(
                        "io/rollcount/sketches/RedisHyperLogLog.class",
                        "org/apache/flink/connector/kafka/source/KafkaSource.class",
                        "org/apache/kafka/clients/producer/KafkaProducer.class",
                        "redis/clients/jedis/Jedis.class",
                        "picocli/CommandLine.class");
        assertThat(entries).noneMatch(e -> e.startsWith("org/apache/flink/streaming/api/environment/"));
    }
}
