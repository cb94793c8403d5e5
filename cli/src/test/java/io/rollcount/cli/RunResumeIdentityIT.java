package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisServerProcess;
import io.rollcount.job.support.RedisTestSupport;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;
import redis.clients.jedis.Jedis;

/**
 * {@code ./rollcount run} (in this JVM) resumes automatically only a checkpoint of a job of its own identity (key
 * prefix, Redis target, source kind and place) that has not ended, and a {@code --bounded} run resumed from an
 * unbounded run's checkpoint stops at the end offsets found at its start. Real Kafka brokers and Redis servers.
 */
class RunResumeIdentityIT {
    private static final String COUNTER = "page:resume";
    private static final String TOPIC = "resume-events";
    private static final String EVENT = "{\"counter\":\"" + COUNTER + "\",\"delta\":1}";

    @TempDir
    Path dir;

    private final List<Run> started = new ArrayList<>();

    /** One {@code run} in a thread of its own, its stderr captured. */
    record Run(RunCommand command, CompletableFuture<Integer> exit, StringWriter err) {
        int exitCode(int seconds) throws Exception {
            return exit.get(seconds, TimeUnit.SECONDS);
        }

        /** Its one line, for a refused start. */
        String line() {
            return err.toString().strip();
        }

        void cancel() throws Exception {
            command.running.cancel().get(30, TimeUnit.SECONDS);
            assertThat(exitCode(60))
                    .as("exit code of a cancelled run; stderr: %s", err)
                    .isEqualTo(130);
        }
    }

    @AfterEach
    void stopLeftovers() {
        for (Run r : started) {
            if (!r.exit().isDone() && r.command().running != null)
                r.command().running.cancel();
        }
    }

    @Test
    void finishedBoundedKafkaRunThenFilesRunOnItsPrefixIsRefused() throws Exception {
        try (RedisTestSupport redis = new RedisTestSupport();
                KafkaBroker broker = new KafkaBroker(0, dir.resolve("kafka")).start()) {
            broker.createTopics(1, TOPIC);
            // A stopped run leaves its checkpoint; a --fresh --bounded run on the prefix recounts and ends (exit 0).
            produce(broker, 1_000);
            List<String> kafka = kafkaArgs(broker, redis.url(), redis.prefix);
            countAndStop(kafka, () -> redis.jedis.get(total(redis.prefix)));
            List<String> fresh = new ArrayList<>(kafka);
            fresh.set(fresh.indexOf("g-" + redis.prefix), "g2-" + redis.prefix);
            Run bounded = start(fresh, "--fresh", "--bounded");
            assertThat(bounded.exitCode(90)).as("stderr: %s", bounded.err()).isZero();
            assertThat(RunCommand.latestCheckpoint(dir.resolve("chk").resolve(redis.prefix)))
                    .as("the stopped run's checkpoint is still there")
                    .isNotNull();

            // A files run of the same events does not resume the checkpoint that the finished run went past.
            Path input = dir.resolve("events.jsonl");
            Files.writeString(input, (EVENT + "\n").repeat(1_000));
            Run files = start(List.of(
                    "--source",
                    "files",
                    "--input",
                    input.toString(),
                    "--redis",
                    redis.url(),
                    "--redis.key-prefix",
                    redis.prefix,
                    "--checkpoint.dir",
                    checkpointDir(),
                    "--parallelism",
                    "1"));
            assertThat(files.exitCode(60)).as("stderr: %s", files.err()).isEqualTo(RunCommand.EXIT_REFUSED);
            assertThat(files.line())
                    .startsWith("rollcount: key prefix '" + redis.prefix + "' holds the counts of an earlier job")
                    .contains("--resume PATH", "--fresh")
                    .doesNotContain("\n");
            assertThat(redis.jedis.get(new RedisKeys(redis.prefix).total(COUNTER)))
                    .isEqualTo("1000");
        }
    }

    @Test
    void kafkaRunThenARunAgainstAnotherBrokerIsRefused() throws Exception {
        try (RedisTestSupport redis = new RedisTestSupport();
                KafkaBroker a = new KafkaBroker(0, dir.resolve("kafka-a")).start();
                KafkaBroker b = new KafkaBroker(0, dir.resolve("kafka-b")).start()) {
            a.createTopics(1, TOPIC);
            b.createTopics(1, TOPIC);
            produce(a, 1_000);
            countAndStop(kafkaArgs(a, redis.url(), redis.prefix), () -> redis.jedis.get(total(redis.prefix)));

            Run other = start(kafkaArgs(b, redis.url(), redis.prefix));
            assertThat(other.exitCode(60)).as("stderr: %s", other.err()).isEqualTo(RunCommand.EXIT_REFUSED);
            assertThat(other.line())
                    .startsWith("rollcount: the latest checkpoint of key prefix '" + redis.prefix + "'")
                    .contains("is another job's", "kafka topic " + TOPIC + " of cluster")
                    .contains("--resume PATH", "--fresh", "--redis.key-prefix")
                    .doesNotContain("\n");
        }
    }

    @Test
    void stoppedRunResumedBoundedAfterARedisLossEndsExact() throws Exception {
        try (RedisServerProcess server = RedisServerProcess.launch();
                Jedis jedis = new Jedis("127.0.0.1", server.port);
                KafkaBroker broker = new KafkaBroker(0, dir.resolve("kafka")).start()) {
            broker.createTopics(2, TOPIC);
            String prefix = "rcr" + UUID.randomUUID().toString().substring(0, 8);
            List<String> args = kafkaArgs(broker, server.url(), prefix);
            produce(broker, 10_000);
            countAndStop(args, () -> jedis.get(total(prefix)));

            produce(broker, 5_000);
            jedis.flushAll();
            Run bounded = start(args, "--bounded");
            assertThat(bounded.exitCode(90)).as("stderr: %s", bounded.err()).isZero();
            assertThat(bounded.err().toString()).contains("rollcount: resuming from checkpoint");
            assertThat(jedis.get(total(prefix))).isEqualTo("15000");
        }
    }

    @Test
    void runAgainstRedisAThenRedisBOnItsPrefixIsRefused() throws Exception {
        try (RedisTestSupport a = new RedisTestSupport();
                RedisServerProcess b = RedisServerProcess.launch();
                KafkaBroker broker = new KafkaBroker(0, dir.resolve("kafka")).start()) {
            broker.createTopics(1, TOPIC);
            produce(broker, 1_000);
            countAndStop(kafkaArgs(broker, a.url(), a.prefix), () -> a.jedis.get(total(a.prefix)));

            Run other = start(kafkaArgs(broker, b.url(), a.prefix));
            assertThat(other.exitCode(60)).as("stderr: %s", other.err()).isEqualTo(RunCommand.EXIT_REFUSED);
            assertThat(other.line())
                    .startsWith("rollcount: the latest checkpoint of key prefix '" + a.prefix + "'")
                    .contains("is another job's (Redis " + a.host + ":" + a.port + "/0")
                    .contains("not this run's (Redis 127.0.0.1:" + b.port + "/0")
                    .doesNotContain("\n");
        }
    }

    @Test
    void resumePathOfAnotherJobsCheckpointIsTaken() throws Exception {
        try (RedisTestSupport a = new RedisTestSupport();
                RedisServerProcess b = RedisServerProcess.launch();
                Jedis onB = new Jedis("127.0.0.1", b.port);
                KafkaBroker broker = new KafkaBroker(0, dir.resolve("kafka")).start()) {
            broker.createTopics(1, TOPIC);
            produce(broker, 1_000);
            countAndStop(kafkaArgs(broker, a.url(), a.prefix), () -> a.jedis.get(total(a.prefix)));
            Path chk = RunCommand.latestCheckpoint(dir.resolve("chk").resolve(a.prefix));

            Run taken = start(kafkaArgs(broker, b.url(), a.prefix), "--resume", chk.toString(), "--bounded");
            assertThat(taken.exitCode(90)).as("stderr: %s", taken.err()).isZero();
            assertThat(taken.err().toString()).contains("rollcount: resuming from checkpoint " + chk, "(--resume");
            assertThat(onB.get(total(a.prefix)))
                    .as("B rebuilt from the checkpoint's state")
                    .isEqualTo("1000");
        }
    }

    /** Starts a run, waits until it counted everything produced so far and checkpointed after that, cancels it. */
    private void countAndStop(List<String> args, java.util.function.Supplier<String> total) throws Exception {
        Run run = start(args);
        await(() -> total.get() != null && total.get().equals(String.valueOf(produced)), 90, "the run counts");
        long counted = System.currentTimeMillis();
        Path base = dir.resolve("chk").resolve(args.get(args.indexOf("--redis.key-prefix") + 1));
        await(() -> checkpointAfter(base, counted), 30, "a checkpoint after the count");
        run.cancel();
    }

    private List<String> kafkaArgs(KafkaBroker broker, String redisUrl, String prefix) {
        return kafkaArgs(broker, redisUrl, prefix, "1s");
    }

    private List<String> kafkaArgs(KafkaBroker broker, String redisUrl, String prefix, String checkpointInterval) {
        String tx = "resume-" + prefix;
        return List.of(
                "--source",
                "kafka",
                "--kafka.bootstrap",
                broker.bootstrap(),
                "--kafka.topic",
                TOPIC,
                "--kafka.group-id",
                "g-" + prefix,
                "--kafka.transactional-id-prefix",
                tx,
                "--kafka.starting-offsets",
                "earliest",
                "--redis",
                redisUrl,
                "--redis.key-prefix",
                prefix,
                "--checkpoint.dir",
                checkpointDir(),
                "--checkpoint.interval",
                checkpointInterval,
                "--parallelism",
                "1");
    }

    private String checkpointDir() {
        return dir.resolve("chk").toUri().toString();
    }

    private static String total(String prefix) {
        return new RedisKeys(prefix).total(COUNTER);
    }

    private static boolean checkpointAfter(Path base, long millis) {
        try {
            Path latest = RunCommand.latestCheckpoint(base);
            return latest != null
                    && Files.getLastModifiedTime(latest.resolve("_metadata")).toMillis() > millis;
        } catch (java.io.IOException e) {
            return false;
        }
    }

    private Run start(List<String> common, String... more) {
        RunCommand command = new RunCommand();
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(command);
        cli.setErr(new PrintWriter(err, true));
        List<String> args = new ArrayList<>(common);
        args.addAll(List.of(more));
        CompletableFuture<Integer> exit = CompletableFuture.supplyAsync(() -> cli.execute(args.toArray(String[]::new)));
        Run run = new Run(command, exit, err);
        started.add(run);
        await(() -> command.running != null || exit.isDone(), 60, "the run starts");
        return run;
    }

    private long produced;

    private void produce(KafkaBroker broker, int n) {
        Properties p = broker.adminProperties();
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("acks", "all");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(TOPIC, COUNTER + i, EVENT));
            producer.flush();
        }
        produced += n;
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
