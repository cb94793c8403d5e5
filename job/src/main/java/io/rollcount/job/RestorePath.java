package io.rollcount.job;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.flink.runtime.checkpoint.Checkpoints;

/**
 * The checkpoint or savepoint a job is to resume from ({@code ./rollcount run --resume PATH}, {@code flink run
 * -s PATH}), checked before the job starts: a {@code chk-N} or savepoint folder with its {@code _metadata}, or
 * that file itself, whose metadata Flink can read. Paths on other file systems ({@code s3://}, {@code hdfs://})
 * are left to Flink.
 */
public final class RestorePath {
    private static final String METADATA = "_metadata";

    private RestorePath() {}

    /**
     * Why {@code path} cannot be resumed from, as one line naming {@code option} and the path, or null if it
     * can (or is not local). {@code mustExist} false leaves a path missing here to Flink (it may exist where
     * the JobManager runs).
     */
    public static String refusal(String option, String path, boolean mustExist) {
        Path local = localPath(path);
        if (local == null) return null;
        if (!Files.exists(local)) {
            return mustExist ? option + " " + path + " does not exist: " + what() : null;
        }
        Path metadata = Files.isDirectory(local) ? local.resolve(METADATA) : local;
        if (!Files.isRegularFile(metadata))
            return option + " " + path + " is not a checkpoint or savepoint: it holds no " + METADATA + " file; "
                    + what();
        String problem = unreadable(metadata);
        if (problem == null) return null;
        return option + " " + path + " is not a readable checkpoint or savepoint: " + metadata + " " + problem + "; "
                + what();
    }

    private static String what() {
        return "give a chk-N folder of a retained checkpoint or a savepoint folder (each holds " + METADATA + ")";
    }

    /** Why Flink could not read {@code metadata} as a checkpoint's metadata, or null if it can. */
    private static String unreadable(Path metadata) {
        try (InputStream in = Files.newInputStream(metadata)) {
            DataInputStream data = new DataInputStream(in);
            if (Files.size(metadata) < Integer.BYTES || data.readInt() != Checkpoints.HEADER_MAGIC_NUMBER)
                return "is not checkpoint metadata";
        } catch (IOException | RuntimeException e) {
            return "cannot be read (" + e.getClass().getSimpleName() + ")";
        }
        try (InputStream in = Files.newInputStream(metadata)) {
            Checkpoints.loadCheckpointMetadata(
                    new DataInputStream(in),
                    RestorePath.class.getClassLoader(),
                    metadata.getParent().toString());
            return null;
        } catch (IOException | RuntimeException e) {
            return "cannot be read (" + e.getClass().getSimpleName()
                    + (e.getMessage() == null ? "" : ": " + e.getMessage().replaceAll("\\s+", " ")) + ")";
        }
    }

    /** A local path for a {@code file:} URI or a plain path; null for other file systems (s3://, hdfs://...). */
    public static Path localPath(String uriOrPath) {
        if (uriOrPath == null) return null;
        if (uriOrPath.startsWith("file:")) return Path.of(java.net.URI.create(uriOrPath));
        if (uriOrPath.matches("^[a-zA-Z][a-zA-Z0-9+.-]*://.*")) return null;
        return Path.of(uriOrPath).toAbsolutePath();
    }
}
