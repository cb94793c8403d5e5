package io.rollcount.job.files;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.List;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * Dead letters as JSON lines in one local file ({@code --dlq PATH}, used when Kafka is not configured),
 * in the same format as the {@code counter-events-dlq} topic's values.
 *
 * <p>Exactly once with one writer (run it at parallelism 1): {@link SinkWriter#flush} writes and forces
 * every buffered line to disk before each checkpoint barrier, the checkpoint records the file's length,
 * and a writer restored from that checkpoint truncates the file back to it, so the lines the replay
 * writes again are not there twice. A new run (nothing restored) appends to an existing file; it notes
 * the length it started from in a side file ({@code PATH.start}, with the job id), so that a restart
 * before the first completed checkpoint, which replays the input from its beginning, truncates back to it.
 */
public final class DeadLetterFileSink implements Sink<Event>, SupportsWriterState<Event, Long> {
    private static final long serialVersionUID = 1L;

    private final String path;

    public DeadLetterFileSink(String path) {
        if (path == null || path.isBlank()) throw new IllegalArgumentException("--dlq must name a file");
        this.path = path;
    }

    @Override
    public StatefulSinkWriter<Event, Long> createWriter(WriterInitContext context) throws IOException {
        Path file = Paths.get(path);
        Path start = Paths.get(path + ".start");
        String job = context.getJobInfo().getJobId().toString();
        long startLength = -1;
        if (context.getTaskInfo().getAttemptNumber() > 0 && Files.exists(start)) {
            String[] saved = Files.readString(start).trim().split(" ");
            if (saved.length == 2 && saved[0].equals(job)) startLength = Long.parseLong(saved[1]);
        }
        if (startLength < 0) {
            long length = Files.exists(file) ? Files.size(file) : 0;
            Files.writeString(start, job + " " + length + "\n");
        }
        return new Writer(file, startLength);
    }

    @Override
    public StatefulSinkWriter<Event, Long> restoreWriter(WriterInitContext context, Collection<Long> states) throws IOException {
        long length = states.stream().mapToLong(Long::longValue).max().orElse(-1);
        return new Writer(Paths.get(path), length);
    }

    @Override
    public SimpleVersionedSerializer<Long> getWriterStateSerializer() {
        return new SimpleVersionedSerializer<>() {
            @Override
            public int getVersion() {
                return 1;
            }

            @Override
            public byte[] serialize(Long length) {
                return ByteBuffer.allocate(8).putLong(length).array();
            }

            @Override
            public Long deserialize(int version, byte[] bytes) {
                return ByteBuffer.wrap(bytes).getLong();
            }
        };
    }

    private static final class Writer implements StatefulSinkWriter<Event, Long> {
        private final FileChannel channel;
        private final ByteBuffer buffer = ByteBuffer.allocate(1 << 16);

        Writer(Path file, long restoredLength) throws IOException {
            Path parent = file.toAbsolutePath().getParent();
            if (parent != null) Files.createDirectories(parent);
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            if (restoredLength >= 0 && channel.size() > restoredLength) channel.truncate(restoredLength);
            channel.position(channel.size());
        }

        @Override
        public void write(Event e, Context context) throws IOException {
            byte[] line = Json.deadLetter(e);
            if (line.length + 1 > buffer.remaining()) drain();
            if (line.length + 1 > buffer.capacity()) {
                channel.write(ByteBuffer.wrap(line));
                channel.write(ByteBuffer.wrap(new byte[] {'\n'}));
                return;
            }
            buffer.put(line).put((byte) '\n');
        }

        private void drain() throws IOException {
            buffer.flip();
            while (buffer.hasRemaining()) channel.write(buffer);
            buffer.clear();
        }

        @Override
        public void flush(boolean endOfInput) throws IOException {
            drain();
            channel.force(false);
        }

        @Override
        public List<Long> snapshotState(long checkpointId) throws IOException {
            return List.of(channel.position());
        }

        @Override
        public void close() throws IOException {
            drain();
            channel.close();
        }
    }
}
