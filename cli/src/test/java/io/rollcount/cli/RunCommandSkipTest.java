package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.files.InputFiles;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The summary of {@code ./rollcount run} names every input file it did not read, and why. */
class RunCommandSkipTest {
    @TempDir
    Path dir;

    @Test
    void theSummaryListsTheSkippedFilesWithTheirReasons() throws Exception {
        Files.writeString(dir.resolve("good.jsonl"), "{\"counter\":\"a:1\"}\n");
        Files.createSymbolicLink(dir.resolve(".#good.jsonl"), Path.of("user@host.1"));
        Path fifo = dir.resolve("pipe.jsonl");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor())
                .isZero();
        Files.writeString(dir.resolve("notes.txt"), "not an input, not worth a line");

        InputFiles.Scan scan = RunCommand.scanInput(dir.toString());
        assertThat(RunCommand.inputSize(scan)).isEqualTo(Files.size(dir.resolve("good.jsonl")));
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        RunCommand.printSkipped(scan, new PrintStream(bytes, true, StandardCharsets.UTF_8));
        assertThat(bytes.toString(StandardCharsets.UTF_8))
                .isEqualTo(String.join(
                        "\n",
                        "  input files read   1",
                        "  input skipped      2",
                        "    " + dir.resolve(".#good.jsonl") + ": hidden (its name begins with '.')",
                        "    " + fifo + ": not a regular file (a FIFO, socket or device would block the run)",
                        ""));
    }

    @Test
    void aMissingInputIsOneLine() {
        assertThatThrownBy(() -> RunCommand.scanInput(dir.resolve("nope").toString()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("--input " + dir.resolve("nope") + " does not exist");
    }
}
