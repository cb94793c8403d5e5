package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.flink.runtime.checkpoint.Checkpoints;
import org.apache.flink.runtime.checkpoint.metadata.CheckpointMetadata;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a job may resume from: a folder with Flink's {@code _metadata}, or that file; anything else is one line. */
class RestorePathTest {
    private static final String WHAT =
            "give a chk-N folder of a retained checkpoint or a savepoint folder (each holds _metadata)";

    @TempDir
    Path dir;

    @Test
    void aCheckpointFolderOrItsMetadataFileIsAccepted() throws Exception {
        Path chk = Files.createDirectories(dir.resolve("job").resolve("chk-3"));
        try (OutputStream out = Files.newOutputStream(chk.resolve("_metadata"))) {
            Checkpoints.storeCheckpointMetadata(new CheckpointMetadata(3L, List.of(), List.of()), out);
        }
        assertThat(RestorePath.refusal("--resume", chk.toString(), true)).isNull();
        assertThat(RestorePath.refusal("--resume", chk.toUri().toString(), true))
                .isNull();
        assertThat(RestorePath.refusal("--resume", chk.resolve("_metadata").toString(), true))
                .isNull();
    }

    @Test
    void aMissingPathAnEmptyFolderOrAnotherFileIsOneLineNamingTheOptionAndThePath() throws Exception {
        Path missing = dir.resolve("none");
        assertThat(RestorePath.refusal("--resume", missing.toString(), true))
                .isEqualTo("--resume " + missing + " does not exist: " + WHAT);
        Path empty = Files.createDirectories(dir.resolve("empty"));
        assertThat(RestorePath.refusal("--resume", empty.toString(), true))
                .isEqualTo(
                        "--resume " + empty + " is not a checkpoint or savepoint: it holds no _metadata file; " + WHAT);
        Path random = dir.resolve("random.bin");
        Files.write(random, new byte[] {1, 2, 3, 4, 5, 6, 7, 8});
        assertThat(RestorePath.refusal("flink run -s", random.toString(), false))
                .isEqualTo("flink run -s " + random + " is not a readable checkpoint or savepoint: " + random
                        + " is not checkpoint metadata; " + WHAT);
        Path emptyFile = Files.createFile(dir.resolve("zero"));
        assertThat(RestorePath.refusal("--resume", emptyFile.toString(), true)).contains("is not checkpoint metadata");
        // the magic number, then nothing: Flink cannot read the rest
        Path truncated = Files.createDirectories(dir.resolve("chk-9"));
        try (var out = new java.io.DataOutputStream(Files.newOutputStream(truncated.resolve("_metadata")))) {
            out.writeInt(Checkpoints.HEADER_MAGIC_NUMBER);
        }
        assertThat(RestorePath.refusal("--resume", truncated.toString(), true))
                .startsWith("--resume " + truncated + " is not a readable checkpoint or savepoint: "
                        + truncated.resolve("_metadata") + " cannot be read (EOFException")
                .doesNotContain("\n");
    }

    @Test
    void flinkRunLeavesAPathMissingHereAndOtherFileSystemsToFlink() {
        assertThat(RestorePath.refusal("flink run -s", dir.resolve("none").toString(), false))
                .isNull();
        assertThat(RestorePath.refusal("--resume", "s3://bucket/savepoints/sp-1", true))
                .isNull();
        assertThat(RestorePath.refusal("--resume", null, true)).isNull();
    }
}
