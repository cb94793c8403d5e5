package io.rollcount.bench;

import io.rollcount.job.kafka.KafkaBroker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;

/**
 * The Kafka mode's broker in a child JVM of its own ({@code rollcount kafka}, i.e. {@link KafkaBroker#main},
 * on this JVM's class path), so that its CPU time is its process's ({@link #cpuNanos}, from
 * {@code /proc/<pid>/stat} through {@link ProcessHandle.Info#totalCpuDuration}) and the job's JVM holds
 * only the job. Output goes to {@code broker.log} in its folder.
 */
final class BrokerProcess implements AutoCloseable {
    private final Process process;
    private final String bootstrap;

    private BrokerProcess(Process process, String bootstrap) {
        this.process = process;
        this.bootstrap = bootstrap;
    }

    static BrokerProcess start(Path dir) throws IOException, InterruptedException {
        Files.createDirectories(dir);
        Path log = dir.resolve("broker.log");
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        cmd.add("-Xmx768m");
        cmd.add("-XX:+UseParallelGC");
        cmd.add("-Djava.io.tmpdir=" + dir.toAbsolutePath());
        String log4j = System.getProperty("log4j.configurationFile");
        if (log4j != null) cmd.add("-Dlog4j.configurationFile=" + log4j);
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(KafkaBroker.class.getName());
        cmd.add("--port");
        cmd.add("0");
        cmd.add("--dir");
        cmd.add(dir.resolve("data").toAbsolutePath().toString());
        Process p = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (System.nanoTime() < deadline) {
            if (!p.isAlive()) {
                throw new IOException("the benchmark's Kafka broker exited with " + p.exitValue()
                        + " before it was ready; see " + log);
            }
            for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
                if (line.startsWith("bootstrap="))
                    return new BrokerProcess(
                            p, line.substring("bootstrap=".length()).trim());
            }
            Thread.sleep(100);
        }
        p.destroyForcibly();
        throw new IOException("the benchmark's Kafka broker was not ready after 90 s; see " + log);
    }

    String bootstrap() {
        return bootstrap;
    }

    Properties clientProperties() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        return p;
    }

    void createTopics(int partitions, String... topics) throws Exception {
        try (Admin admin = Admin.create(clientProperties())) {
            List<NewTopic> list = new ArrayList<>();
            for (String t : topics) list.add(new NewTopic(t, partitions, (short) 1));
            admin.createTopics(list).all().get(60, TimeUnit.SECONDS);
        }
    }

    /** CPU time (user + system) of the broker's process so far, in ns; -1 if the system cannot tell. */
    long cpuNanos() {
        return process.toHandle()
                .info()
                .totalCpuDuration()
                .map(Duration::toNanos)
                .orElse(-1L);
    }

    @Override
    public void close() throws InterruptedException {
        process.destroy(); // SIGTERM: the broker's shutdown hook stops it cleanly
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }
}
