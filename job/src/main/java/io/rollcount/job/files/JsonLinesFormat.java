package io.rollcount.job.files;

import io.rollcount.job.model.DeadLetterPayload;
import io.rollcount.job.model.Event;
import io.rollcount.job.parse.EventParser;
import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.connector.file.src.FileSourceSplit;
import org.apache.flink.connector.file.src.reader.BulkFormat;
import org.apache.flink.connector.file.src.util.ArrayResultIterator;
import org.apache.flink.connector.file.src.util.CheckpointedPosition;
import org.apache.flink.core.fs.FileSystem;
import org.apache.flink.core.fs.Path;

/**
 * Reads {@code .jsonl} and {@code .jsonl.gz} files for Flink's {@code FileSource}: one record a line,
 * parsed by {@link EventParser} inside the source so that the watermark strategy sees event times.
 *
 * <p>Lines are split on raw bytes ({@code \n}, with a trailing {@code \r} removed), so a line that is not
 * valid UTF-8 reaches the dead-letter output byte for byte. A file is one split (gzip cannot be split);
 * the checkpointed position is the number of lines already emitted, and a restored reader skips that
 * many lines, so line numbers (the {@code source} of a dead letter, {@code path/line}) stay exact across
 * restarts. Lines longer than {@link #MAX_LINE_BYTES} are dead-lettered with their first bytes.
 */
public final class JsonLinesFormat implements BulkFormat<Event, FileSourceSplit> {
    private static final long serialVersionUID = 1L;

    public static final int MAX_LINE_BYTES = 1 << 20;
    private static final int BATCH = 1024;

    private final EventParser parser;

    public JsonLinesFormat(EventParser parser) {
        this.parser = parser;
    }

    /**
     * The file filter of the enumeration: folders (to recurse into) and {@code .jsonl} / {@code .jsonl.gz}
     * files, skipping hidden ones ({@code .} or {@code _} first, as Flink's default filter does).
     */
    public static boolean isInputFile(Path path) {
        String name = path.getName();
        if (name.startsWith(".") || name.startsWith("_")) return false;
        if (name.endsWith(".jsonl") || name.endsWith(".jsonl.gz")) return true;
        try {
            return path.getFileSystem().getFileStatus(path).isDir();
        } catch (IOException e) {
            return false;
        }
    }

    @Override
    public Reader<Event> createReader(Configuration config, FileSourceSplit split) throws IOException {
        return new LineReader(parser, split.path(), 0);
    }

    @Override
    public Reader<Event> restoreReader(Configuration config, FileSourceSplit split) throws IOException {
        long skip = split.getReaderPosition().map(CheckpointedPosition::getRecordsAfterOffset).orElse(0L);
        return new LineReader(parser, split.path(), skip);
    }

    @Override
    public boolean isSplittable() {
        return false;
    }

    @Override
    public TypeInformation<Event> getProducedType() {
        return TypeInformation.of(Event.class);
    }

    private static final class LineReader implements Reader<Event> {
        private final EventParser parser;
        private final InputStream in;
        private final String name;
        private long linesEmitted;
        private byte[] buf = new byte[256];
        private boolean eof;
        /** Bytes of the last line read, however long (only the first MAX_LINE_BYTES + 1 are kept). */
        private long lastLineBytes;

        LineReader(EventParser parser, Path path, long skip) throws IOException {
            this.parser = parser;
            this.name = path.getPath();
            FileSystem fs = path.getFileSystem();
            InputStream raw = new BufferedInputStream(fs.open(path), 1 << 16);
            this.in = path.getName().endsWith(".gz") ? new BufferedInputStream(new GZIPInputStream(raw, 1 << 16), 1 << 16) : raw;
            for (long i = 0; i < skip; i++) {
                if (readLine() < 0) throw new IOException(name + " has fewer lines (" + i + ") than the checkpoint says were read (" + skip + ")");
            }
            this.linesEmitted = skip;
        }

        /** Reads the next line into {@link #buf}; returns its length (possibly capped), or -1 at the end. */
        private int readLine() throws IOException {
            if (eof) return -1;
            int n = 0;
            long total = 0;
            int b;
            while ((b = in.read()) != -1 && b != '\n') {
                total++;
                if (n < MAX_LINE_BYTES + 1) {
                    if (n == buf.length) buf = Arrays.copyOf(buf, Math.min(buf.length * 2, MAX_LINE_BYTES + 1));
                    buf[n++] = (byte) b;
                }
            }
            if (b == -1) {
                eof = true;
                if (total == 0) return -1;
            }
            lastLineBytes = total;
            if (n > 0 && n <= MAX_LINE_BYTES && buf[n - 1] == '\r') n--;
            return n;
        }

        @Override
        public RecordIterator<Event> readBatch() throws IOException {
            Event[] batch = new Event[BATCH];
            int count = 0;
            long first = linesEmitted;
            while (count < BATCH) {
                int len = readLine();
                if (len < 0) break;
                long lineNo = first + count + 1;
                String source = name + "/" + lineNo;
                long now = System.currentTimeMillis();
                Event e;
                if (len > MAX_LINE_BYTES) {
                    e = new Event();
                    e.keepPayload(DeadLetterPayload.ofPrefix(Arrays.copyOf(buf, DeadLetterPayload.MAX_PAYLOAD_BYTES + 4), lastLineBytes,
                            DeadLetterPayload.MAX_PAYLOAD_BYTES));
                    e.source = source;
                    e.ts = now;
                    e.deadLetter(EventParser.INVALID_JSON, "line of " + lastLineBytes + " bytes, longer than " + MAX_LINE_BYTES + " bytes");
                } else {
                    e = parser.parse(Arrays.copyOf(buf, len), null, source, now, 0).cutPayload();
                }
                batch[count++] = e;
            }
            if (count == 0) return null;
            linesEmitted += count;
            ArrayResultIterator<Event> it = new ArrayResultIterator<>();
            it.set(batch, count, 0, first);
            return it;
        }

        @Override
        public void close() throws IOException {
            in.close();
        }
    }
}
