package io.rollcount.job.redis;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code redis-server} process of the test's own (the installed binary), on a free port, without
 * persistence, in a folder under {@code target/}. {@link #stop()} and {@link #start()} simulate an outage
 * on the same port; {@link #close()} ends it.
 */
public final class RedisServerProcess implements AutoCloseable {
    public final int port;
    final Path dir;
    private final List<String> extraArgs;
    private final boolean tls;
    private Process process;

    private RedisServerProcess(int port, Path dir, boolean tls, List<String> extraArgs) {
        this.port = port;
        this.dir = dir;
        this.tls = tls;
        this.extraArgs = extraArgs;
    }

    /** Starts a plain server with these extra arguments (e.g. "--requirepass", "x"). */
    public static RedisServerProcess launch(String... extraArgs) throws Exception {
        RedisServerProcess p = new RedisServerProcess(freePort(), newDir(), false, List.of(extraArgs));
        p.start();
        return p;
    }

    /** Starts a TLS-only server ({@code --port 0 --tls-port N}) with these certificate arguments. */
    static RedisServerProcess launchTls(String... tlsArgs) throws Exception {
        RedisServerProcess p = new RedisServerProcess(freePort(), newDir(), true, List.of(tlsArgs));
        p.start();
        return p;
    }

    static Path newDir() throws IOException {
        Path base = Path.of("target", "redis-servers").toAbsolutePath();
        Files.createDirectories(base);
        return Files.createTempDirectory(base, "redis-");
    }

    /** Starts the server again (after {@link #stop()} or {@link #shutdownNoSave()}) on the same port and folder. */
    public void start() throws Exception {
        if (process != null && process.isAlive()) return;
        List<String> cmd = new ArrayList<>(List.of(
                "redis-server",
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                dir.toString(),
                "--daemonize",
                "no",
                "--logfile",
                dir.resolve("redis.log").toString()));
        if (tls) {
            cmd.addAll(List.of("--port", "0", "--tls-port", Integer.toString(port)));
        } else {
            cmd.addAll(List.of("--port", Integer.toString(port)));
        }
        cmd.addAll(extraArgs);
        process = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(new File(dir.toFile(), "stdout.log")))
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server exited with " + process.exitValue() + ": "
                        + readOrEmpty(dir.resolve("redis.log")) + readOrEmpty(dir.resolve("stdout.log")));
            }
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress("127.0.0.1", port), 200);
                return;
            } catch (IOException e) {
                Thread.sleep(20);
            }
        }
        throw new IllegalStateException("redis-server did not listen on " + port + " within 10 s");
    }

    /** Ends the server (SIGTERM, then SIGKILL) and waits until the port is closed. */
    public void stop() throws InterruptedException {
        if (process == null) return;
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(5, TimeUnit.SECONDS);
        }
        process = null;
    }

    /**
     * {@code SHUTDOWN NOSAVE}: the server ends without writing its data anywhere (as a crash of a server
     * without persistence, or a restart that skips the save), then the port is closed.
     */
    public void shutdownNoSave() throws InterruptedException {
        if (process == null) return;
        try (redis.clients.jedis.Jedis j = new redis.clients.jedis.Jedis("127.0.0.1", port)) {
            j.sendCommand(redis.clients.jedis.Protocol.Command.SHUTDOWN, "NOSAVE");
        } catch (redis.clients.jedis.exceptions.JedisException e) {
            // the server closes the connection as it ends: no reply
        }
        if (!process.waitFor(10, TimeUnit.SECONDS))
            throw new IllegalStateException("redis-server did not end on SHUTDOWN NOSAVE");
        process = null;
    }

    public String url() {
        return (tls ? "rediss://" : "redis://") + "127.0.0.1:" + port;
    }

    @Override
    public void close() throws Exception {
        stop();
    }

    static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static String readOrEmpty(Path p) {
        try {
            return Files.exists(p) ? Files.readString(p) : "";
        } catch (IOException e) {
            return "";
        }
    }
}
