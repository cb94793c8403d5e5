package io.rollcount.job.files;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.Serializable;
import java.net.URI;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.flink.core.fs.FileStatus;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

/**
 * Which files of {@code --input} are read, and which are skipped and why.
 *
 * <p>An input is a regular, readable file named {@code *.jsonl} or {@code *.jsonl.gz}; in a folder (and its
 * sub-folders, recursively) names beginning with {@code .} or {@code _} are hidden and skipped. Nothing
 * else is opened: an editor's lock file ({@code .#x.jsonl}, often a dangling symbolic link), a FIFO or a
 * device (reading one blocks forever), a file without read permission. Flink's own enumeration stats each
 * entry of a folder before filtering it, so one dangling link there stopped the run; this scan looks at the
 * name first and uses {@code lstat}-like attributes for the rest.
 *
 * <p>A file named explicitly as {@code --input} is read whatever its name, if it is a regular readable file.
 * Inputs come out in path order. On a file system other than the local one (S3, HDFS) the checks that need
 * the operating system (FIFOs, permissions) are left to the read, where an unreadable file becomes one
 * {@code unreadable_file} dead letter.
 */
public final class InputFiles {
    private InputFiles() {}

    /** A file to read. */
    public record Input(Path path, long size, long modificationTime) implements Serializable {}

    /** A file or folder not read, and why. */
    public record Skipped(String path, String reason) implements Serializable {
        @Override
        public String toString() {
            return path + ": " + reason;
        }
    }

    public record Scan(List<Input> inputs, List<Skipped> skipped) {}

    public static boolean hasInputName(String name) {
        return name.endsWith(".jsonl") || name.endsWith(".jsonl.gz");
    }

    private static boolean isHidden(String name) {
        return name.startsWith(".") || name.startsWith("_");
    }

    /** Scans {@code --input}: a file or a folder; fails only when the path itself does not exist. */
    public static Scan scan(String input) throws IOException {
        return scan(new Path(input));
    }

    public static Scan scan(Path input) throws IOException {
        List<Input> inputs = new ArrayList<>();
        List<Skipped> skipped = new ArrayList<>();
        URI uri = input.toUri();
        if (uri.getScheme() == null || "file".equals(uri.getScheme())) {
            java.nio.file.Path local = java.nio.file.Path.of(uri.getPath());
            if (!Files.exists(local, LinkOption.NOFOLLOW_LINKS))
                throw new FileNotFoundException("--input " + local + " does not exist");
            if (Files.isDirectory(local)) scanLocalFolder(local, inputs, skipped);
            else checkLocalFile(local, inputs, skipped);
        } else {
            scanRemote(input.getFileSystem(), input, true, inputs, skipped);
        }
        inputs.sort(Comparator.comparing(i -> i.path().toString()));
        skipped.sort(Comparator.comparing(Skipped::path));
        return new Scan(List.copyOf(inputs), List.copyOf(skipped));
    }

    private static void scanLocalFolder(java.nio.file.Path folder, List<Input> inputs, List<Skipped> skipped)
            throws IOException {
        List<java.nio.file.Path> entries = new ArrayList<>();
        try (DirectoryStream<java.nio.file.Path> dir = Files.newDirectoryStream(folder)) {
            dir.forEach(entries::add);
        } catch (java.nio.file.AccessDeniedException e) {
            skipped.add(new Skipped(folder.toString(), "folder not readable (permission denied)"));
            return;
        }
        entries.sort(null);
        for (java.nio.file.Path p : entries) {
            String name = p.getFileName().toString();
            if (isHidden(name)) {
                // Hidden files are skipped without a look: lock files are often dangling links. Only those that
                // would otherwise be inputs are worth a line in the summary.
                if (hasInputName(name))
                    skipped.add(new Skipped(p.toString(), "hidden (its name begins with '" + name.charAt(0) + "')"));
                continue;
            }
            if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) { // a linked folder is not followed: no loops
                scanLocalFolder(p, inputs, skipped);
            } else if (hasInputName(name)) {
                checkLocalFile(p, inputs, skipped);
            }
        }
    }

    private static void checkLocalFile(java.nio.file.Path p, List<Input> inputs, List<Skipped> skipped)
            throws IOException {
        BasicFileAttributes attrs;
        try {
            attrs = Files.readAttributes(p, BasicFileAttributes.class); // follows a symbolic link
        } catch (NoSuchFileException e) {
            skipped.add(new Skipped(
                    p.toString(), Files.isSymbolicLink(p) ? "dangling symbolic link" : "vanished while scanned"));
            return;
        } catch (IOException e) {
            skipped.add(new Skipped(p.toString(), "cannot be read: " + e));
            return;
        }
        if (attrs.isDirectory()) {
            skipped.add(new Skipped(p.toString(), "a link to a folder (links to folders are not followed)"));
        } else if (!attrs.isRegularFile()) {
            skipped.add(new Skipped(p.toString(), "not a regular file (a FIFO, socket or device would block the run)"));
        } else if (!Files.isReadable(p)) {
            skipped.add(new Skipped(p.toString(), "not readable (permission denied)"));
        } else {
            inputs.add(new Input(
                    new Path(p.toUri()), attrs.size(), attrs.lastModifiedTime().toMillis()));
        }
    }

    private static void scanRemote(FileSystem fs, Path p, boolean top, List<Input> inputs, List<Skipped> skipped)
            throws IOException {
        FileStatus status = fs.getFileStatus(p);
        if (status.isDir()) {
            FileStatus[] children = fs.listStatus(p);
            if (children == null) return;
            for (FileStatus c : children) {
                String name = c.getPath().getName();
                if (isHidden(name)) {
                    if (hasInputName(name))
                        skipped.add(new Skipped(
                                c.getPath().toString(), "hidden (its name begins with '" + name.charAt(0) + "')"));
                } else if (c.isDir() || hasInputName(name)) {
                    scanRemote(fs, c.getPath(), false, inputs, skipped);
                }
            }
        } else if (top || hasInputName(p.getName())) {
            inputs.add(new Input(p, status.getLen(), status.getModificationTime()));
        }
    }
}
