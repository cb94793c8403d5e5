package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The log configuration of {@code ./rollcount} ({@code log4j2-cli.properties}): warnings only by default,
 * {@code ROLLCOUNT_LOG_LEVEL} and {@code ROLLCOUNT_KAFKA_LOG_LEVEL} raise it. Each case is a JVM of its own, started
 * as the script starts the command line, with the environment variable set or not.
 */
class CliLogLevelTest {
    /** Logs one INFO line of its own and one of a Kafka client's logger. */
    public static final class Probe {
        public static void main(String[] args) {
            org.slf4j.LoggerFactory.getLogger("io.rollcount.probe").info("probe info line");
            org.slf4j.LoggerFactory.getLogger("org.apache.kafka.clients.probe").info("kafka info line");
        }
    }

    private static String run(Map<String, String> env) throws IOException, InterruptedException {
        Path config = Path.of("src/main/resources/log4j2-cli.properties").toAbsolutePath();
        ProcessBuilder pb = new ProcessBuilder(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                "-Dlog4j.configurationFile=" + config,
                Probe.class.getName()));
        pb.environment().remove("ROLLCOUNT_LOG_LEVEL");
        pb.environment().remove("ROLLCOUNT_KAFKA_LOG_LEVEL");
        pb.environment().putAll(env);
        pb.redirectErrorStream(true);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
        return out;
    }

    @Test
    void warningsOnlyUnlessTheUserRaisesTheLevel() throws Exception {
        assertThat(run(Map.of())).doesNotContain("probe info line").doesNotContain("kafka info line");
        assertThat(run(Map.of("ROLLCOUNT_LOG_LEVEL", "INFO")))
                .contains("probe info line")
                .doesNotContain("kafka info line");
        assertThat(run(Map.of("ROLLCOUNT_LOG_LEVEL", "INFO", "ROLLCOUNT_KAFKA_LOG_LEVEL", "INFO")))
                .contains("probe info line")
                .contains("kafka info line");
    }
}
