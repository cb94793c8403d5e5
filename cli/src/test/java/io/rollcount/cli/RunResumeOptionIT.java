package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code ./rollcount run --resume PATH} where PATH is no checkpoint or savepoint (missing, an empty folder, a
 * file of something else): one line naming the option and the path, exit code 2, nothing started.
 */
class RunResumeOptionIT {
    @TempDir
    Path dir;

    private CliRun resume(Path path) throws Exception {
        Path input = dir.resolve("in.jsonl");
        Files.writeString(input, "{\"counter\":\"a:1\",\"ts\":1000}\n");
        return CliRun.of(
                Main.commandLine(),
                "run",
                "--input",
                input.toString(),
                "--dlq",
                dir.resolve("dlq.jsonl").toString(),
                "--redis.key-prefix",
                "rcresume" + UUID.randomUUID().toString().substring(0, 8),
                "--checkpoint.dir",
                dir.resolve("checkpoints").toUri().toString(),
                "--resume",
                path.toString());
    }

    @Test
    void aPathThatIsNoCheckpointIsOneLineAndExitCode2() throws Exception {
        String what = "give a chk-N folder of a retained checkpoint or a savepoint folder (each holds _metadata)";
        Path missing = dir.resolve("chk-404");
        assertRefused(resume(missing), "rollcount: --resume " + missing + " does not exist: " + what);

        Path empty = Files.createDirectories(dir.resolve("empty"));
        assertRefused(
                resume(empty),
                "rollcount: --resume " + empty + " is not a checkpoint or savepoint: it holds no _metadata file; "
                        + what);

        Path random = dir.resolve("random.bin");
        Files.write(random, new byte[] {(byte) 0xca, (byte) 0xfe, 0, 1, 2, 3, 4, 5});
        assertRefused(
                resume(random),
                "rollcount: --resume " + random + " is not a readable checkpoint or savepoint: " + random
                        + " is not checkpoint metadata; " + what);
        assertThat(dir.resolve("checkpoints")).doesNotExist();
    }

    private static void assertRefused(CliRun run, String line) {
        assertThat(run.err()).isEqualTo(line + System.lineSeparator());
        assertThat(run.code()).isEqualTo(2);
    }
}
