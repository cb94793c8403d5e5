package io.rollcount.chaos;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A ZooKeeper server in its own JVM ({@code deploy/local-cluster/zookeeper.sh}) in its own folder, on a free
 * port of the loopback interface: the HA store of the application clusters of a test. {@link #close()} stops it.
 */
public final class LocalZooKeeper implements AutoCloseable {
    private static final Pattern ADDRESS = Pattern.compile("ZooKeeper running: (\\S+)");

    private final Path dir;
    private final String address;

    private LocalZooKeeper(Path dir, String address) {
        this.dir = dir;
        this.address = address;
    }

    /** Starts a server with its data in {@code dir} (new) and waits until it answers. */
    public static LocalZooKeeper startIn(Path dir) throws IOException {
        Files.createDirectories(dir);
        String out = script(dir, Duration.ofMinutes(5), "start", "--port", "0");
        Matcher m = ADDRESS.matcher(out);
        if (!m.find()) {
            script(dir, Duration.ofSeconds(60), "stop");
            throw new IllegalStateException("zookeeper.sh start printed no address:\n" + out);
        }
        return new LocalZooKeeper(dir, m.group(1));
    }

    /** HOST:PORT, for {@code high-availability.zookeeper.quorum}. */
    public String address() {
        return address;
    }

    @Override
    public void close() {
        script(dir, Duration.ofSeconds(60), "stop");
    }

    private static String script(Path dir, Duration timeout, String... args) {
        Path repo = LocalCluster.repoRoot();
        String[] cmd = new String[args.length + 1];
        cmd[0] = repo.resolve("deploy/local-cluster/zookeeper.sh").toString();
        System.arraycopy(args, 0, cmd, 1, args.length);
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(repo.toFile()).redirectErrorStream(true);
        pb.environment().put("ROLLCOUNT_CLUSTER_DIR", dir.toString());
        try {
            Path out = Files.createTempFile(dir, "zookeeper-", ".out");
            pb.redirectOutput(out.toFile());
            Process p = pb.start();
            if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                throw new IllegalStateException("zookeeper.sh " + String.join(" ", args) + " took over "
                        + timeout.toSeconds() + " s:\n" + Files.readString(out));
            }
            String output = Files.readString(out, StandardCharsets.UTF_8);
            Files.deleteIfExists(out);
            if (p.exitValue() != 0)
                throw new IllegalStateException(
                        "zookeeper.sh " + String.join(" ", args) + " failed (" + p.exitValue() + "):\n" + output);
            return output;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
