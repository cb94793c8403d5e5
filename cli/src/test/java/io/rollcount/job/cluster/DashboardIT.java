package io.rollcount.job.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.rollcount.chaos.LocalCluster;
import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.support.RedisTestSupport;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The Grafana dashboard of {@code deploy/grafana/rollcount.json}, for real: the local cluster of
 * {@code deploy/local-cluster/} (a JobManager and a TaskManager, each serving Prometheus metrics) runs the
 * shaded job on a live Kafka stream (valid events, redeliveries, unparseable records, late events) into
 * Redis; Debian's {@code prometheus} scrapes both processes every second; then every query of every panel
 * is run against Prometheus's HTTP API, and each must return at least one series with a finite value.
 * Needs {@code prometheus} on the PATH ({@code .ci/run} installs it).
 */
@Tag("cluster")
class DashboardIT {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int METRIC_PORTS = 11;
    private static final String OP = "flink_taskmanager_job_task_operator_rollcount_";
    /** Queries that must come above zero while the producer runs (a filter "> 0" leaves no series otherwise). */
    private static final Map<String, String> MOVING = Map.of(
            "events read", "sum(rate(" + OP + "eventsRead[1m])) > 0",
            "Redis keys written", "sum(rate(" + OP + "redisKeysWritten[1m])) > 0",
            "duplicates", "sum(rate(" + OP + "eventsDeduplicated[1m])) > 0",
            "invalid_json dead letters", "sum(rate(" + OP + "reason_deadLetters{reason=\"invalid_json\"}[1m])) > 0",
            "partial sums", "sum(rate(" + OP + "partialSums[1m])) > 0",
            "completed checkpoints", "max(flink_jobmanager_job_numberOfCompletedCheckpoints) > 0");

    @Test
    void everyPanelQueryOfTheDashboardReturnsDataWhileTheJobRuns() throws Exception {
        Path prometheusBinary = onPath("prometheus");
        assertThat(prometheusBinary)
                .as("Debian's prometheus on the PATH (.ci/run installs it: apt-get install prometheus)")
                .isNotNull();
        Map<String, String> queries = panelQueries(LocalCluster.repoRoot().resolve("deploy/grafana/rollcount.json"));
        assertThat(queries).as("panel queries").hasSizeGreaterThanOrEqualTo(14);

        LocalCluster.jobJar();
        int base = freePortRange(METRIC_PORTS);
        String id = UUID.randomUUID().toString().substring(0, 8);
        long t0 = System.nanoTime();
        Path clusterDir = null;
        try (LocalCluster cluster = LocalCluster.start(1, "--metrics-ports", base + "-" + (base + METRIC_PORTS - 1));
                RedisTestSupport redis = new RedisTestSupport()) {
            clusterDir = cluster.dir;
            log("cluster up in " + seconds(t0) + " s, metrics on ports " + base + "-" + (base + METRIC_PORTS - 1));
            assertThat(cluster.startOutput)
                    .as("start.sh says where each process serves its metrics")
                    .containsPattern("Prometheus metrics: jobmanager:(" + base + "|" + (base + 1) + ") taskmanager-1:("
                            + base + "|" + (base + 1) + ")");
            Path work = cluster.dir.resolve("dashboard");
            Files.createDirectories(work);
            try (KafkaBroker broker = new KafkaBroker(0, work.resolve("kafka")).start();
                    Prometheus prometheus =
                            Prometheus.start(prometheusBinary, work.resolve("prometheus"), base, METRIC_PORTS)) {
                broker.createTopics(2, "counter-events");
                String job = cluster.submit(
                        List.of(),
                        LocalCluster.kafkaJobArgs(
                                broker.bootstrap(), "counter-events", id, redis.url(), redis.prefix, 2));
                cluster.awaitAllRunning(job, Duration.ofMinutes(2));
                log("job running after " + seconds(t0) + " s");

                AtomicBoolean producing = new AtomicBoolean(true);
                AtomicReference<Throwable> producerError = new AtomicReference<>();
                Thread producer = new Thread(() -> produce(broker, producing, producerError), "dashboard-producer");
                producer.start();
                try {
                    Map<String, String> withoutData = awaitData(prometheus, queries, Duration.ofSeconds(120));
                    log("queries answered after " + seconds(t0) + " s; without data: " + withoutData.keySet());
                    assertThat(producerError.get()).as("producing").isNull();
                    assertThat(withoutData)
                            .as("panel queries without data (Prometheus at %s)", prometheus.url)
                            .isEmpty();
                    // and the data moves: the stream is read, counted into Redis, checkpointed, deduplicated,
                    // dead-lettered
                    Map<String, String> stillZero = awaitData(prometheus, MOVING, Duration.ofSeconds(60));
                    log("moving after " + seconds(t0) + " s; still zero: " + stillZero.keySet());
                    assertThat(stillZero)
                            .as("series that stayed at zero while events flowed")
                            .isEmpty();
                } finally {
                    producing.set(false);
                    producer.join(10_000);
                    cluster.cancel(job);
                }
            } finally {
                RedisTestSupport.deleteAll(redis.jedis, redis.prefix);
            }
        } finally {
            // Keep the logs (log/, dashboard/prometheus/prometheus.log) for a look after a failure; drop the bulky
            // data.
            if (clusterDir != null) {
                for (String bulky :
                        List.of("checkpoints", "savepoints", "tmp", "dashboard/kafka", "dashboard/prometheus/data")) {
                    ClusterFaultIT.deleteTree(clusterDir.resolve(bulky));
                }
            }
        }
    }

    /**
     * Every panel's queries, by "panel title / refId", with the job variable set to all jobs (what Grafana's "All"
     * sends); fails on a panel that hard-codes a data source, a dashboard without the {@code job_name} variable,
     * and a query of a job's metric that does not filter on it.
     */
    static Map<String, String> panelQueries(Path dashboard) throws IOException {
        JsonNode d = JSON.readTree(dashboard.toFile());
        boolean jobVariable = false;
        for (JsonNode v : d.path("templating").path("list"))
            jobVariable |= v.path("name").asText().equals("job_name");
        assertThat(jobVariable).as("the dashboard's variable job_name").isTrue();
        Map<String, String> out = new LinkedHashMap<>();
        for (JsonNode panel : d.path("panels")) {
            assertThat(panel.path("datasource").path("uid").asText())
                    .as("data source of panel %s", panel.path("title"))
                    .isEqualTo("${datasource}");
            for (JsonNode t : panel.path("targets")) {
                String expr = t.path("expr").asText();
                java.util.regex.Matcher selector = java.util.regex.Pattern.compile("flink_[A-Za-z0-9_]+(\\{[^}]*\\})?")
                        .matcher(expr);
                while (selector.find()) {
                    assertThat(selector.group())
                            .as("a metric of panel %s filtered by the job", panel.path("title"))
                            .contains("job_name=~\"$job_name\"");
                }
                out.put(
                        panel.path("title").asText() + " / " + t.path("refId").asText(),
                        expr.replace("$job_name", ".*"));
            }
        }
        return out;
    }

    /** Polls every query until each returns a finite value or the time is up; returns those still without data. */
    static Map<String, String> awaitData(Prometheus prometheus, Map<String, String> queries, Duration timeout)
            throws Exception {
        Map<String, String> pending = new LinkedHashMap<>(queries);
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!pending.isEmpty() && System.nanoTime() < deadline) {
            pending.entrySet().removeIf(q -> prometheus.hasFiniteValue(q.getValue()));
            if (!pending.isEmpty()) Thread.sleep(2_000);
        }
        return pending;
    }

    /**
     * A live stream at about 400 events per second: event times follow the clock; every fifth event has an
     * event_id, a tenth of those delivered twice; one record in a hundred is not JSON, one in two hundred is
     * ten minutes late.
     */
    static void produce(KafkaBroker broker, AtomicBoolean producing, AtomicReference<Throwable> error) {
        Properties p = new Properties();
        p.putAll(broker.adminProperties());
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            long i = 0;
            while (producing.get()) {
                long now = System.currentTimeMillis();
                for (int k = 0; k < 40; k++, i++) {
                    String value;
                    if (i % 100 == 7) value = "not json " + i;
                    else if (i % 200 == 13) value = "{\"counter\":\"dash:late\",\"ts\":" + (now - 600_000) + "}";
                    else if (i % 5 == 0) {
                        long original = i % 50 == 0 && i > 0
                                ? i - 5
                                : i; // a redelivery of the event five before: same counter and event_id
                        value = "{\"counter\":\"dash:c" + (original % 50) + "\",\"ts\":" + now + ",\"event_id\":\"e"
                                + original + "\",\"user\":\"u" + (i % 30) + "\"}";
                    } else value = "{\"counter\":\"dash:c" + (i % 50) + "\",\"ts\":" + now + "}";
                    producer.send(
                            new ProducerRecord<>(
                                    "counter-events", (int) (i % 2), null, value.getBytes(StandardCharsets.UTF_8)),
                            (m, e) -> {
                                if (e != null) error.compareAndSet(null, e);
                            });
                }
                Thread.sleep(100);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Throwable t) {
            error.compareAndSet(null, t);
        }
    }

    /** Debian's Prometheus server on a free port of 127.0.0.1, scraping {@code count} ports from {@code base} every second. */
    static final class Prometheus implements AutoCloseable {
        private final Process process;
        final String url;
        private final HttpClient http =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

        private Prometheus(Process process, String url) {
            this.process = process;
            this.url = url;
        }

        static Prometheus start(Path binary, Path dir, int base, int count) throws Exception {
            Files.createDirectories(dir);
            StringBuilder targets = new StringBuilder();
            for (int port = base; port < base + count; port++)
                targets.append(targets.length() == 0 ? "" : ", ")
                        .append("'127.0.0.1:")
                        .append(port)
                        .append('\'');
            Path config = dir.resolve("prometheus.yml");
            Files.writeString(config, """
                    global:
                      scrape_interval: 1s
                      scrape_timeout: 1s
                      evaluation_interval: 1s
                    scrape_configs:
                      - job_name: flink
                        static_configs:
                          - targets: [%s]
                    """.formatted(targets));
            int port = freePortRange(1);
            Process p = new ProcessBuilder(
                            binary.toString(),
                            "--config.file=" + config,
                            "--storage.tsdb.path=" + dir.resolve("data"),
                            "--web.listen-address=127.0.0.1:" + port,
                            "--storage.tsdb.retention.time=1h")
                    .redirectErrorStream(true)
                    .redirectOutput(dir.resolve("prometheus.log").toFile())
                    .start();
            Prometheus prometheus = new Prometheus(p, "http://127.0.0.1:" + port);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (System.nanoTime() < deadline) {
                if (!p.isAlive())
                    throw new IllegalStateException(
                            "prometheus exited: " + Files.readString(dir.resolve("prometheus.log")));
                if (prometheus.get("/-/ready") != null) return prometheus;
                Thread.sleep(200);
            }
            prometheus.close();
            throw new IllegalStateException(
                    "prometheus was not ready within 30 s: " + Files.readString(dir.resolve("prometheus.log")));
        }

        /** Whether an instant query returns at least one series with a finite value. */
        boolean hasFiniteValue(String query) {
            String body = get("/api/v1/query?query=" + URLEncoder.encode(query, StandardCharsets.UTF_8));
            if (body == null) return false;
            try {
                JsonNode r = JSON.readTree(body);
                if (!"success".equals(r.path("status").asText()))
                    throw new AssertionError("query " + query + " failed: " + body);
                for (JsonNode series : r.path("data").path("result")) {
                    double v = Double.parseDouble(series.path("value").path(1).asText("NaN"));
                    if (Double.isFinite(v)) return true;
                }
                return false;
            } catch (IOException e) {
                throw new AssertionError("unreadable answer to " + query + ": " + body, e);
            }
        }

        private String get(String path) {
            try {
                HttpResponse<String> r = http.send(
                        HttpRequest.newBuilder(URI.create(url + path))
                                .timeout(Duration.ofSeconds(5))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());
                return r.statusCode() == 200 || r.statusCode() == 400 ? r.body() : null;
            } catch (IOException e) {
                return null;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            }
        }

        @Override
        public void close() throws InterruptedException {
            process.destroy();
            if (!process.waitFor(20, TimeUnit.SECONDS))
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
    }

    /** The first of {@code count} consecutive ports that are all free on this machine. */
    static int freePortRange(int count) throws IOException {
        for (int attempt = 0; attempt < 200; attempt++) {
            int base = 20_000 + (int) (Math.random() * 30_000);
            boolean free = true;
            for (int port = base; port < base + count && free; port++) {
                try (ServerSocket s = new ServerSocket(port)) {
                    s.setReuseAddress(true);
                } catch (IOException taken) {
                    free = false;
                }
            }
            if (free) return base;
        }
        throw new IOException("no " + count + " consecutive free ports found");
    }

    static Path onPath(String name) {
        for (String dir : System.getenv().getOrDefault("PATH", "").split(":")) {
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) return p;
        }
        return null;
    }

    static String seconds(long t0) {
        return String.format(Locale.ROOT, "%.1f", (System.nanoTime() - t0) / 1e9);
    }

    static void log(String msg) {
        System.out.printf(Locale.ROOT, "%tT dashboard-it: %s%n", System.currentTimeMillis(), msg);
    }
}
