package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.support.OtherProcessFileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

/**
 * {@code ./rollcount run} given a dead-letter file another running process holds: refused with exit code 2
 * and one line, before anything starts and before {@code --fresh} could delete a key.
 */
class RunCommandDeadLetterFileIT {
    @TempDir
    Path dir;

    @Test
    void aDeadLetterFileHeldByAnotherProcessIsRefusedWithExitTwoAndTouchesNothing() throws Exception {
        Path dlq = dir.resolve("shared-dlq.jsonl");
        Path input = dir.resolve("in.jsonl");
        Files.writeString(input, "{\"counter\":\"a:b\",\"ts\":1000}\n");
        String prefix = "rcdlqlock" + UUID.randomUUID().toString().substring(0, 8);
        try (OtherProcessFileLock other = OtherProcessFileLock.hold(Path.of(dlq + ".lock"));
                Jedis redis = new Jedis("127.0.0.1", 6379)) {
            redis.set(prefix + ":_job", "an earlier job"); // what --fresh would delete

            CliRun run = CliRun.of(
                    new RunCommand(),
                    "--input",
                    input.toString(),
                    "--dlq",
                    dlq.toString(),
                    "--redis.key-prefix",
                    prefix,
                    "--fresh",
                    "--checkpoint.dir",
                    dir.resolve("chk").toUri().toString());

            assertThat(run.code()).isEqualTo(RunCommand.EXIT_REFUSED);
            assertThat(run.err().strip())
                    .isEqualTo(
                            "rollcount: --dlq " + dlq + " is in use by another running job (it holds " + dlq
                                    + ".lock): give this job a dead-letter file of its own with --dlq PATH, or stop the other job");
            assertThat(redis.get(prefix + ":_job"))
                    .as("--fresh deleted nothing")
                    .isEqualTo("an earlier job");
            assertThat(dlq).doesNotExist();
            redis.del(prefix + ":_job");
        }
    }
}
