package io.rollcount.cli;

import io.rollcount.job.gen.EventGenerator;
import java.nio.charset.StandardCharsets;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The demo's event source: a thread that produces the {@code viral} workload of BENCHMARKS.md to Kafka at a
 * paced rate, with event times taken from the wall clock as each record is sent (a redelivery carries the
 * time it is sent again, like a client that retries). The rate is a ceiling: when the thread falls more
 * than a second behind it skips the backlog instead of sending it in a burst.
 */
final class DemoGenerator implements AutoCloseable {
    private final EventGenerator generator;
    private final KafkaProducer<byte[], byte[]> producer;
    private final String topic;
    private final double rate;
    private final Thread thread;
    private final LongAdder acked = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final AtomicReference<Exception> firstError = new AtomicReference<>();
    private volatile boolean running = true;

    DemoGenerator(EventGenerator generator, Properties kafka, String topic, double rate) {
        this.generator = generator;
        this.topic = topic;
        this.rate = rate;
        Properties p = new Properties();
        p.putAll(kafka);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "20");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, String.valueOf(128 * 1024));
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "rollcount-demo-generator");
        this.producer = new KafkaProducer<>(p);
        this.thread = new Thread(this::run, "rollcount-demo-generator");
        this.thread.setDaemon(true);
    }

    DemoGenerator start() {
        thread.start();
        return this;
    }

    /** Records the broker has acknowledged. */
    long produced() {
        return acked.sum();
    }

    long failed() {
        return failed.sum();
    }

    Exception firstError() {
        return firstError.get();
    }

    private void run() {
        long started = System.nanoTime();
        long n = 0;
        long forgiven = 0;
        try {
            while (running) {
                double elapsed = (System.nanoTime() - started) / 1e9;
                long target = (long) (elapsed * rate) - forgiven;
                if (target - n > rate) {
                    // More than a second behind (the machine is busy): give the backlog up rather than send
                    // it in a burst, so that no second of event time holds more than --rate events.
                    forgiven += target - n;
                    target = n;
                }
                if (n >= target) {
                    Thread.sleep(2);
                    continue;
                }
                // At most 50 ms of events in one go, so that a stop request is seen promptly.
                long until = Math.min(target, n + Math.max(1, (long) (rate / 20)));
                long now = System.currentTimeMillis();
                for (; n < until && running; n++) {
                    String line = withTime(generator.next().line(), now);
                    producer.send(new ProducerRecord<>(topic, null, line.getBytes(StandardCharsets.UTF_8)), (md, e) -> {
                        if (e == null) {
                            acked.increment();
                        } else {
                            failed.increment();
                            firstError.compareAndSet(null, e);
                        }
                    });
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            firstError.compareAndSet(null, e);
        }
    }

    /** The line with its {@code "ts"} replaced by {@code ts}. */
    static String withTime(String line, long ts) {
        int i = line.indexOf("\"ts\":");
        if (i < 0) return line;
        int from = i + 5;
        int to = from;
        while (to < line.length() && (Character.isDigit(line.charAt(to)) || line.charAt(to) == '-')) to++;
        return line.substring(0, from) + ts + line.substring(to);
    }

    /** Stops producing, sends what is buffered and closes the producer. */
    @Override
    public void close() {
        running = false;
        try {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        producer.close(java.time.Duration.ofSeconds(10));
    }
}
