package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.RefusedStartException;
import io.rollcount.job.RollcountJob;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code --policies} of {@code ./rollcount run} and {@code ./rollcount demo}: a bad file is one line naming
 * the file, the rule and the field, exit code 2, and nothing starts (no broker, no job, no Redis key).
 */
class PoliciesOptionTest {
    @TempDir
    Path dir;

    private static CliRun run(String... args) {
        return CliRun.of(Main.commandLine(), args);
    }

    @Test
    void aBadFileIsOneLineAndExitCode2ForRunAndDemo() throws Exception {
        Path input = dir.resolve("in.jsonl");
        Files.writeString(input, "{\"counter\":\"a:1\"}\n");
        Path bad = dir.resolve("bad.yaml");
        Files.writeString(bad, "- match: ad\n- match: post\n  resolutions: [1m, 2m]\n");
        String expected = "rollcount: " + bad
                + ": rule 2 (line 3): field 'resolutions': unknown resolution '2m': expected 5s, 1m, 5m, 1h, 1d";

        CliRun run = run(
                "run",
                "--input",
                input.toString(),
                "--policies",
                bad.toString(),
                "--dlq",
                dir.resolve("dlq.jsonl").toString());
        assertThat(run.code()).isEqualTo(2);
        assertThat(run.err()).isEqualTo(expected + System.lineSeparator());
        assertThat(dir.resolve("dlq.jsonl")).doesNotExist();

        CliRun demo = run("demo", "--policies", bad.toString(), "--metrics.port", "0");
        assertThat(demo.code()).isEqualTo(2);
        assertThat(demo.err()).isEqualTo(expected.replace("rollcount: ", "rollcount demo: ") + System.lineSeparator());
        assertThat(demo.out()).isEmpty();

        Files.writeString(bad, "not: [yaml");
        CliRun notYaml = run("run", "--input", input.toString(), "--policies", bad.toString());
        assertThat(notYaml.code()).isEqualTo(2);
        assertThat(notYaml.err())
                .startsWith("rollcount: " + bad + ": not YAML: ")
                .doesNotContain("\n" + "rollcount")
                .hasLineCount(1);

        CliRun missing = run(
                "run",
                "--input",
                input.toString(),
                "--policies",
                dir.resolve("none.yaml").toString());
        assertThat(missing.code()).isEqualTo(2);
        assertThat(missing.err())
                .startsWith("rollcount: " + dir.resolve("none.yaml") + ": cannot read the policies file")
                .hasLineCount(1);
    }

    @Test
    void aKeyGivenTwiceADurationOutOfRangeAndAFileOverOneMibAreOneLineAndExitCode2() throws Exception {
        Path input = dir.resolve("in.jsonl");
        Files.writeString(input, "{\"counter\":\"a:1\"}\n");
        Path file = dir.resolve("p.yaml");

        Files.writeString(file, "- match: ad\n  retention: {1m: 5d, 1m: 3d}\n");
        assertRefused(input, file, "rollcount: " + file + ": rule 1 (line 2): field 'retention.1m': given twice");

        Files.writeString(file, "- match: ad\n- match: post\n  retention: {1m: 200000000000d}\n");
        assertRefused(
                input,
                file,
                "rollcount: " + file
                        + ": rule 2 (line 3): field 'retention.1m': '200000000000d' is longer than 36500d");

        Files.writeString(file, "- match: ad\n#" + "x".repeat(50 << 20) + "\n");
        long start = System.nanoTime();
        assertRefused(
                input,
                file,
                "rollcount: " + file
                        + ": larger than 1 MiB, the most a policies file may hold (a list of rules is a few KiB): not read");
        assertThat(java.time.Duration.ofNanos(System.nanoTime() - start)).isLessThan(java.time.Duration.ofSeconds(10));
    }

    private void assertRefused(Path input, Path policies, String line) {
        CliRun run = run(
                "run",
                "--input",
                input.toString(),
                "--policies",
                policies.toString(),
                "--dlq",
                dir.resolve("dlq.jsonl").toString(),
                "--redis.key-prefix",
                "policies-option-test",
                "--checkpoint.dir",
                dir.resolve("checkpoints").toUri().toString());
        assertThat(run.code()).isEqualTo(2);
        assertThat(run.err()).isEqualTo(line + System.lineSeparator());
        assertThat(dir.resolve("dlq.jsonl")).doesNotExist();
    }

    @Test
    void flinkRunRefusesABadFileWithAnExceptionOfOneLine() throws Exception {
        // RollcountJob.main, the entry point of flink run and of an application cluster: the file is read there,
        // and the refusal is an exception (flink run fails the submission with it and sets the exit code).
        Path bad = dir.resolve("bad.yaml");
        Files.writeString(bad, "- match: '*'\n- match: post\n");
        assertThatThrownBy(
                        () -> RollcountJob.main(new String[] {"--input", dir.toString(), "--policies", bad.toString()}))
                .isExactlyInstanceOf(RefusedStartException.class)
                .hasMessage(
                        bad
                                + ": rule 2 (line 2): field 'match': 'post' can never match: rule 1 ('*') comes first and matches every namespace it does")
                .hasNoCause();
    }
}
