package io.rollcount.chaos;

import io.rollcount.job.kafka.KafkaBroker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The in-process Kafka broker ({@link KafkaBroker#main}) in a child JVM of its own on a fixed port and folder,
 * so that a chaos run can {@code kill -9} it ({@link #kill()}: SIGKILL) and start it again on the same folder
 * and port ({@link #start()}), as a broker host that crashes and reboots. Output goes to {@code broker-N.log}.
 */
public final class BrokerJvm implements AutoCloseable {
    private final Path dir;
    private final int port;
    private Process process;
    private int starts;

    public BrokerJvm(Path dir, int port) {
        this.dir = dir;
        this.port = port;
    }

    public String bootstrap() {
        return "127.0.0.1:" + port;
    }

    public synchronized BrokerJvm start() throws IOException, InterruptedException {
        Files.createDirectories(dir);
        Path log = dir.resolve("broker-" + (++starts) + ".log");
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx512m");
        cmd.add("-XX:+UseSerialGC");
        cmd.add("-Djava.io.tmpdir=" + dir.toAbsolutePath());
        String log4j = System.getProperty("log4j.configurationFile");
        if (log4j != null) cmd.add("-Dlog4j.configurationFile=" + log4j);
        cmd.addAll(List.of(
                "-cp",
                System.getProperty("java.class.path"),
                KafkaBroker.class.getName(),
                "--port",
                Integer.toString(port),
                "--dir",
                dir.resolve("data").toAbsolutePath().toString()));
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < deadline) {
            if (!p.isAlive())
                throw new IOException(
                        "the Kafka broker exited with " + p.exitValue() + " before it was ready; see " + log);
            for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
                if (line.startsWith("bootstrap=")) {
                    process = p;
                    return this;
                }
            }
            Thread.sleep(100);
        }
        p.destroyForcibly();
        throw new IOException("the Kafka broker was not ready after 120 s; see " + log);
    }

    /** {@code kill -9}: no shutdown, no flush; waits until the process is gone. */
    public synchronized void kill() throws InterruptedException {
        if (process == null) return;
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
        process = null;
    }

    @Override
    public synchronized void close() throws InterruptedException {
        if (process == null) return;
        process.destroy();
        if (!process.waitFor(20, TimeUnit.SECONDS)) process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        process = null;
    }
}
