package io.rollcount.job.files;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.rollcount.job.FlinkSettings;
import io.rollcount.job.JobSettings;
import io.rollcount.job.Launcher;
import io.rollcount.job.RefusedStartException;
import io.rollcount.job.model.Event;
import io.rollcount.job.support.OtherProcessFileLock;
import io.rollcount.job.support.RedisTestSupport;
import java.io.IOException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobInfoImpl;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 18 item 7: the dead-letter file belongs to one job. A second job on it (another process, or another
 * job in this JVM) is refused with one line before it starts; a restore truncates only back to its own
 * checkpointed length and never cuts off another job's dead letters; a {@code --dlq} in a missing folder works.
 */
class DeadLetterFileSinkIT {
    @TempDir
    Path dir;

    @Test
    void anotherProcessHoldingTheFileRefusesThisJobWithOneLine() throws Exception {
        Path dlq = dir.resolve("shared-dlq.jsonl");
        try (OtherProcessFileLock other = OtherProcessFileLock.hold(DeadLetterFileSink.lockFile(dlq))) {
            assertThatThrownBy(() -> DeadLetterFileSink.refuseIfLocked(dlq.toString()))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("--dlq " + dlq + " is in use by another running job (it holds " + dlq
                            + ".lock): give this job a "
                            + "dead-letter file of its own with --dlq PATH, or stop the other job");
            assertThatThrownBy(() -> new DeadLetterFileSink(dlq.toString()).createWriter(context(new JobID(), 0)))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("in use by another running job");
            // The whole job's wiring refuses too (the check of ./rollcount run and flink run), before anything runs.
            JobSettings o = fileJob(dir.resolve("in"), dlq);
            assertThatThrownBy(() -> Launcher.of(o, Launcher.Place.HERE, "-")
                            .assemble(StreamExecutionEnvironment.getExecutionEnvironment()))
                    .isInstanceOf(RefusedStartException.class)
                    .hasMessageContaining("--dlq " + dlq + " is in use");
            assertThat(dlq).doesNotExist();
        }
        // Once the other process is gone, its lock is too.
        DeadLetterFileSink.refuseIfLocked(dlq.toString());
        StatefulSinkWriter<Event, DeadLetterFileSink.Position> w =
                new DeadLetterFileSink(dlq.toString()).createWriter(context(new JobID(), 0));
        w.close();
    }

    @Test
    void aSecondJobInThisJvmIsRefusedAndARestartedWriterOfTheSameJobIsNot() throws Exception {
        Path dlq = dir.resolve("dlq.jsonl");
        JobID a = new JobID();
        DeadLetterFileSink sink = new DeadLetterFileSink(dlq.toString());
        StatefulSinkWriter<Event, DeadLetterFileSink.Position> first = sink.createWriter(context(a, 0));
        assertThatThrownBy(() -> sink.createWriter(context(new JobID(), 0)))
                .hasMessageContaining("in use by another running job");
        assertThatThrownBy(() -> DeadLetterFileSink.refuseIfLocked(dlq.toString()))
                .hasMessageContaining("in use by another running job");
        // A restarted attempt of the same job, its predecessor not yet closed, shares the lock.
        StatefulSinkWriter<Event, DeadLetterFileSink.Position> second = sink.createWriter(context(a, 1));
        first.close();
        assertThatThrownBy(() -> sink.createWriter(context(new JobID(), 0)))
                .hasMessageContaining("in use by another running job");
        second.close();
        DeadLetterFileSink.refuseIfLocked(dlq.toString());
    }

    @Test
    void aRestoreTruncatesOnlyToItsOwnCheckpointNeverAnotherJobsDeadLetters() throws Exception {
        Path dlq = dir.resolve("dlq.jsonl");
        DeadLetterFileSink sink = new DeadLetterFileSink(dlq.toString());
        JobID a = new JobID();
        JobID b = new JobID();

        // Job A: 3 dead letters checkpointed, 2 more after the checkpoint, then it fails.
        StatefulSinkWriter<Event, DeadLetterFileSink.Position> w = sink.createWriter(context(a, 0));
        write(w, "a1", "a2", "a3");
        DeadLetterFileSink.Position checkpoint1 = snapshot(w);
        write(w, "a4-uncommitted", "a5-uncommitted");
        w.flush(false);
        w.close();
        // Restored alone: back to its checkpoint, then the replay writes them again.
        w = sink.restoreWriter(context(new JobID(), 0), List.of(checkpoint1));
        assertThat(sources(dlq)).containsExactly("a1", "a2", "a3");
        write(w, "a4", "a5");
        DeadLetterFileSink.Position checkpoint2 = snapshot(w);
        write(w, "a6-uncommitted");
        w.flush(false);
        w.close();

        // Job B (a fresh run on the same file after A stopped) appends 4 of its own.
        w = sink.createWriter(context(b, 0));
        write(w, "b1", "b2", "b3", "b4");
        w.flush(true);
        w.close();

        // A resumes from checkpoint 2: B's dead letters stay (A's line after its checkpoint too: at least once).
        w = sink.restoreWriter(context(new JobID(), 0), List.of(checkpoint2));
        assertThat(sources(dlq))
                .containsExactly("a1", "a2", "a3", "a4", "a5", "a6-uncommitted", "b1", "b2", "b3", "b4");
        write(w, "a6");
        DeadLetterFileSink.Position checkpoint3 = snapshot(w);
        write(w, "a7-uncommitted");
        w.flush(false);
        w.close();
        // A fails again: restored from checkpoint 3, its own since it took the file back.
        w = sink.restoreWriter(context(new JobID(), 0), List.of(checkpoint3));
        assertThat(sources(dlq))
                .containsExactly("a1", "a2", "a3", "a4", "a5", "a6-uncommitted", "b1", "b2", "b3", "b4", "a6");
        w.close();
        // Even a restore from A's oldest checkpoint never cuts below where A took the file back from B.
        w = sink.restoreWriter(context(new JobID(), 0), List.of(checkpoint1));
        assertThat(sources(dlq))
                .containsExactly("a1", "a2", "a3", "a4", "a5", "a6-uncommitted", "b1", "b2", "b3", "b4");
        w.close();

        // Job C fails before its first checkpoint: its restart (attempt 1) replays from the start, and truncates back
        // to C's start only.
        JobID c = new JobID();
        w = sink.createWriter(context(c, 0));
        write(w, "c1");
        w.flush(false);
        w.close();
        w = sink.createWriter(context(c, 1));
        assertThat(sources(dlq))
                .containsExactly("a1", "a2", "a3", "a4", "a5", "a6-uncommitted", "b1", "b2", "b3", "b4");
        w.close();
    }

    @Test
    void aDlqInAMissingFolderWorks() throws Exception {
        Path in = dir.resolve("in");
        Files.createDirectories(in);
        Files.writeString(
                in.resolve("events.jsonl"),
                "{\"counter\":\"dlqdir:a\",\"delta\":2}\nnot json\n{\"counter\":\"dlqdir:a\",\"delta\":3}\n");
        Path dlq = dir.resolve("missing").resolve("deeper").resolve("dead.jsonl");
        try (RedisTestSupport redis = new RedisTestSupport()) {
            JobSettings o = fileJob(in, dlq).toBuilder()
                    .set("--redis", redis.url())
                    .set("--redis.key-prefix", redis.prefix)
                    .build();
            Configuration conf = FlinkSettings.configuration(o);
            conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
            conf.set(CoreOptions.TMP_DIRS, dir.resolve("tmp").toString());
            StreamExecutionEnvironment env = StreamExecutionEnvironment.createLocalEnvironment(1, conf);
            Launcher.of(o, Launcher.Place.HERE, "-").assemble(env);
            env.execute("dlq-in-missing-folder");
            assertThat(redis.jedis.get(redis.prefix + ":{dlqdir:a}:total")).isEqualTo("5");
            List<String> lines = Files.readAllLines(dlq);
            assertThat(lines).hasSize(1);
            assertThat(lines.get(0))
                    .startsWith("{\"reason\":\"invalid_json\"")
                    .contains("\"payload\":\"not json\"")
                    .endsWith(
                            "\"source\":\"" + in.resolve("events.jsonl").toUri().getPath() + "/2\"}");
        }
    }

    private static JobSettings fileJob(Path input, Path dlq) {
        return JobSettings.builder()
                .set("--source", JobSettings.SourceKind.files)
                .set("--input", input.toString())
                .set("--dlq", dlq.toString())
                .set("--checkpoint.interval", Duration.ofSeconds(1))
                .build();
    }

    private static void write(StatefulSinkWriter<Event, DeadLetterFileSink.Position> w, String... sources)
            throws IOException, InterruptedException {
        for (String s : sources) {
            Event e = new Event();
            e.payload = "x".getBytes(StandardCharsets.UTF_8);
            e.source = s;
            w.write(e.deadLetter("invalid_json", "test"), null);
        }
    }

    /** What Flink does at a checkpoint barrier: flush, then snapshot. */
    private static DeadLetterFileSink.Position snapshot(StatefulSinkWriter<Event, DeadLetterFileSink.Position> w)
            throws Exception {
        w.flush(false);
        return w.snapshotState(1).get(0);
    }

    private static List<String> sources(Path dlq) throws IOException {
        return Files.readAllLines(dlq).stream()
                .map(l -> l.replaceAll(".*\"source\":\"([^\"]*)\".*", "$1"))
                .toList();
    }

    /** A writer context of the given job and attempt (the sink reads nothing else). */
    private static WriterInitContext context(JobID job, int attempt) {
        return (WriterInitContext) Proxy.newProxyInstance(
                WriterInitContext.class.getClassLoader(),
                new Class<?>[] {WriterInitContext.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "getJobInfo" -> new JobInfoImpl(job, "test");
                    case "getTaskInfo" -> new TaskInfoImpl("dead-letters", 1, 0, 1, attempt);
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }
}
