package io.rollcount.cli;

import io.rollcount.job.kafka.KafkaClients;
import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.zip.GZIPInputStream;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code ./rollcount produce}: sends the lines of a .jsonl / .jsonl.gz file to a topic, one record per line, byte for byte. */
@Command(
        name = "produce",
        mixinStandardHelpOptions = true,
        description =
                "Send every line of a .jsonl or .jsonl.gz file to Kafka as one record (key: the line's counter when it has one).")
final class ProduceCommand implements Callable<Integer> {
    private static final Pattern COUNTER = Pattern.compile("\"counter\"\\s*:\\s*\"([^\"\\\\]{1,256})\"");

    @Option(names = "--input", required = true, paramLabel = "FILE", description = "The file to send.")
    Path input;

    @Option(
            names = "--kafka.bootstrap",
            required = true,
            paramLabel = "HOST:PORT",
            description = "Kafka bootstrap servers.")
    String bootstrap;

    @Option(
            names = "--kafka.topic",
            defaultValue = "counter-events",
            description = "Topic (default: ${DEFAULT-VALUE}).")
    String topic;

    @Option(
            names = "--kafka.properties",
            paramLabel = "FILE",
            description = "Kafka client properties (SASL, SSL, ...).")
    String properties;

    @Override
    public Integer call() throws Exception {
        return produce(System.out, System.err);
    }

    /**
     * Sends every line and reports only what the broker acknowledged: a record the producer or the broker
     * refused (too large, no leader, an authorization error) is counted as failed, with the first error, and
     * the command exits 1: what it reports as sent is what the topic holds.
     */
    int produce(PrintStream out, PrintStream err) throws Exception {
        KafkaClients.ensureTopics(
                KafkaClients.properties(bootstrap, properties), KafkaClients.DEFAULT_CHECK_TIMEOUT, topic);
        Properties p = KafkaClients.properties(bootstrap, properties);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "262144");
        AtomicLong acked = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicReference<String> firstError = new AtomicReference<>();
        Callback callback = (metadata, exception) -> {
            if (exception == null) {
                acked.incrementAndGet();
            } else {
                failed.incrementAndGet();
                firstError.compareAndSet(null, exception.getClass().getSimpleName() + ": " + exception.getMessage());
            }
        };
        long lines = 0;
        long started = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer =
                        new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
                InputStream raw = new BufferedInputStream(Files.newInputStream(input), 1 << 16);
                InputStream in =
                        input.getFileName().toString().endsWith(".gz") ? new GZIPInputStream(raw, 1 << 16) : raw) {
            ByteArrayOutputStream line = new ByteArrayOutputStream(256);
            int b;
            boolean any = false;
            while (true) {
                b = in.read();
                if (b == '\n' || (b == -1 && any)) {
                    byte[] value = line.toByteArray();
                    int n = value.length;
                    if (n > 0 && value[n - 1] == '\r') value = java.util.Arrays.copyOf(value, n - 1);
                    lines++;
                    try {
                        producer.send(new ProducerRecord<>(topic, keyOf(value), value), callback);
                    } catch (KafkaException e) {
                        callback.onCompletion(null, e);
                    }
                    line.reset();
                    any = false;
                    if (b == -1) break;
                } else if (b == -1) {
                    break;
                } else {
                    line.write(b);
                    any = true;
                }
            }
            producer.flush();
        }
        out.printf(
                "rollcount: sent %,d records to %s in %.1f s%n",
                acked.get(), topic, (System.nanoTime() - started) / 1e9);
        if (failed.get() > 0) {
            err.printf(
                    "rollcount: %,d of %,d lines were not accepted by Kafka (first error: %s)%n",
                    failed.get(), lines, firstError.get());
            return 1;
        }
        return 0;
    }

    private static byte[] keyOf(byte[] value) {
        Matcher m = COUNTER.matcher(new String(value, StandardCharsets.UTF_8));
        return m.find() ? m.group(1).getBytes(StandardCharsets.UTF_8) : null;
    }
}
