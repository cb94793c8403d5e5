package io.rollcount.job.cluster;

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
 * A {@code redis-server} process of the test's own on a free loopback port ({@code --save '' --appendonly no}),
 * for an outage: {@link #shutdown()} is {@code SHUTDOWN SAVE} (an RDB snapshot is written even without save
 * points, as a Redis with persistence would keep its data), and {@link #start()} brings it back on the
 * same port from that snapshot. {@link #close()} ends it.
 */
final class OwnRedis implements AutoCloseable {
    final int port;
    final Path dir;
    private Process process;

    OwnRedis(Path dir) throws IOException {
        this.dir = dir;
        Files.createDirectories(dir);
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            this.port = s.getLocalPort();
        }
    }

    String url() {
        return "redis://127.0.0.1:" + port;
    }

    OwnRedis start() throws Exception {
        List<String> cmd = List.of("redis-server", "--bind", "127.0.0.1", "--port", Integer.toString(port), "--save", "",
                "--appendonly", "no", "--dir", dir.toString(), "--dbfilename", "dump.rdb", "--daemonize", "no",
                "--logfile", dir.resolve("redis.log").toString());
        process = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(new File(dir.toFile(), "stdout.log"))).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) throw new IllegalStateException("redis-server exited: " + Files.readString(dir.resolve("redis.log")));
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
    void shutdown() throws Exception {
        Process cli = new ProcessBuilder("redis-cli", "-h", "127.0.0.1", "-p", Integer.toString(port), "shutdown", "save")
                .redirectErrorStream(true).start();
        cli.waitFor(20, TimeUnit.SECONDS);
        if (process != null && !process.waitFor(20, TimeUnit.SECONDS)) {
            throw new IllegalStateException("redis-server on " + port + " did not exit after SHUTDOWN SAVE");
        }
        process = null;
    }

    @Override
    public void close() throws Exception {
        if (process == null) return;
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
        process = null;
    }
}
