package io.rollcount.chaos;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A {@code redis-server} process of a test's or a chaos run's own on a free loopback port ({@code --save ''};
 * {@code --appendonly no}, or yes with fsync always; {@code DEBUG} enabled for {@link #stall} when asked), for an outage: {@link #shutdown()} is {@code SHUTDOWN SAVE} (an RDB snapshot is written even without save
 * points, as a Redis with persistence would keep its data), and {@link #start()} brings it back on the
 * same port from that snapshot. {@link #close()} ends it.
 */
public final class OwnRedis implements AutoCloseable {
    public final int port;
    public final Path dir;
    private Process process;

    private final boolean appendOnly;
    private final boolean debugCommand;

    public OwnRedis(Path dir) throws IOException {
        this(dir, false, false);
    }

    /**
     * @param appendOnly {@code --appendonly yes --appendfsync always}: a stop (or a crash) loses nothing
     * @param debugCommand {@code --enable-debug-command local}, for {@link #stall} ({@code DEBUG SLEEP})
     */
    public OwnRedis(Path dir, boolean appendOnly, boolean debugCommand) throws IOException {
        this.dir = dir;
        this.appendOnly = appendOnly;
        this.debugCommand = debugCommand;
        Files.createDirectories(dir);
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            this.port = s.getLocalPort();
        }
    }

    public String url() {
        return "redis://127.0.0.1:" + port;
    }

    public OwnRedis start() throws Exception {
        List<String> cmd = new java.util.ArrayList<>(List.of(
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--port",
                Integer.toString(port),
                "--save",
                "",
                "--appendonly",
                appendOnly ? "yes" : "no",
                "--dir",
                dir.toString(),
                "--dbfilename",
                "dump.rdb",
                "--daemonize",
                "no",
                "--logfile",
                dir.resolve("redis.log").toString()));
        if (appendOnly) cmd.addAll(List.of("--appendfsync", "always"));
        if (debugCommand) cmd.addAll(List.of("--enable-debug-command", "local"));
        process = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(new File(dir.toFile(), "stdout.log")))
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive())
                throw new IllegalStateException("redis-server exited: " + Files.readString(dir.resolve("redis.log")));
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return this;
            } catch (IOException e) {
                Thread.sleep(20);
            }
        }
        throw new IllegalStateException("redis-server did not listen on " + port + " within 15 s");
    }

    /** {@code SHUTDOWN SAVE}: the data goes to dump.rdb and the server exits; the port is closed. */
    public void shutdown() throws Exception {
        Process cli = new ProcessBuilder(
                        "redis-cli", "-h", "127.0.0.1", "-p", Integer.toString(port), "shutdown", "save")
                .redirectErrorStream(true)
                .start();
        cli.waitFor(20, TimeUnit.SECONDS);
        if (process != null && !process.waitFor(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException("redis-server on " + port + " did not exit after SHUTDOWN SAVE");
        }
        process = null;
    }

    /** {@code DEBUG SLEEP seconds}: the server answers nobody for that long (it needs {@code debugCommand}); returns when it is over. */
    public void stall(double seconds) throws Exception {
        if (!debugCommand)
            throw new IllegalStateException("this redis-server was started without --enable-debug-command");
        Process cli = new ProcessBuilder(
                        "redis-cli",
                        "-h",
                        "127.0.0.1",
                        "-p",
                        Integer.toString(port),
                        "debug",
                        "sleep",
                        String.format(java.util.Locale.ROOT, "%.1f", seconds))
                .redirectErrorStream(true)
                .start();
        String out = new String(cli.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8).trim();
        cli.waitFor(60, TimeUnit.SECONDS);
        if (!out.equals("OK")) throw new IllegalStateException("DEBUG SLEEP on " + port + " answered " + out);
    }

    public boolean running() {
        return process != null && process.isAlive();
    }

    @Override
    public void close() throws Exception {
        if (process == null) return;
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        process = null;
    }
}
