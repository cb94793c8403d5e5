package io.rollcount.job.support;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.TimeUnit;

/**
 * An OS lock on a file held by another JVM, a child process of the test: what a second job sees when another
 * process holds a file (a lock inside one JVM would not be the same thing). {@link #hold} returns once the child
 * holds the lock; {@link #close} releases it and ends the child.
 */
public final class OtherProcessFileLock implements AutoCloseable {
    private static final String LOCKED = "locked";

    private final Process process;

    private OtherProcessFileLock(Process process) {
        this.process = process;
    }

    /** Starts a JVM with this class path that creates {@code file} if needed and holds an exclusive lock on it. */
    public static OtherProcessFileLock hold(Path file) throws IOException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Process p = new ProcessBuilder(
                        java,
                        "-cp",
                        System.getProperty("java.class.path"),
                        OtherProcessFileLock.class.getName(),
                        file.toAbsolutePath().toString())
                .redirectErrorStream(true)
                .start();
        OtherProcessFileLock lock = new OtherProcessFileLock(p);
        String first = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8)).readLine();
        if (!LOCKED.equals(first)) {
            lock.close();
            throw new IOException("the process meant to lock " + file + " said " + first);
        }
        return lock;
    }

    @Override
    public void close() throws IOException {
        process.getOutputStream().close();
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS))
                process.destroyForcibly().waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
    }

    /** Locks args[0], prints {@value #LOCKED} and holds the lock until its stdin closes. */
    public static void main(String[] args) throws IOException {
        try (FileChannel channel =
                        FileChannel.open(Path.of(args[0]), StandardOpenOption.CREATE, StandardOpenOption.WRITE);
                FileLock lock = channel.tryLock()) {
            if (lock == null) {
                System.out.println("already locked by another process");
                System.exit(1);
            }
            System.out.println(LOCKED);
            System.out.flush();
            while (System.in.read() != -1) {
                // hold until the parent closes our stdin or kills us
            }
        }
    }
}
