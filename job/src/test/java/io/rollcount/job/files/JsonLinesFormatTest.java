package io.rollcount.job.files;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.model.Event;
import io.rollcount.job.parse.EventParser;
import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPOutputStream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.src.FileSourceSplit;
import org.apache.flink.connector.file.src.reader.BulkFormat;
import org.apache.flink.connector.file.src.util.CheckpointedPosition;
import org.apache.flink.connector.file.src.util.RecordAndPosition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The reader of one file, on real files: dead letters for broken files, once across a restore, and the future rule. */
class JsonLinesFormatTest {
    private static final long T = 1_764_000_000_000L;

    @TempDir
    Path dir;

    private final JsonLinesFormat format = new JsonLinesFormat(new EventParser(0), 600_000);

    private static FileSourceSplit split(Path p, long recordsRead) throws Exception {
        long size = Files.exists(p) ? Files.size(p) : 0;
        return new FileSourceSplit(
                "0",
                new org.apache.flink.core.fs.Path(p.toUri()),
                0,
                size,
                0,
                size,
                new String[0],
                recordsRead == 0 ? null : new CheckpointedPosition(CheckpointedPosition.NO_OFFSET, recordsRead));
    }

    private static List<Event> readAll(BulkFormat.Reader<Event> reader) throws Exception {
        List<Event> out = new ArrayList<>();
        BulkFormat.RecordIterator<Event> batch;
        while ((batch = reader.readBatch()) != null) {
            RecordAndPosition<Event> r;
            while ((r = batch.next()) != null) out.add(r.getRecord());
            batch.releaseBatch();
        }
        reader.close();
        return out;
    }

    @Test
    void aTruncatedGzipIsOneDeadLetterAndNotAgainAfterARestore() throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (GZIPOutputStream gz = new GZIPOutputStream(bytes)) {
            for (int i = 0; i < 10_000; i++)
                gz.write(("{\"counter\":\"a:" + i + "\",\"ts\":" + T + "}\n").getBytes(StandardCharsets.UTF_8));
        }
        Path p = dir.resolve("t.jsonl.gz");
        Files.write(p, java.util.Arrays.copyOf(bytes.toByteArray(), bytes.size() - 5));
        List<Event> first = readAll(format.createReader(new Configuration(), split(p, 0)));
        assertThat(first).hasSize(1);
        assertThat(first.get(0).reason).isEqualTo("unreadable_file");
        assertThat(first.get(0).source).isEqualTo(p.toString());
        assertThat(first.get(0).payload).isNull();
        assertThat(first.get(0).detail).startsWith(p + ": truncated").endsWith("none of its lines count");
        // Restored after its dead letter was emitted (one record read): nothing more.
        assertThat(readAll(format.restoreReader(new Configuration(), split(p, 1))))
                .isEmpty();
    }

    @Test
    void aFileGoneBeforeItsTurnIsOneDeadLetter() throws Exception {
        Path p = dir.resolve("gone.jsonl");
        List<Event> events = readAll(format.createReader(new Configuration(), split(p, 0)));
        assertThat(events).extracting(e -> e.reason).containsExactly("unreadable_file");
        assertThat(events.get(0).detail).contains("cannot be opened");
    }

    @Test
    void aLineFarAheadOfItsFileIsFutureAndARestoreJudgesAlike() throws Exception {
        StringBuilder sb = new StringBuilder();
        for (int i = 1; i <= 5_000; i++) {
            long ts = i == 3_000 ? 253_402_300_000_000L : i == 4_000 ? T + 5_000 + 11 * 60_000 : T + i;
            sb.append("{\"counter\":\"a:1\",\"ts\":").append(ts).append("}\n");
            if (i == 4_500) sb.append("{\"counter\":\"a:no-ts\"}\n"); // read time, never judged
        }
        Path p = dir.resolve("f.jsonl");
        Files.writeString(p, sb);
        List<Event> all = readAll(format.createReader(new Configuration(), split(p, 0)));
        assertThat(all).hasSize(5_001);
        assertThat(all.stream()
                        .filter(Event::isDeadLetter)
                        .map(e -> e.source + " " + e.reason)
                        .toList())
                .containsExactly(p + "/3000 future_ts", p + "/4000 future_ts");
        // Restored at line 2048: the same judgement for the rest.
        List<Event> rest = readAll(format.restoreReader(new Configuration(), split(p, 2_048)));
        assertThat(rest).hasSize(5_001 - 2_048);
        assertThat(rest.stream().filter(Event::isDeadLetter).map(e -> e.source).toList())
                .containsExactly(p + "/3000", p + "/4000");
    }

    @Test
    void aJumpInTimeIsNotFuture() throws Exception {
        StringBuilder sb = new StringBuilder();
        for (int i = 1; i <= 3_000; i++)
            sb.append("{\"counter\":\"a:1\",\"ts\":")
                    .append(i <= 1_020 ? T + i : T + 86_400_000L + i)
                    .append("}\n");
        Path p = dir.resolve("j.jsonl");
        Files.writeString(p, sb);
        assertThat(readAll(format.createReader(new Configuration(), split(p, 0))))
                .noneMatch(Event::isDeadLetter);
    }
}
