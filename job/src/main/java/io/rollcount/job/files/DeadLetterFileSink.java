package io.rollcount.job.files;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.Json;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Dead letters as JSON lines in one local file ({@code --dlq PATH}, used when Kafka is not configured),
 * in the same format as the {@code counter-events-dlq} topic's values.
 *
 * <p>Exactly once with one writer (run it at parallelism 1): {@link SinkWriter#flush} writes and forces
 * every buffered line to disk before each checkpoint barrier, the checkpoint records the file's length,
 * and a writer restored from that checkpoint truncates the file back to it, so the lines the replay
 * writes again are not there twice. A new run (nothing restored) appends to an existing file.
 *
 * <p>One job at a time (a restore of one job would cut off the dead letters another job appended to a shared
 * file):
 * <ul>
 *   <li>The writer holds an OS lock ({@link FileChannel#tryLock}) on the side file {@code PATH.lock} while it
 *       runs; a second job on the same file, in this JVM or another process, is refused.
 *       {@link #refuseIfLocked} makes the same check before a job starts, so that the mistake costs one
 *       line and not a restart loop. The default name stays {@code rollcount-dlq.jsonl} (the contract's):
 *       a second job in the same folder must be given its own {@code --dlq}.</li>
 *   <li>The side file {@code PATH.start} says which job last took the file over and from which length on
 *       ("{@code <owner> <floor>}"; the owner is the Flink job id of the run that started the writer, and
 *       travels in the checkpoints). A restore truncates only to its own checkpointed length and never below
 *       that floor, and only while the file is still its own: when another job has written since, nothing
 *       is truncated (the replayed dead letters may then appear twice, which loses nothing) and the file's
 *       current length becomes the new floor. A restart before the first checkpoint (the input replays from
 *       its beginning) truncates back to the floor.</li>
 *   <li>The folder of {@code PATH} is created.</li>
 * </ul>
 */
public final class DeadLetterFileSink implements Sink<Event>, SupportsWriterState<Event, DeadLetterFileSink.Position> {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(DeadLetterFileSink.class);

    private final String path;

    public DeadLetterFileSink(String path) {
        if (path == null || path.isBlank()) throw new IllegalArgumentException("--dlq must name a file");
        this.path = path;
    }

    /** The checkpointed state of the writer: whose file it is, and its length at the checkpoint. */
    public record Position(String owner, long length) {}

    /**
     * Fails with one line when another job holds {@code --dlq}'s lock, and creates its folder: call before
     * the job starts ({@code ./rollcount run}, {@code flink run}).
     */
    public static void refuseIfLocked(String dlq) {
        Path file = Paths.get(dlq).toAbsolutePath();
        try {
            createFolder(file);
            Lock probe = Lock.acquire(lockFile(file), "probe " + System.nanoTime(), dlq);
            probe.release();
        } catch (IOException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    @Override
    public StatefulSinkWriter<Event, Position> createWriter(WriterInitContext context) throws IOException {
        Path file = Paths.get(path).toAbsolutePath();
        String job = context.getJobInfo().getJobId().toString();
        createFolder(file);
        Lock lock = Lock.acquire(lockFile(file), job, path);
        try {
            Position side = readStart(file);
            long truncateTo = -1;
            if (context.getTaskInfo().getAttemptNumber() > 0
                    && side != null
                    && side.owner().equals(job)) {
                truncateTo = side.length(); // a restart before any checkpoint: the input replays from its beginning
            } else {
                writeStart(file, new Position(job, Files.exists(file) ? Files.size(file) : 0));
            }
            return new Writer(file, job, truncateTo, lock);
        } catch (IOException | RuntimeException e) {
            lock.release();
            throw e;
        }
    }

    @Override
    public StatefulSinkWriter<Event, Position> restoreWriter(WriterInitContext context, Collection<Position> states)
            throws IOException {
        Path file = Paths.get(path).toAbsolutePath();
        String owner = null;
        long length = -1;
        for (Position p : states) {
            if (p.length() > length) {
                length = p.length();
                owner = p.owner();
            }
        }
        if (owner == null) owner = context.getJobInfo().getJobId().toString();
        createFolder(file);
        Lock lock = Lock.acquire(lockFile(file), owner, path);
        try {
            Position side = readStart(file);
            long truncateTo = -1;
            if (side != null && side.owner().equals(owner) && length >= 0) {
                truncateTo = Math.max(length, side.length());
            } else {
                long size = Files.exists(file) ? Files.size(file) : 0;
                LOG.warn(
                        "Dead-letter file {} was written by another job ({}) since this job's checkpoint: it is not truncated, "
                                + "so dead letters written after the checkpoint may appear twice",
                        path,
                        side == null ? "no owner recorded" : side.owner());
                writeStart(file, new Position(owner, size));
            }
            return new Writer(file, owner, truncateTo, lock);
        } catch (IOException | RuntimeException e) {
            lock.release();
            throw e;
        }
    }

    @Override
    public SimpleVersionedSerializer<Position> getWriterStateSerializer() {
        return new SimpleVersionedSerializer<>() {
            @Override
            public int getVersion() {
                return 2;
            }

            @Override
            public byte[] serialize(Position p) throws IOException {
                ByteArrayOutputStream bytes = new ByteArrayOutputStream();
                try (DataOutputStream out = new DataOutputStream(bytes)) {
                    out.writeUTF(p.owner());
                    out.writeLong(p.length());
                }
                return bytes.toByteArray();
            }

            @Override
            public Position deserialize(int version, byte[] bytes) throws IOException {
                // Version 1 held the length only: no owner, so a restore from it never truncates.
                if (version == 1) return new Position("", ByteBuffer.wrap(bytes).getLong());
                try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(bytes))) {
                    return new Position(in.readUTF(), in.readLong());
                }
            }
        };
    }

    static Path lockFile(Path file) {
        return Paths.get(file + ".lock");
    }

    private static Path startFile(Path file) {
        return Paths.get(file + ".start");
    }

    private static void createFolder(Path file) throws IOException {
        Path parent = file.toAbsolutePath().getParent();
        if (parent != null) Files.createDirectories(parent);
    }

    private static Position readStart(Path file) throws IOException {
        Path start = startFile(file);
        if (!Files.exists(start)) return null;
        String[] saved = Files.readString(start).trim().split(" ");
        if (saved.length != 2) return null;
        try {
            return new Position(saved[0], Long.parseLong(saved[1]));
        } catch (NumberFormatException e) {
            return null;
        }
    }

    private static void writeStart(Path file, Position p) throws IOException {
        Path start = startFile(file);
        Path tmp = Paths.get(start + ".tmp");
        Files.writeString(tmp, p.owner() + " " + p.length() + "\n");
        Files.move(
                tmp,
                start,
                java.nio.file.StandardCopyOption.REPLACE_EXISTING,
                java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }

    /**
     * The OS lock on {@code PATH.lock}, held by one owner in this JVM: an OS lock belongs to the process, so
     * a second job in the same JVM is told apart here (a restarted writer of the same job whose predecessor
     * is not closed yet shares the lock).
     */
    static final class Lock {
        private static final Map<Path, Lock> HELD = new HashMap<>();

        private final Path file;
        private final String owner;
        private final FileChannel channel;
        private final FileLock lock;
        private int users;

        private Lock(Path file, String owner, FileChannel channel, FileLock lock) {
            this.file = file;
            this.owner = owner;
            this.channel = channel;
            this.lock = lock;
        }

        static synchronized Lock acquire(Path lockFile, String owner, String dlq) throws IOException {
            Path key = lockFile.toAbsolutePath().normalize();
            Lock held = HELD.get(key);
            if (held != null) {
                if (!held.owner.equals(owner)) throw inUse(dlq, lockFile);
                held.users++;
                return held;
            }
            FileChannel channel;
            try {
                channel = FileChannel.open(key, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            } catch (IOException e) {
                throw new IOException("--dlq " + dlq + ": cannot create its lock file " + lockFile + " (" + e + ")", e);
            }
            FileLock lock;
            try {
                lock = channel.tryLock();
            } catch (OverlappingFileLockException e) {
                lock = null;
            }
            if (lock == null) {
                channel.close();
                throw inUse(dlq, lockFile);
            }
            Lock l = new Lock(key, owner, channel, lock);
            l.users = 1;
            HELD.put(key, l);
            return l;
        }

        void release() {
            synchronized (Lock.class) {
                if (--users > 0) return;
                HELD.remove(file, this);
                try {
                    lock.release();
                    channel.close();
                } catch (IOException e) {
                    LOG.warn("Cannot release the lock {}: {}", file, e.toString());
                }
            }
        }

        private static IOException inUse(String dlq, Path lockFile) {
            return new IOException("--dlq " + dlq + " is in use by another running job (it holds " + lockFile
                    + "): give this job a dead-letter file of its own with --dlq PATH, or stop the other job");
        }
    }

    private static final class Writer implements StatefulSinkWriter<Event, Position> {
        private final String owner;
        private final Lock lock;
        private final FileChannel channel;
        private final ByteBuffer buffer = ByteBuffer.allocate(1 << 16);
        private boolean closed;

        Writer(Path file, String owner, long truncateTo, Lock lock) throws IOException {
            this.owner = owner;
            this.lock = lock;
            channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
            if (truncateTo >= 0 && channel.size() > truncateTo) channel.truncate(truncateTo);
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
        public List<Position> snapshotState(long checkpointId) throws IOException {
            return List.of(new Position(owner, channel.position()));
        }

        @Override
        public void close() throws IOException {
            if (closed) return;
            closed = true;
            try {
                drain();
                channel.close();
            } finally {
                lock.release();
            }
        }
    }
}
