package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.support.RedisTestSupport;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/**
 * Issue 18, item 3, end to end with {@code ./rollcount run} (in this JVM) on a real Kafka broker and Redis:
 * a Kafka job stopped and started again with {@code run} resumes from its retained checkpoint, so the
 * total is everything produced (1,500, not the 500 read after the restart, nor the 1,000 before it); an
 * empty start over its keys is refused (exit 2) unless {@code --fresh}, which recounts from what it reads;
 * a second job on the prefix while the first runs is refused (exit 2).
 */
class RunRestartIT {
    private static final String COUNTER = "page:restart";
    private static final String TOPIC = "restart-events";

    @TempDir
    Path dir;

    /** One {@code run} in a thread of its own, its stderr captured. */
    record Run(RunCommand command, CompletableFuture<Integer> exit, StringWriter err) {
        void cancel() throws Exception {
            command.running.cancel().get(30, TimeUnit.SECONDS);
            assertThat(exit.get(60, TimeUnit.SECONDS))
                    .as("exit code of a cancelled run; stderr: %s", err)
                    .isEqualTo(130);
        }
    }

    @Test
    void restartResumesFreshIsRefusedOrRecountsAndASecondJobIsRefused() throws Exception {
        try (RedisTestSupport redis = new RedisTestSupport();
                KafkaBroker broker = new KafkaBroker(0, dir.resolve("kafka")).start()) {
            broker.createTopics(1, TOPIC);
            String total = new RedisKeys(redis.prefix).total(COUNTER);
            String tx = "restart-" + UUID.randomUUID().toString().substring(0, 8);
            String chk = dir.resolve("chk").toUri().toString();
            List<String> common = List.of(
                    "--source",
                    "kafka",
                    "--kafka.bootstrap",
                    broker.bootstrap(),
                    "--kafka.topic",
                    TOPIC,
                    "--kafka.group-id",
                    "g-" + tx,
                    "--kafka.transactional-id-prefix",
                    tx,
                    "--redis",
                    redis.url(),
                    "--redis.key-prefix",
                    redis.prefix,
                    "--checkpoint.interval",
                    "1s",
                    "--parallelism",
                    "1");

            // 1. A job counts 1,000 events, checkpoints, and is stopped.
            produce(broker, 1_000);
            Run a = start(common, "--checkpoint.dir", chk);
            await(() -> "1000".equals(redis.jedis.get(total)), 90, "first run counts 1,000");
            long counted = System.currentTimeMillis();
            await(
                    () -> checkpointAfter(dir.resolve("chk").resolve(redis.prefix), counted),
                    30,
                    "a checkpoint after the count");
            a.cancel();

            // 2. 500 more; `run` again with the same options resumes: the total is all 1,500.
            produce(broker, 500);
            Run b = start(common, "--checkpoint.dir", chk);
            await(() -> "1500".equals(redis.jedis.get(total)), 90, "the restarted run reaches 1,500");
            assertThat(b.err().toString())
                    .contains("rollcount: resuming from checkpoint", "the latest of key prefix '" + redis.prefix + "'");

            // 3. While it runs, a second job on the prefix is refused, even with --fresh.
            CompletableFuture<Integer> second = start(
                            common,
                            "--checkpoint.dir",
                            dir.resolve("other").toUri().toString(),
                            "--fresh")
                    .exit();
            Run c = start(
                    common, "--checkpoint.dir", dir.resolve("other").toUri().toString());
            assertThat(second.get(60, TimeUnit.SECONDS)).isEqualTo(RunCommand.EXIT_REFUSED);
            assertThat(c.exit().get(60, TimeUnit.SECONDS)).isEqualTo(RunCommand.EXIT_REFUSED);
            assertThat(c.err().toString().strip())
                    .startsWith("rollcount: key prefix '" + redis.prefix + "' is in use by a running job")
                    .contains("own --redis.key-prefix")
                    .doesNotContain("\n");
            assertThat(redis.jedis.get(total)).isEqualTo("1500");
            b.cancel();
            assertThat(redis.jedis.exists(redis.prefix + ":_lease"))
                    .as("the lease is given up when the job stops")
                    .isFalse();

            // 4. Once it stopped: an empty start (no checkpoint of its own) over those counts is refused ...
            Run d = start(
                    common, "--checkpoint.dir", dir.resolve("empty").toUri().toString());
            assertThat(d.exit().get(60, TimeUnit.SECONDS)).isEqualTo(RunCommand.EXIT_REFUSED);
            assertThat(d.err().toString().strip())
                    .startsWith("rollcount: key prefix '" + redis.prefix + "' holds the counts of an earlier job")
                    .contains("--resume PATH", "new --redis.key-prefix", "--fresh")
                    .doesNotContain("\n");
            assertThat(redis.jedis.get(total)).isEqualTo("1500");

            // 5. ... and --fresh deletes the prefix's keys and counts from zero what it reads: here the whole topic
            // again.
            List<String> fresh = new ArrayList<>(common);
            fresh.set(fresh.indexOf("g-" + tx), "g2-" + tx);
            Run e = start(
                    fresh,
                    "--checkpoint.dir",
                    dir.resolve("fresh").toUri().toString(),
                    "--fresh",
                    "--kafka.starting-offsets",
                    "earliest",
                    "--bounded");
            assertThat(e.exit().get(120, TimeUnit.SECONDS))
                    .as("stderr: %s", e.err())
                    .isZero();
            assertThat(redis.jedis.get(total)).isEqualTo("1500");
        }
    }

    private static boolean checkpointAfter(Path base, long millis) {
        try {
            Path latest = RunCommand.latestCheckpoint(base);
            return latest != null
                    && java.nio.file.Files.getLastModifiedTime(latest.resolve("_metadata"))
                                    .toMillis()
                            > millis;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    private static Run start(List<String> common, String... more) {
        RunCommand command = new RunCommand();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(command);
        cli.setErr(new PrintWriter(err, true));
        List<String> args = new ArrayList<>(common);
        args.addAll(List.of(more));
        CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() -> cli.execute(args.toArray(String[]::new)));
        Run run = new Run(command, exit, err);
        if (!List.of(more).contains("--bounded")) {
            // wait until it runs, or ended (refused)
            await(() -> command.running != null || exit.isDone(), 60, "the run starts");
        }
        return run;
    }

    private static void produce(KafkaBroker broker, int n) {
        Properties p = broker.adminProperties();
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("acks", "all");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++)
                producer.send(new ProducerRecord<>(TOPIC, COUNTER, "{\"counter\":\"" + COUNTER + "\",\"delta\":1}"));
            producer.flush();
        }
    }

    private static void await(BooleanSupplier condition, int seconds, String what) {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("timed out waiting for: " + what);
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                throw new AssertionError(e);
            }
        }
    }
}
