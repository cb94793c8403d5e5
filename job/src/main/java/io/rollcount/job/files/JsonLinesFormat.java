package io.rollcount.job.files;

import io.rollcount.job.model.DeadLetterPayload;
import io.rollcount.job.model.Event;
import io.rollcount.job.model.RecentEventTimes;
import io.rollcount.job.parse.EventParser;
import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.AccessDeniedException;
import java.nio.file.NoSuchFileException;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;
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
 * the checkpointed position is the number of records already emitted, and a restored reader skips that
 * many lines, so line numbers (the {@code source} of a dead letter, {@code path/line}) stay exact across
 * restarts. Lines longer than {@link #MAX_LINE_BYTES} are dead-lettered with their first bytes.
 *
 * <p>A broken file costs one dead letter, never the run. A gzip file is decompressed whole once before any
 * of its lines count: a corrupt one (its CRC exposes data that decoded into plausible JSON), a truncated
 * one or a zero-byte one counts nothing and becomes one {@value #UNREADABLE_FILE} dead letter naming it.
 * So does a file that cannot be opened when its turn comes (removed, permissions changed), and an I/O
 * error in the middle of a file ends that file with one such dead letter (the lines before it counted).
 *
 * <p>Event time: a valid line more than {@code maxFutureMillis} ahead of its file's own progress
 * ({@link RecentEventTimes} over the lines read so far and the {@value #LOOKAHEAD} lines after it) is
 * dead-lettered {@value EventParser#FUTURE_TS}: in a backfill, the wall clock says nothing about where
 * the data is, and one line in year 9999 would otherwise be counted in a window that never closes. The
 * lookahead lets a file whose times jump (a gap in the data) keep its first lines after the jump. A line
 * without {@code ts} takes the time it is read and is never judged.
 */
public final class JsonLinesFormat implements BulkFormat<Event, FileSourceSplit> {
    private static final long serialVersionUID = 1L;

    public static final String UNREADABLE_FILE = "unreadable_file";
    public static final int MAX_LINE_BYTES = 1 << 20;
    private static final int BATCH = 1024;
    static final int LOOKAHEAD = BATCH;

    private final EventParser parser;
    private final long maxFutureMillis;

    /** @param maxFutureMillis how far ahead of its file's progress a line may be; {@code <= 0}: no check */
    public JsonLinesFormat(EventParser parser, long maxFutureMillis) {
        this.parser = parser;
        this.maxFutureMillis = maxFutureMillis;
    }

    @Override
    public Reader<Event> createReader(Configuration config, FileSourceSplit split) {
        return new LineReader(parser, maxFutureMillis, split.path(), 0);
    }

    @Override
    public Reader<Event> restoreReader(Configuration config, FileSourceSplit split) {
        long skip = split.getReaderPosition()
                .map(CheckpointedPosition::getRecordsAfterOffset)
                .orElse(0L);
        return new LineReader(parser, maxFutureMillis, split.path(), skip);
    }

    @Override
    public boolean isSplittable() {
        return false;
    }

    @Override
    public TypeInformation<Event> getProducedType() {
        return TypeInformation.of(Event.class);
    }

    /** Decompresses a whole gzip file, checking every member's CRC and length, so that a broken one counts nothing. */
    static void verifyGzip(FileSystem fs, Path path) throws IOException {
        try (InputStream in = new GZIPInputStream(fs.open(path), 1 << 16)) {
            in.transferTo(OutputStream.nullOutputStream());
        }
    }

    /** What went wrong, in words a reader of the dead letter acts on. */
    static String describe(IOException e) {
        if (e instanceof EOFException) return "truncated or empty: the data ends before the gzip stream does";
        if (e instanceof ZipException) return "corrupt gzip (" + e.getMessage() + ")";
        if (e instanceof FileNotFoundException || e instanceof NoSuchFileException)
            return "cannot be opened (" + e.getMessage() + ")";
        if (e instanceof AccessDeniedException) return "not readable (permission denied)";
        return e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
    }

    private static final class LineReader implements Reader<Event> {
        private final EventParser parser;
        private final long maxFutureMillis;
        private final String name;
        private final RecentEventTimes recent = new RecentEventTimes();
        /** Parsed lines not yet emitted, and whether each is judged for the future rule. */
        private final ArrayDeque<Event> pending = new ArrayDeque<>();

        private final ArrayDeque<Boolean> judged = new ArrayDeque<>();
        private InputStream in;
        private long linesEmitted;
        private long linesParsed;
        private byte[] buf = new byte[256];
        private boolean eof;
        /** Bytes of the last line read, however long (only the first MAX_LINE_BYTES + 1 are kept). */
        private long lastLineBytes;
        /** Why the file cannot be read, until its dead letter is emitted. */
        private String failure;

        private boolean done;

        LineReader(EventParser parser, long maxFutureMillis, Path path, long skip) {
            this.parser = parser;
            this.maxFutureMillis = maxFutureMillis;
            this.name = path.getPath();
            boolean gzip = path.getName().endsWith(".gz");
            try {
                FileSystem fs = path.getFileSystem();
                if (gzip) verifyGzip(fs, path);
                InputStream raw = new BufferedInputStream(fs.open(path), 1 << 16);
                this.in = gzip ? new BufferedInputStream(new GZIPInputStream(raw, 1 << 16), 1 << 16) : raw;
                for (long i = 0; i < skip; i++) {
                    int len = readLine();
                    if (len < 0)
                        throw new IOException(
                                "has fewer lines (" + i + ") than the checkpoint says were read (" + skip + ")");
                    parse(len, i + 1, System.currentTimeMillis()); // as first read: the file's progress is rebuilt
                }
            } catch (IOException e) {
                closeQuietly();
                if (skip == 1 && gzip && linesParsed == 0) {
                    // Its dead letter was the one record emitted before the checkpoint (a broken gzip's only
                    // record, at position 1): not again.
                    done = true;
                } else {
                    failure = name + ": " + describe(e)
                            + (skip > 0
                                    ? " after a restart at line " + skip + " (the lines before it counted)"
                                    : "; none of its lines count");
                }
            }
            this.linesEmitted = skip;
            pending.clear();
            judged.clear();
        }

        /** Parses line {@code lineNo} from {@link #buf}; valid event times feed the file's progress. */
        private Event parse(int len, long lineNo, long now) {
            linesParsed = lineNo;
            String source = name + "/" + lineNo;
            Event e;
            if (len > MAX_LINE_BYTES) {
                e = new Event();
                e.keepPayload(DeadLetterPayload.ofPrefix(
                        Arrays.copyOf(buf, DeadLetterPayload.MAX_PAYLOAD_BYTES + 4),
                        lastLineBytes,
                        DeadLetterPayload.MAX_PAYLOAD_BYTES));
                e.source = source;
                e.ts = now;
                e.deadLetter(
                        EventParser.INVALID_JSON,
                        "line of " + lastLineBytes + " bytes, longer than " + MAX_LINE_BYTES + " bytes");
            } else {
                e = parser.parse(Arrays.copyOf(buf, len), null, source, now, 0).cutPayload();
            }
            if (!e.isDeadLetter()) recent.add(e.ts);
            return e;
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

        /** Parses ahead until a batch and its lookahead are pending, or the file ends or fails. */
        private void fill() {
            while (!eof && failure == null && pending.size() < BATCH + LOOKAHEAD) {
                long now = System.currentTimeMillis();
                int len;
                try {
                    len = readLine();
                } catch (IOException e) {
                    failure = name + ": " + describe(e)
                            + (linesParsed == 0
                                    ? "; none of its lines count"
                                    : " after line " + linesParsed + " (the lines before it counted)");
                    closeQuietly();
                    return;
                }
                if (len < 0) return;
                Event e = parse(len, linesParsed + 1, now);
                pending.add(e);
                judged.add(!e.isDeadLetter() && e.ts != now);
            }
        }

        @Override
        public RecordIterator<Event> readBatch() {
            if (done) return null;
            fill();
            Event[] batch = new Event[BATCH];
            int count = 0;
            long first = linesEmitted;
            if (!pending.isEmpty()) {
                long progress = recent.progress();
                long limit = maxFutureMillis > 0 && progress < Long.MAX_VALUE - maxFutureMillis
                        ? progress + maxFutureMillis
                        : Long.MAX_VALUE;
                while (count < BATCH && !pending.isEmpty()) {
                    Event e = pending.poll();
                    if (judged.poll() && e.ts > limit) {
                        e.deadLetter(
                                EventParser.FUTURE_TS,
                                "ts " + e.ts + " is " + (e.ts - progress)
                                        + " ms ahead of the file's progress (its recent lines reach " + progress
                                        + "; at most " + maxFutureMillis + " ms allowed)");
                    }
                    batch[count++] = e;
                }
            } else if (failure != null) {
                Event e = new Event();
                e.source = name;
                e.ts = System.currentTimeMillis();
                e.deadLetter(UNREADABLE_FILE, failure);
                batch[count++] = e;
                failure = null;
                done = true;
            }
            if (count == 0) return null;
            linesEmitted += count;
            ArrayResultIterator<Event> it = new ArrayResultIterator<>();
            it.set(batch, count, 0, first);
            return it;
        }

        private void closeQuietly() {
            if (in == null) return;
            try {
                in.close();
            } catch (IOException ignored) {
                // the file is being given up anyway
            }
            in = null;
        }

        @Override
        public void close() {
            closeQuietly();
        }
    }
}
