package io.rollcount.job.redis;

import io.rollcount.job.redis.internal.BatchPipeline;
import io.rollcount.job.redis.internal.CallSender;
import io.rollcount.job.redis.internal.EpochWatch;
import io.rollcount.job.redis.internal.MarkGuard;
import io.rollcount.job.redis.internal.RedisApplyScript;
import io.rollcount.job.redis.internal.RedisWriteBuffer;
import io.rollcount.job.redis.internal.Rejections;
import io.rollcount.job.redis.internal.ReplicaWait;
import io.rollcount.job.redis.internal.RetryingConnection;
import io.rollcount.job.redis.internal.SinkMetrics;
import io.rollcount.job.redis.internal.WatermarkPublisher;
import io.rollcount.job.redis.internal.WriteGuard;
import io.rollcount.job.redis.lease.LeaseHolder;
import io.rollcount.job.redis.lease.PrefixLease;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The writer of {@link RedisSink}: buffers and coalesces writes ({@link RedisWriteBuffer}) and hands them to an
 * I/O thread of its own, when the buffer is full and on a processing-time timer. What a batch does in Redis is
 * the {@link BatchPipeline}'s (plain commands, the script, the epoch check, {@code WAIT} in a cluster), with a
 * {@link WriteGuard} ({@link MarkGuard}, or {@link WriteGuard#NEVER} for {@link RedisSink.Builder#setPlainWritesOnly}),
 * a {@link LeaseHolder} ({@link PrefixLease} for {@link RedisSink#holdingLease}, else none) and a
 * {@link WatermarkPublisher} (none for {@link RedisSink#withoutWatermark}), on a {@link RetryingConnection}.
 *
 * <p>Threads: writes, timers and the buffer belong to the task's mailbox thread. A batch goes to Redis from the
 * writer's I/O thread ({@code redis-writer-io-N}), which alone uses the connection and the state marked
 * {@link io.rollcount.job.util.IoThreadOnly}, so that the task goes on counting while Redis applies the batch;
 * one batch at most is in flight: the next waits for it (and fails if it failed), which keeps every key's writes
 * in order. {@link #flush(boolean)} (before every checkpoint barrier, and at the end of input) returns only once
 * every write received is in Redis. While Redis is unreachable the I/O thread retries; the next flush waits for
 * it, which blocks the task: backpressure builds up and checkpoints wait, as they must, since a checkpoint may
 * only complete once its writes are in Redis.
 *
 * <p>A key Redis rejects for good does not fail the batch ({@link Rejections}): the writer's checkpointed state
 * ({@link RedisWriterState}) keeps it with the watermark it holds, and the lease token. A loss of Redis's data
 * ({@link io.rollcount.job.redis.internal.EpochWatch}) makes the writer's view true again: the guard forgets
 * what it confirmed and raises the mark again, the lease is taken and the watermark written again; the values
 * come back from the operators that hold them ({@link RedisLossWatch}). Its metrics: {@link SinkMetrics}.
 */
public final class RedisSinkWriter implements StatefulSinkWriter<RedisWrite, RedisWriterState> {
    private static final Logger LOG = LoggerFactory.getLogger(RedisSinkWriter.class);

    private final RedisSink sink;
    private final ProcessingTimeService timers;
    private final RedisWriteBuffer buffer = new RedisWriteBuffer();
    private final int parallelism;
    private final int maxParallelism;

    final SinkMetrics metrics;
    private final Rejections rejections;
    private final RetryingConnection connection;
    private final BatchPipeline pipeline;
    private final WriteGuard guard;
    private final LeaseHolder lease;
    private final WatermarkPublisher watermarks;
    /** The I/O thread: it alone runs batches, lease renewals and the connection. */
    private final ExecutorService io;

    /** The latest watermark received (mailbox thread). */
    private long pendingWatermark = Long.MIN_VALUE;
    /** The last watermark handed to the I/O thread (mailbox thread). */
    private long handedWatermark = Long.MIN_VALUE;
    /** The batch in flight, or null (mailbox thread; the in-flight gauge reads it from the metrics thread). */
    private volatile Future<?> inFlight;
    /** Set by the mailbox thread at close. */
    private boolean closed;

    RedisSinkWriter(RedisSink sink, WriterInitContext context) {
        this(sink, context, null, false, List.of());
    }

    /**
     * @param leaseToken the lease token, or null for a writer without a lease
     * @param restored whether the job restores a checkpoint or savepoint: then a lease held by another token is
     *     waited for, up to its expiry
     * @param restoredState the states this writer restores: their rejected keys and watermark holds are kept
     */
    RedisSinkWriter(
            RedisSink sink,
            WriterInitContext context,
            String leaseToken,
            boolean restored,
            Collection<RedisWriterState> restoredState) {
        this.sink = sink;
        this.timers = context.getProcessingTimeService();
        int subtask = context.getTaskInfo().getIndexOfThisSubtask();
        this.parallelism = context.getTaskInfo().getNumberOfParallelSubtasks();
        this.maxParallelism = Math.max(parallelism, context.getTaskInfo().getMaxNumberOfParallelSubtasks());
        RedisKeys keys = new RedisKeys(sink.keyPrefix);
        this.metrics = new SinkMetrics(context.metricGroup(), () -> inFlight);
        this.rejections = new Rejections(sink.endpoint, keys.watermark(), metrics);
        for (RedisWriterState r : restoredState) rejections.restore(r.heldWatermark, r.keys);
        this.guard = sink.plainWritesOnly ? WriteGuard.NEVER : new MarkGuard(keys.mark(), sink.endpoint, metrics);
        EpochWatch epochs = new EpochWatch(keys.epoch(), metrics);
        ReplicaWait replicas = new ReplicaWait(metrics);
        this.connection = new RetryingConnection(
                sink.endpoint,
                sink.retryTimeoutMillis,
                sink.initialBackoffMillis,
                sink.maxBackoffMillis,
                metrics,
                List.of(c -> metrics.commands(RedisApplyScript.SCRIPT.loadOn(c)), guard, epochs, replicas));
        this.pipeline = new BatchPipeline(
                connection,
                sink.keyPrefix,
                sink.countersPerCall,
                sink.maxWritesPerCall,
                guard,
                epochs,
                replicas,
                rejections,
                metrics,
                this::dataLost);
        this.io = Executors.newSingleThreadExecutor(ioThread("redis-writer-io-" + subtask));
        this.lease = lease(leaseToken, restored);
        this.watermarks = watermarks(keys, context.getJobInfo().getJobId().toString(), subtask);
        lease.renewIfDue(timers.getCurrentProcessingTime());
        // connect (and let the guard read Redis) now, before the first batch
        if (guard.connectsEarly()) io.submit(connection::connectEarly);
        scheduleTimer();
    }

    /** The prefix lease this writer holds with {@code leaseToken} (none for null), on its connection and I/O thread. */
    private LeaseHolder lease(String leaseToken, boolean restored) {
        return leaseToken == null
                ? LeaseHolder.NONE
                : new PrefixLease(
                        new PrefixGuard(sink.keyPrefix),
                        leaseToken,
                        restored,
                        sink.refusesEarlierJob,
                        connection,
                        io,
                        metrics);
    }

    /** The publisher of this writer's watermark to Redis, or none if the sink publishes none. */
    private WatermarkPublisher watermarks(RedisKeys keys, String jobId, int subtask) {
        return sink.publishesWatermark
                ? new WatermarkPublisher.Publishing(
                        keys.watermarkPerWriter(jobId, parallelism),
                        keys.watermark(),
                        keys.allowedLateness(),
                        sink.allowedLatenessMillis,
                        subtask,
                        parallelism,
                        rejections,
                        connection,
                        pipeline)
                : WatermarkPublisher.NONE;
    }

    private static java.util.concurrent.ThreadFactory ioThread(String name) {
        return r -> {
            Thread t = new Thread(r, name);
            t.setDaemon(true);
            return t;
        };
    }

    /**
     * I/O thread: Redis lost the job's data. The guard forgets the keys it confirmed and raises its mark again,
     * the lease is taken again, and the watermark (with the allowed lateness) written again.
     */
    private void dataLost(CallSender send) throws RedisSinkException {
        guard.dataLost(send);
        lease.retake(connection.get());
        watermarks.dataLost(send);
    }

    @Override
    public void write(RedisWrite element, Context context) throws IOException, InterruptedException {
        lease.checkHeld();
        buffer.add(element);
        if (buffer.keys() >= sink.maxBufferedKeys || buffer.bytes() >= sink.maxBufferedBytes) {
            flushBuffer();
        }
    }

    /**
     * Every write before this watermark has been received; it goes to {@code rc:meta:watermark} (as the
     * minimum over all writers) right after those writes are in Redis, at the next flush. The end of a
     * bounded input ({@code Long.MAX_VALUE}) is written as such: every window is final.
     */
    @Override
    public void writeWatermark(Watermark watermark) {
        if (watermarks.publishes() && watermark.getTimestamp() > pendingWatermark)
            pendingWatermark = watermark.getTimestamp();
    }

    /** Returns only once every write received so far is in Redis (or throws). */
    @Override
    public void flush(boolean endOfInput) throws IOException, InterruptedException {
        flushBuffer();
        awaitInFlight();
        lease.checkHeld();
    }

    /**
     * The lease token, and the keys rejected so far with the watermark they hold: after {@link #flush}, so
     * that every rejection of a write before the checkpoint is in it. Flink splits writer states among the
     * new subtasks after a rescale: each writer keeps enough copies of the token that every subtask up to the
     * maximum parallelism restores one, and all writers of the restored job hold the same token; the
     * rejections go in the first copy only.
     */
    @Override
    public List<RedisWriterState> snapshotState(long checkpointId) throws IOException {
        try {
            awaitInFlight();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting for Redis");
        }
        String token = lease.token();
        if (token == null && rejections.isEmpty()) return List.of();
        List<RedisWriterState> states = new ArrayList<>();
        states.add(new RedisWriterState(token, rejections.heldWatermark(), rejections.keys()));
        if (token != null) {
            int copies = Math.max(1, (maxParallelism + parallelism - 1) / parallelism);
            for (int i = 1; i < copies; i++) states.add(new RedisWriterState(token, Long.MAX_VALUE, List.of()));
        }
        return states;
    }

    @Override
    public void close() throws InterruptedException {
        closed = true;
        lease.release();
        io.shutdownNow();
        if (!io.awaitTermination(10, TimeUnit.SECONDS)) {
            LOG.warn("the Redis writer's I/O thread did not stop within 10 s");
        }
        connection.close(); // the I/O thread has stopped: the connection is this thread's now
    }

    /** Writes buffered and not yet sent (distinct keys). */
    int bufferedKeys() {
        return buffer.keys();
    }

    /** The watermark this writer holds its published one below, {@code Long.MAX_VALUE} for none. */
    long heldWatermark() {
        return rejections.heldWatermark();
    }

    private void scheduleTimer() {
        long now = timers.getCurrentProcessingTime();
        timers.registerTimer(now + sink.flushIntervalMillis, this::onTimer);
    }

    private void onTimer(long time) throws IOException, InterruptedException {
        if (closed) return;
        lease.renewIfDue(timers.getCurrentProcessingTime());
        flushBuffer();
        scheduleTimer();
    }

    /**
     * Hands the buffered writes, then the watermark that arrived before them (if it moved and is a real
     * time), to the I/O thread as one batch, once the batch before it is in Redis. The watermark goes in a
     * round trip of its own after the writes, and only once every one of them has been applied or rejected.
     */
    private void flushBuffer() throws IOException, InterruptedException {
        List<RedisWrite> writes = List.of();
        if (!buffer.isEmpty()) {
            metrics.writesCoalesced.inc(buffer.takeCoalesced());
            writes = buffer.drain();
        }
        long wm = pendingWatermark;
        boolean publish = wm > handedWatermark && wm >= 0;
        if (writes.isEmpty() && !publish) return;
        if (publish) handedWatermark = wm;
        awaitInFlight();
        List<RedisWrite> batch = writes;
        long batchWatermark = publish ? wm : Long.MIN_VALUE;
        metrics.inFlightWrites = batch.size();
        inFlight = io.submit(() -> {
            sendBatch(batch, batchWatermark);
            return null;
        });
    }

    /** I/O thread: one batch, its writes retried until they are in Redis, then its watermark. */
    private void sendBatch(List<RedisWrite> batch, long watermark) throws IOException, InterruptedException {
        long start = System.nanoTime();
        lease.checkHeld(); // never write under a prefix another job holds
        try {
            if (!batch.isEmpty()) connection.retrying(() -> pipeline.write(batch));
            watermarks.publish(watermark);
        } catch (IOException | RuntimeException e) {
            metrics.batchFailed(batch.size());
            throw e;
        }
        metrics.batchDone(batch.size(), (System.nanoTime() - start) / 1_000_000);
    }

    /** Waits for the batch in flight; rethrows its failure. */
    private void awaitInFlight() throws IOException, InterruptedException {
        Future<?> f = inFlight;
        if (f == null) return;
        try {
            f.get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException ioe) throw ioe;
            if (cause instanceof RuntimeException r) throw r;
            if (cause instanceof InterruptedException i) throw i;
            throw new RedisSinkException("Redis write failed: " + cause, cause);
        } finally {
            inFlight = null;
        }
    }
}
