package io.rollcount.job.redis;

import io.rollcount.job.metrics.RollcountMetrics;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;
import org.apache.flink.runtime.execution.SuppressRestartsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisRedirectionException;
import redis.clients.jedis.params.SetParams;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * The writer of {@link RedisSink}: buffers and coalesces writes, and sends them pipelined when the buffer
 * is full and on a processing-time timer: plain commands ({@code SET ... PXAT ... GET}, {@code PFADD},
 * {@code PEXPIREAT}) for every count no replay can reach and for the users, {@code EVALSHA} of
 * {@link RedisApplyScript} for sorted sets, MAX writes, the watermark and the guarded counts (several
 * counters per call on a single server, one in Redis Cluster).
 *
 * <p>The guard: before the writes of a window above the mark it knows, the writer raises {@code P:_mark} in a
 * round trip of its own (and creates it before its first count of any kind). At its first connection it reads
 * the mark: if it exists, a run before this writer may have written larger values, so every total and every
 * window key whose window starts at or below the mark read goes through the script (never backwards) until
 * one such write is applied; the key is then remembered ({@link ConfirmedKeys}) and written plain. If it does
 * not exist, nothing was written under the prefix before, and nothing is guarded.
 *
 * <p>Writes, timers and the buffer belong to the task's mailbox thread. A batch goes to Redis from one
 * I/O thread of the writer's own (which alone uses the connection), so that the task goes on counting
 * while Redis applies the batch; one batch at most is in flight: the next waits for it (and fails if it
 * failed), which keeps every key's writes in order. {@link #flush(boolean)} (before every checkpoint
 * barrier, and at the end of input) returns only once every write received is in Redis. While Redis is
 * unreachable the I/O thread retries; the next flush waits for it, which blocks the task: backpressure
 * builds up and checkpoints wait, as they must, since a checkpoint may only complete once its writes are
 * in Redis.
 *
 * <p>A key Redis rejects for good (WRONGTYPE for a key of another type under the prefix, in a plain reply or
 * among the script's per-key errors) does not fail the batch: every other key is written, and the writer
 * reports the rejected ones once each (a WARN line, {@code redisRejected},
 * {@code redisFirstRejected}) and keeps in its checkpointed state ({@link RedisWriterState}) with the
 * start of the earliest rejected window, below which it holds the watermark it publishes. The watermark goes
 * to Redis after the writes of its batch, in a round trip of its own.
 *
 * <p>Against a Redis Cluster ({@link RedisEndpoint#cluster()}) the connection is a cluster client whose
 * pipelines send each call to the master of its slot. A redirection (MOVED, ASK: a failover or a slot
 * migration), CLUSTERDOWN, TRYAGAIN or a lost node is retried like a lost connection, on a new client that
 * reads the topology anew; the script is loaded on every node; and each pipeline ends with {@code WAIT 1} to
 * every master it wrote to, so that a batch completes only once a replica has it ({@link #waitForReplicas}).
 *
 * <p>A loss of Redis's data (a restart without persistence, a failover to a lagging replica, {@code FLUSHALL}):
 * the first pipeline of each batch begins with {@code GET P:_epoch} ({@link RedisEpoch}; in a cluster also a
 * {@code GET} of each master's {@code P:_epoch:{n}}), compared with the token read at the first connection; a token gone or changed is logged once in one line, counted
 * ({@code redisDataLost}), and makes the writer's view true again ({@link #dataLost}). The values themselves
 * come back from the operators that hold them ({@link RedisLossWatch}). A {@link RedisWrite#SKETCH} (what those
 * write for unique users) is staged in a key of its counter's and merged with {@code PFMERGE}.
 *
 * <p>Metrics on the writer's metric group: {@code redisCommandsSent}, {@code redisKeysWritten},
 * {@code redisWritesStale} (skipped by the guard: Redis was ahead), {@code redisWritesGuarded} (counts sent
 * through the script), {@code redisWritesPlain} (counts and users sent as plain commands),
 * {@code redisWritesCoalesced} (absorbed in the
 * buffer by a newer write of the same key), {@code redisRetries}, {@code redisFlushes}, {@code redisRejected} (distinct keys rejected for good), gauge
 * {@code redisLastFlushMillis}; and Flink's standard {@code numRecordsSend} (writes sent after coalescing),
 * {@code numRecordsSendErrors} and {@code currentSendTime}.
 *
 * <p>With a lease token (the job's sink, see {@link RedisSink#holdingLease}) the writer takes the prefix's
 * lease on its I/O thread before its first batch and renews it every {@link PrefixGuard#LEASE_RENEWAL};
 * its state holds the token. A lease held by another token fails the job with restarts suppressed: restarting
 * would only meet the same job again; a restored writer first waits up to the lease's expiry (the run it
 * continues may have died without giving it up, and after a rescale a writer restores no token while its
 * siblings do). It gives the lease up when it closes.
 */
public final class RedisSinkWriter implements StatefulSinkWriter<RedisWrite, RedisWriterState> {
    private static final Logger LOG = LoggerFactory.getLogger(RedisSinkWriter.class);
    /** Writes per pipeline round trip. */
    private static final int PIPELINE_SLICE = 2_000;
    /** Keys a writer remembers as confirmed (no longer guarded) at most: 4M keys, 64 MB of table at most. */
    static final int MAX_CONFIRMED_KEYS = 4_000_000;
    /** Cluster only: how long a batch waits for a master's replica to acknowledge its writes ({@code WAIT}). */
    static final long REPLICA_WAIT_MILLIS = 2_000;
    /** Cluster only: the master ({@code host:port}) of each slot written to, as the client's topology said (I/O thread). */
    private final Map<Integer, String> nodeOfSlot = new HashMap<>();
    /** Cluster only: masters found without a replica, not waited for until the next connection (I/O thread). */
    private final Set<String> noReplica = new HashSet<>();

    private final RedisSink sink;
    private final RedisEndpoint endpoint;
    private final RedisWriteBuffer buffer;
    private final ProcessingTimeService timers;

    final Counter commandsSent = new SimpleCounter();
    final Counter keysWritten = new SimpleCounter();
    final Counter writesStale = new SimpleCounter();
    final Counter writesCoalesced = new SimpleCounter();
    final Counter retries = new SimpleCounter();
    final Counter flushes = new SimpleCounter();
    /** Distinct keys Redis rejected for good (each is logged once). */
    final Counter keysRejected = new SimpleCounter();
    /** COUNT writes sent through the script, guarded because a replay may have reached their keys. */
    final Counter writesGuarded = new SimpleCounter();
    /** COUNT and USERS writes sent as plain commands. */
    final Counter writesPlain = new SimpleCounter();

    private final Counter recordsSend;
    private final Counter sendErrors;
    private volatile long lastFlushMillis;
    private final Histogram writeLatency;
    /** Writes of the batch in flight (the rollcount group's redisWritesInFlight while it runs). */
    private volatile int inFlightWrites;

    /** Used by the I/O thread only. */
    private UnifiedJedis jedis;

    private final String markKey;
    /**
     * The guard (I/O thread): read from {@code P:_mark} at the first connection. If it existed, a run
     * before this writer may have written under the prefix: every total and every window key whose window
     * starts at or below {@link #guardBelow} is written through the script until one guarded write of it is
     * applied ({@link #confirmed}). Without it, nothing was written under the prefix before: no guard.
     */
    private boolean markRead;

    private boolean guardTotals;
    private long guardBelow = Long.MIN_VALUE;
    /** The mark this writer knows to be in Redis (read or published), {@code Long.MIN_VALUE} for none. */
    private long publishedMark = Long.MIN_VALUE;

    private ConfirmedKeys confirmed = new ConfirmedKeys(MAX_CONFIRMED_KEYS);
    /** {@code P:_epoch} (see {@link RedisEpoch}). */
    private final String epochKey;
    /**
     * The token of each epoch key this writer knows ({@code P:_epoch}, and in a cluster one per master, see
     * {@link RedisEpoch#keys}), read (or created) at its first connection, and for a key new to it at a later
     * connection (the slot map changed); null before the first (I/O thread). Kept across connections, so that a
     * key gone while the writer reconnected is still seen gone.
     */
    private Map<String, String> knownEpochs;
    /** The epoch keys of the slot map at the last connection, checked with each batch (I/O thread). */
    private List<String> epochKeys = List.of();
    /** The epoch keys a batch's pipelined {@code GET}s found gone or changed (I/O thread). */
    private final List<String> epochsLost = new ArrayList<>();

    private boolean epochChanged;
    /** Losses of Redis's data this writer saw (each logged once). */
    final Counter dataLost = new SimpleCounter();
    /** Keys that left the guard (one guarded write applied: Redis was not ahead). */
    final Counter keysConfirmed = new SimpleCounter();
    /** The first key Redis rejected for good, with its error, or null: a run's summary names it. */
    volatile String firstRejected;

    private boolean closed;
    private final java.util.concurrent.ExecutorService io;
    /** The batch in flight, or null. */
    private java.util.concurrent.Future<?> inFlight;

    private final String watermarkPerWriterKey;
    /** {@code P:meta:allowed_lateness_ms}, written with the first watermark and again after a loss. */
    private final String latenessKey;
    /** Whether {@link #latenessKey} was written since this writer started or Redis last lost its data (I/O thread). */
    private boolean latenessWritten;

    private final String watermarkKey;
    private final int subtask;
    private final int parallelism;
    private final int maxParallelism;
    private long pendingWatermark = Long.MIN_VALUE;
    /** The last watermark handed to the I/O thread (mailbox thread). */
    private long handedWatermark = Long.MIN_VALUE;
    /** The last watermark written to Redis (I/O thread). */
    private long writtenWatermark = Long.MIN_VALUE;
    /**
     * The start (epoch ms) of the earliest window a key of which Redis rejected, or {@code Long.MAX_VALUE}:
     * the watermark this writer publishes stays at or below it, so that {@code rc:meta:watermark} never says
     * final a window whose value is not in Redis. Set by the I/O thread, read by the mailbox thread.
     */
    private volatile long heldWatermark = Long.MAX_VALUE;
    /** Keys already reported as rejected (I/O thread), so that each is logged and counted once. */
    private final java.util.Set<String> rejectedKeys = java.util.concurrent.ConcurrentHashMap.newKeySet();
    /**
     * Distinct rejected keys remembered (and checkpointed) at most: beyond, a further key is still counted
     * (again at each of its rejections, since it is not remembered) but no longer logged.
     */
    static final int MAX_REPORTED_KEYS = 10_000;

    /** The lease token, or null for a writer without a lease. */
    private final String leaseToken;

    private final PrefixGuard guard;
    private long leaseRenewedAt = Long.MIN_VALUE;
    /** Whether this writer has held the lease (I/O thread). */
    private boolean leaseHeld;
    /** Until when a restored writer waits for a lease held by another token (0: it does not wait). */
    private final long leaseWaitUntil;
    /** Whether this writer, restoring nothing, refuses an earlier job's prefix before its first lease. */
    private final boolean checksEarlierJob;
    /** Set by the I/O thread when another job holds the lease; thrown by the task thread. */
    private volatile RuntimeException leaseLost;

    RedisSinkWriter(RedisSink sink, WriterInitContext context) {
        this(sink, context, null, false, List.of());
    }

    /**
     * @param restored whether the job restores a checkpoint or savepoint: then a lease held by another token is waited for, up to its expiry
     * @param restoredState the states this writer restores: their rejected keys and watermark holds are kept
     */
    RedisSinkWriter(
            RedisSink sink,
            WriterInitContext context,
            String leaseToken,
            boolean restored,
            java.util.Collection<RedisWriterState> restoredState) {
        for (RedisWriterState r : restoredState) {
            heldWatermark = Math.min(heldWatermark, r.heldWatermark);
            rejectedKeys.addAll(r.keys);
        }
        this.sink = sink;
        this.leaseToken = leaseToken;
        this.leaseWaitUntil = restored ? System.currentTimeMillis() + PrefixGuard.LEASE_TTL.toMillis() + 5_000 : 0;
        this.checksEarlierJob = sink.refusesEarlierJob && !restored && leaseToken != null;
        this.guard = new PrefixGuard(sink.keyPrefix);
        this.endpoint = sink.endpoint;
        this.buffer = new RedisWriteBuffer();
        this.timers = context.getProcessingTimeService();
        this.subtask = context.getTaskInfo().getIndexOfThisSubtask();
        this.parallelism = context.getTaskInfo().getNumberOfParallelSubtasks();
        this.maxParallelism = Math.max(parallelism, context.getTaskInfo().getMaxNumberOfParallelSubtasks());
        RedisKeys keys = new RedisKeys(sink.keyPrefix);
        this.watermarkKey = keys.watermark();
        this.latenessKey = keys.allowedLateness();
        this.markKey = keys.mark();
        this.epochKey = keys.epoch();
        this.watermarkPerWriterKey =
                keys.watermarkPerWriter(context.getJobInfo().getJobId().toString(), parallelism);
        SinkWriterMetricGroup metrics = context.metricGroup();
        metrics.counter("redisCommandsSent", commandsSent);
        metrics.counter("redisKeysWritten", keysWritten);
        metrics.counter("redisWritesStale", writesStale);
        metrics.counter("redisWritesCoalesced", writesCoalesced);
        metrics.counter("redisRetries", retries);
        metrics.counter("redisFlushes", flushes);
        metrics.counter("redisRejected", keysRejected);
        metrics.counter("redisWritesGuarded", writesGuarded);
        metrics.counter("redisWritesPlain", writesPlain);
        metrics.counter("redisDataLost", dataLost);
        metrics.counter(RollcountMetrics.REDIS_KEYS_CONFIRMED, keysConfirmed);
        metrics.gauge(RollcountMetrics.REDIS_FIRST_REJECTED, () -> firstRejected);
        metrics.gauge("redisLastFlushMillis", () -> lastFlushMillis);
        metrics.setCurrentSendTimeGauge(() -> lastFlushMillis);
        RollcountMetrics.counter(metrics, RollcountMetrics.REDIS_COMMANDS_SENT, commandsSent);
        RollcountMetrics.counter(metrics, RollcountMetrics.REDIS_KEYS_WRITTEN, keysWritten);
        RollcountMetrics.counter(metrics, RollcountMetrics.REDIS_RETRIES, retries);
        RollcountMetrics.counter(metrics, RollcountMetrics.REDIS_REJECTED, keysRejected);
        RollcountMetrics.counter(metrics, RollcountMetrics.REDIS_DATA_LOST, dataLost);
        this.writeLatency = RollcountMetrics.redisWriteLatency(metrics);
        RollcountMetrics.redisWritesInFlight(metrics, () -> inFlight, () -> inFlightWrites);
        this.recordsSend = metrics.getNumRecordsSendCounter();
        this.sendErrors = metrics.getNumRecordsSendErrorsCounter();
        String ioName = "redis-writer-io-" + subtask;
        this.io = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, ioName);
            t.setDaemon(true);
            return t;
        });
        renewLeaseIfDue();
        // connect (and read P:_mark) now, before the first batch: a sibling writer that started a moment
        // earlier and already raised the mark would otherwise make this one guard keys no run wrote before
        if (!sink.plainWritesOnly) io.submit(this::connectEarly);
        scheduleTimer();
    }

    /**
     * I/O thread: the first connection, ahead of the first batch. A transient failure is left to that batch's
     * retries; any other (refused credentials, an untrusted certificate) is kept for the batch to fail with at
     * once, without connecting again.
     */
    private void connectEarly() {
        try {
            connection();
        } catch (JedisException e) {
            closeConnection();
            if (!isTransient(e)) earlyFailure = e;
            LOG.debug("connecting to Redis at {} ahead of the first batch failed ({})", endpoint, describe(e));
        }
    }

    /** The lasting failure of {@link #connectEarly}, for the first batch to fail with (I/O thread). */
    private JedisException earlyFailure;

    /** Queues a lease renewal on the I/O thread (ahead of the next batch) every {@link PrefixGuard#LEASE_RENEWAL}. */
    private void renewLeaseIfDue() {
        if (leaseToken == null) return;
        RuntimeException lost = leaseLost;
        if (lost != null) throw lost;
        long now = timers.getCurrentProcessingTime();
        if (leaseRenewedAt != Long.MIN_VALUE && now - leaseRenewedAt < PrefixGuard.LEASE_RENEWAL.toMillis()) return;
        leaseRenewedAt = now;
        io.submit(this::renewLease);
    }

    /** I/O thread: takes or renews the lease; a transient Redis failure is left to the next renewal and to the batches' retries. */
    private void renewLease() {
        while (true) {
            String holder;
            try {
                if (checksEarlierJob && !leaseHeld && refusedForEarlierJob()) return;
                countCommands(1);
                holder = guard.acquire(connection(), leaseToken);
            } catch (JedisException e) {
                closeConnection();
                LOG.warn(
                        "renewing the lease of key prefix '{}' at {} failed ({}); retrying in {} s",
                        sink.keyPrefix,
                        endpoint,
                        describe(e),
                        PrefixGuard.LEASE_RENEWAL.toSeconds());
                return;
            }
            if (holder == null) {
                leaseHeld = true;
                return;
            }
            // A restored writer whose lease is still held (by the crashed run it continues, or by a sibling
            // that restored the token while this one, after a rescale, restored none) waits for it to expire.
            if (!leaseHeld && System.currentTimeMillis() < leaseWaitUntil && !closed) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                continue;
            }
            LOG.warn("key prefix '{}': the lease is held by another job (token {})", sink.keyPrefix, holder);
            leaseLost = new SuppressRestartsException(new PrefixInUseException(guard.inUse()));
            return;
        }
    }

    /** I/O thread, before the first lease: whether another job's mark is on the prefix (then the job fails). */
    private boolean refusedForEarlierJob() {
        countCommands(1);
        String other = guard.otherJobsMark(connection(), leaseToken);
        if (other == null) return false;
        LOG.warn("key prefix '{}' holds the counts of an earlier job (token {})", sink.keyPrefix, other);
        leaseLost = new SuppressRestartsException(new PrefixInUseException(guard.startedOverEarlierJob()));
        return true;
    }

    @Override
    public void write(RedisWrite element, Context context) throws IOException, InterruptedException {
        if (leaseLost != null) throw leaseLost;
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
    public void writeWatermark(org.apache.flink.api.common.eventtime.Watermark watermark) {
        if (sink.publishesWatermark && watermark.getTimestamp() > pendingWatermark)
            pendingWatermark = watermark.getTimestamp();
    }

    /** Returns only once every write received so far is in Redis (or throws). */
    @Override
    public void flush(boolean endOfInput) throws IOException, InterruptedException {
        flushBuffer();
        awaitInFlight();
        if (leaseLost != null) throw leaseLost;
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
            throw new java.io.InterruptedIOException("interrupted while waiting for Redis");
        }
        boolean rejections = heldWatermark != Long.MAX_VALUE || !rejectedKeys.isEmpty();
        if (leaseToken == null && !rejections) return List.of();
        List<RedisWriterState> states = new ArrayList<>();
        states.add(new RedisWriterState(leaseToken, heldWatermark, new ArrayList<>(rejectedKeys)));
        if (leaseToken != null) {
            int copies = Math.max(1, (maxParallelism + parallelism - 1) / parallelism);
            for (int i = 1; i < copies; i++) states.add(new RedisWriterState(leaseToken, Long.MAX_VALUE, List.of()));
        }
        return states;
    }

    @Override
    public void close() throws InterruptedException {
        closed = true;
        if (leaseToken != null && leaseLost == null) {
            try {
                io.submit(() -> guard.release(connection(), leaseToken)).get(2, java.util.concurrent.TimeUnit.SECONDS);
            } catch (java.util.concurrent.ExecutionException
                    | java.util.concurrent.TimeoutException
                    | java.util.concurrent.RejectedExecutionException e) {
                LOG.info(
                        "could not give up the lease of key prefix '{}' (it expires within {} s): {}",
                        sink.keyPrefix,
                        PrefixGuard.LEASE_TTL.toSeconds(),
                        e.toString());
            }
        }
        io.shutdownNow();
        if (!io.awaitTermination(10, java.util.concurrent.TimeUnit.SECONDS)) {
            LOG.warn("the Redis writer's I/O thread did not stop within 10 s");
        }
        closeConnection();
    }

    /** Writes buffered and not yet sent (distinct keys). */
    int bufferedKeys() {
        return buffer.keys();
    }

    private void scheduleTimer() {
        long now = timers.getCurrentProcessingTime();
        timers.registerTimer(now + sink.flushIntervalMillis, this::onTimer);
    }

    private void onTimer(long time) throws IOException, InterruptedException {
        if (closed) return;
        renewLeaseIfDue();
        flushBuffer();
        scheduleTimer();
    }

    /**
     * Hands the buffered writes, then the watermark that arrived before them (if it moved and is a real
     * time), to the I/O thread as one batch, once the batch before it is in Redis. The watermark goes in a
     * round trip of its own after the writes, and only once every one of them has been applied or rejected
     * (see {@link #heldWatermark}).
     */
    private void flushBuffer() throws IOException, InterruptedException {
        List<RedisWrite> writes = List.of();
        if (!buffer.isEmpty()) {
            writesCoalesced.inc(buffer.takeCoalesced());
            writes = buffer.drain();
        }
        long wm = pendingWatermark;
        boolean publish = wm > handedWatermark && wm >= 0;
        if (writes.isEmpty() && !publish) return;
        if (publish) handedWatermark = wm;
        awaitInFlight();
        List<RedisWrite> batch = writes;
        long batchWatermark = publish ? wm : Long.MIN_VALUE;
        inFlightWrites = batch.size();
        inFlight = io.submit(() -> {
            long start = System.nanoTime();
            RuntimeException lost = leaseLost;
            if (lost != null) throw lost; // never write under a prefix another job holds
            try {
                if (!batch.isEmpty()) sendWithRetry(batch);
                publishWatermark(batchWatermark);
            } catch (IOException | RuntimeException e) {
                sendErrors.inc(batch.size());
                throw e;
            }
            recordsSend.inc(batch.size());
            flushes.inc();
            lastFlushMillis = (System.nanoTime() - start) / 1_000_000;
            writeLatency.update(lastFlushMillis);
            return null;
        });
    }

    /**
     * Writes this writer's watermark (held below the earliest window Redis rejected a key of) if it moved:
     * called by the I/O thread after the writes before it are in Redis.
     */
    private void publishWatermark(long wm) throws IOException, InterruptedException {
        long effective = Math.min(wm, heldWatermark);
        if (effective <= writtenWatermark || effective < 0) return;
        RedisApplyScript.Call c =
                RedisApplyScript.watermark(watermarkPerWriterKey, watermarkKey, subtask, parallelism, effective);
        retrying(() -> sendCalls(connection(), withLateness(c)));
        writtenWatermark = effective;
    }

    /**
     * The watermark's call, and where the allowed lateness is not written yet a call that writes it (a call of its
     * own: in a Redis Cluster its key is in another slot).
     */
    private List<RedisApplyScript.Call> withLateness(RedisApplyScript.Call watermark) {
        if (latenessWritten || sink.allowedLatenessMillis < 0) return List.of(watermark);
        latenessWritten = true;
        RedisApplyScript.Call lateness = new RedisApplyScript.Call();
        lateness.add(
                RedisWrite.count(latenessKey, null, sink.allowedLatenessMillis, 0, false, RedisWrite.NO_WINDOW, 0));
        return List.of(watermark, lateness);
    }

    /** The watermark this writer holds its published one below, {@code Long.MAX_VALUE} for none. */
    long heldWatermark() {
        return heldWatermark;
    }

    /** Waits for the batch in flight; rethrows its failure. */
    private void awaitInFlight() throws IOException, InterruptedException {
        if (inFlight == null) return;
        try {
            inFlight.get();
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof IOException io) throw io;
            if (cause instanceof RuntimeException r) throw r;
            if (cause instanceof InterruptedException i) throw i;
            throw new RedisSinkException("Redis write failed: " + cause, cause);
        } finally {
            inFlight = null;
        }
    }

    /** Something sent to Redis in one attempt; retried whole on a transient failure. */
    private interface Attempt {
        void run() throws RedisSinkException;
    }

    /** Sends the writes, retrying transient failures with backoff until the retry timeout has passed. */
    private void sendWithRetry(List<RedisWrite> writes) throws IOException, InterruptedException {
        retrying(() -> send(writes));
    }

    /** Runs the attempt, retrying transient failures with backoff on a new connection until the retry timeout has passed. */
    private void retrying(Attempt attempt) throws IOException, InterruptedException {
        if (earlyFailure != null) {
            JedisException e = earlyFailure;
            earlyFailure = null;
            throw permanent(e, null);
        }
        long deadline = System.nanoTime() + sink.retryTimeoutMillis * 1_000_000;
        long backoff = sink.initialBackoffMillis;
        int attempts = 0;
        while (true) {
            attempts++;
            try {
                attempt.run();
                if (attempts > 1) LOG.info("Redis at {} reachable again after {} attempts", endpoint, attempts);
                return;
            } catch (JedisException e) {
                // a redirection from a single server: it is a cluster node, and --redis.cluster is missing
                if (!isTransient(e) || (!endpoint.cluster() && isRedirection(e))) throw permanent(e, null);
                closeConnection(); // a cluster client made anew reads the topology afresh
                retries.inc();
                long remainingMillis = (deadline - System.nanoTime()) / 1_000_000;
                if (remainingMillis <= 0) {
                    throw new RedisSinkException(
                            "Redis at " + endpoint + " still failing after retrying for " + sink.retryTimeoutMillis
                                    + " ms (" + attempts + " attempts): " + describe(e),
                            sanitized(e));
                }
                long pause = Math.min(backoff, remainingMillis);
                LOG.warn("Redis at {} failed ({}); retry {} in {} ms", endpoint, describe(e), attempts, pause);
                Thread.sleep(pause);
                backoff = Math.min(backoff * 2, sink.maxBackoffMillis);
            }
        }
    }

    /** Whether a COUNT must go through the script: a run before this writer may have written its key. */
    private boolean guarded(RedisWrite w) {
        if (sink.plainWritesOnly) return false;
        boolean reachable = w.windowStart == RedisWrite.NO_WINDOW ? guardTotals : w.windowStart <= guardBelow;
        return reachable && !confirmed.contains(ConfirmedKeys.hash(w.key));
    }

    /**
     * The mark that covers a window start: the next minute after it plus one more, so that the mark, which
     * each writer raises in a round trip of its own, changes about once a minute of event time.
     */
    static long markFor(long windowStart) {
        return (Math.floorDiv(windowStart, 60_000L) + 2) * 60_000L;
    }

    /**
     * One attempt: raises {@code P:_mark} first if a COUNT of the batch is of a window above it, then sends
     * every write once, pipelined: plain commands for the writes no replay can reach and for USERS,
     * {@code EVALSHA} of the script for guarded counts, sorted sets and MAX, grouped per counter (several
     * counters per call on a single server, one in Redis Cluster, where a call must touch one slot).
     */
    private void send(List<RedisWrite> writes) throws RedisSinkException {
        UnifiedJedis j = connection();
        if (!sink.plainWritesOnly) raiseMark(j, writes);
        List<Object> units = new ArrayList<>(writes.size());
        Map<String, List<RedisWrite>> scripted = new LinkedHashMap<>();
        List<RedisWrite> maxes = new ArrayList<>();
        long guardedCounts = 0;
        long plain = 0;
        for (RedisWrite w : writes) {
            switch (w.kind) {
                case RedisWrite.COUNT -> {
                    if (guarded(w)) {
                        guardedCounts++;
                        scripted.computeIfAbsent(groupOf(w.key), k -> new ArrayList<>(4))
                                .add(w);
                    } else {
                        plain++;
                        units.add(w);
                    }
                }
                case RedisWrite.USERS, RedisWrite.SKETCH -> {
                    plain++;
                    units.add(w);
                }
                case RedisWrite.ZSET ->
                    scripted.computeIfAbsent(groupOf(w.key), k -> new ArrayList<>(2))
                            .add(w);
                case RedisWrite.MAX -> maxes.add(w);
                default ->
                    throw new IllegalArgumentException("unknown RedisWrite kind " + w.kind + " for key " + w.key);
            }
        }
        units.addAll(pack(scripted.values()));
        for (RedisWrite w : maxes) {
            RedisApplyScript.Call c = new RedisApplyScript.Call();
            c.add(w);
            units.add(c);
        }
        epochChanged = false;
        for (int from = 0; from < units.size(); from += PIPELINE_SLICE) {
            sendUnits(j, units.subList(from, Math.min(units.size(), from + PIPELINE_SLICE)), from == 0);
        }
        if (epochChanged) dataLost(j);
        writesGuarded.inc(guardedCounts);
        writesPlain.inc(plain);
    }

    /** The script calls of the groups: one group per call in Redis Cluster, else up to countersPerCall groups (and maxWritesPerCall writes) per call. */
    private List<RedisApplyScript.Call> pack(java.util.Collection<List<RedisWrite>> groups) {
        List<RedisApplyScript.Call> calls = new ArrayList<>();
        int perCall = endpoint.cluster() ? 1 : sink.countersPerCall;
        RedisApplyScript.Call c = null;
        int inCall = 0;
        for (List<RedisWrite> g : groups) {
            if (c != null && (inCall >= perCall || c.size() + g.size() > sink.maxWritesPerCall)) c = null;
            if (c == null) {
                c = new RedisApplyScript.Call();
                calls.add(c);
                inCall = 0;
            }
            for (RedisWrite w : g) c.add(w);
            inCall++;
        }
        return calls;
    }

    /** The writes of one counter ({@code {C}}) form a group; a key without a hash tag is a group of its own. */
    private static String groupOf(String key) {
        String tag = RedisWriteBuffer.hashTag(key);
        return tag != null ? tag : "\0" + key;
    }

    /**
     * Raises {@code P:_mark} (MAX, through the script, in a round trip of its own) before writes of windows
     * above it, and creates it before this writer's first count of any kind (a total too), so that a writer
     * started after this one knows a run wrote under the prefix.
     */
    private void raiseMark(UnifiedJedis j, List<RedisWrite> writes) throws RedisSinkException {
        long highest = Long.MIN_VALUE;
        boolean counts = false;
        for (RedisWrite w : writes) {
            if (w.kind != RedisWrite.COUNT) continue;
            counts = true;
            if (w.windowStart != RedisWrite.NO_WINDOW && w.windowStart > highest) highest = w.windowStart;
        }
        if (!counts) return;
        if (highest == Long.MIN_VALUE) {
            if (publishedMark != Long.MIN_VALUE) return;
            highest = 0; // totals only: a mark that guards the totals of the next writers, and no window
        } else if (highest <= publishedMark) {
            return;
        }
        long mark = markFor(highest);
        RedisApplyScript.Call c = new RedisApplyScript.Call();
        c.add(RedisWrite.max(markKey, mark));
        sendCalls(j, List.of(c));
        publishedMark = mark;
    }

    /** Script calls alone, pipelined (the watermark, the mark). */
    private void sendCalls(UnifiedJedis j, List<RedisApplyScript.Call> calls) throws RedisSinkException {
        sendUnits(j, new ArrayList<>(calls), false);
    }

    /**
     * Redis lost the job's data (its epoch key, present at this writer's first connection, is gone or another):
     * said once in one line, counted ({@code redisDataLost}), and this writer's
     * view of Redis made true again: the epoch is created anew, the keys it had confirmed are forgotten (Redis
     * holds none of them now), its mark is raised again at once to what it had published (so that a writer
     * started after this one still guards every window this one wrote), its watermark and lease written again.
     * The rebuild itself comes from the operators that hold the values ({@link RedisLossWatch}).
     */
    private void dataLost(UnifiedJedis j) throws RedisSinkException {
        dataLost.inc();
        List<String> lostKeys = new ArrayList<>(epochsLost);
        epochsLost.clear();
        for (String k : lostKeys) {
            countCommands(2);
            knownEpochs.put(k, RedisEpoch.ensure(j, k));
        }
        LOG.warn(
                "Redis at {} lost the data under key prefix '{}' ({} gone or changed): the job rebuilds it from its state and from counter-rollups"
                        + " (see 'If Redis loses data' in the README)",
                endpoint,
                sink.keyPrefix,
                String.join(", ", lostKeys));
        confirmed = new ConfirmedKeys(MAX_CONFIRMED_KEYS);
        if (publishedMark != Long.MIN_VALUE) {
            RedisApplyScript.Call c = new RedisApplyScript.Call();
            c.add(RedisWrite.max(markKey, publishedMark));
            sendCalls(j, List.of(c));
        }
        if (leaseToken != null && leaseLost == null) {
            countCommands(1);
            guard.acquire(j, leaseToken);
        }
        long wm = writtenWatermark;
        writtenWatermark = Long.MIN_VALUE;
        if (wm != Long.MIN_VALUE && sink.publishesWatermark) {
            RedisApplyScript.Call c =
                    RedisApplyScript.watermark(watermarkPerWriterKey, watermarkKey, subtask, parallelism, wm);
            latenessWritten = false;
            sendCalls(j, withLateness(c));
            writtenWatermark = wm;
        }
    }

    /**
     * One pipeline of plain writes ({@link RedisWrite}) and script calls, then their replies one by one: a
     * transient error fails the attempt (the whole batch is retried: every write is idempotent), an error
     * of one key rejects that key, NOSCRIPT sends that call again as {@code EVAL} of the source.
     */
    private void sendUnits(UnifiedJedis j, List<Object> units, boolean checkEpoch) throws RedisSinkException {
        List<Response<?>> responses = new ArrayList<>(units.size() + 8);
        List<String> keysOf = new ArrayList<>(units.size() + 8);
        int[] firstResponse = new int[units.size() + 1];
        int commands = 0;
        Map<String, Response<Long>> replicated = Map.of();
        Map<String, Response<String>> epochs = new LinkedHashMap<>();
        try (AbstractPipeline p = j.pipelined()) {
            // the loss check: one GET per epoch key (one per master in a cluster) ahead of the writes, in the
            // same round trip
            if (checkEpoch && knownEpochs != null) for (String k : epochKeys) epochs.put(k, p.get(k));
            for (int u = 0; u < units.size(); u++) {
                firstResponse[u] = responses.size();
                Object unit = units.get(u);
                if (unit instanceof RedisApplyScript.Call c) {
                    responses.add(p.evalsha(RedisApplyScript.SHA1_BYTES, c.scriptKeys(), c.scriptArgs()));
                    keysOf.add(c.firstKey);
                } else {
                    RedisWrite w = (RedisWrite) unit;
                    if (w.kind == RedisWrite.SKETCH) {
                        // PFMERGE takes keys: the sketch is staged in a key of the counter's (same slot), merged,
                        // dropped
                        String staging = RedisKeys.stagingKeyOf(w.key);
                        responses.add(p.set(
                                staging.getBytes(java.nio.charset.StandardCharsets.UTF_8),
                                w.sketch,
                                SetParams.setParams().px(60_000)));
                        keysOf.add(staging);
                        responses.add(p.pfmerge(w.key, w.key, staging));
                        keysOf.add(w.key);
                        responses.add(p.del(staging));
                        keysOf.add(staging);
                        if (w.expireAtMillis > 0) {
                            responses.add(p.pexpireAt(w.key, w.expireAtMillis));
                            keysOf.add(w.key);
                        }
                    } else if (w.kind == RedisWrite.USERS) {
                        responses.add(p.pfadd(w.key, w.users));
                        keysOf.add(w.key);
                        if (w.expireAtMillis > 0) {
                            responses.add(p.pexpireAt(w.key, w.expireAtMillis));
                            keysOf.add(w.key);
                        }
                    } else {
                        SetParams at =
                                w.expireAtMillis > 0 ? SetParams.setParams().pxAt(w.expireAtMillis) : NO_EXPIRY;
                        // SET ... GET: Redis refuses it on a key of another type (WRONGTYPE) instead of replacing it
                        responses.add(p.setGet(w.key, Long.toString(w.value), at));
                        keysOf.add(w.key);
                        if (!w.monotone && w.versionKey != null) {
                            responses.add(p.setGet(w.versionKey, Long.toString(w.version), at));
                            keysOf.add(w.versionKey);
                        }
                    }
                }
            }
            firstResponse[units.size()] = responses.size();
            commands = responses.size() + epochs.size();
            countCommands(commands);
            if (j instanceof RedisClusterClient cluster) replicated = waitForReplicas(cluster, p, keysOf);
            p.sync();
        }
        checkReplicated(replicated);
        for (Map.Entry<String, Response<String>> e : epochs.entrySet()) {
            String now = e.getValue().get();
            if (!java.util.Objects.equals(knownEpochs.get(e.getKey()), now)) {
                epochChanged = true;
                if (!epochsLost.contains(e.getKey())) epochsLost.add(e.getKey());
            }
        }
        long applied = 0;
        long stale = 0;
        List<RedisApplyScript.Call> noScript = new ArrayList<>();
        for (int u = 0; u < units.size(); u++) {
            Object unit = units.get(u);
            if (unit instanceof RedisApplyScript.Call c) {
                Object result;
                try {
                    result = responses.get(firstResponse[u]).get();
                } catch (JedisDataException e) {
                    if (isNoScript(e)) {
                        noScript.add(c);
                        continue;
                    }
                    if (isTransient(e)) throw e;
                    throw permanent(e, c);
                }
                long[] as = scriptResult(c, result);
                applied += as[0];
                stale += as[1];
            } else {
                boolean ok = true;
                for (int r = firstResponse[u]; r < firstResponse[u + 1]; r++) {
                    try {
                        responses.get(r).get();
                    } catch (JedisDataException e) {
                        if (isTransient(e)) throw e;
                        if (isAccessError(e)) throw permanent(e, null);
                        rejected(keysOf.get(r), e.getMessage() == null ? "error" : e.getMessage());
                        ok = false;
                    }
                }
                if (ok) applied++;
            }
        }
        if (!noScript.isEmpty()) {
            // a server that lost the script (a restart, SCRIPT FLUSH, a cluster node that never saw SCRIPT LOAD):
            // EVAL of the source runs the call and caches the script there
            List<Response<Object>> evals = new ArrayList<>(noScript.size());
            try (AbstractPipeline p = j.pipelined()) {
                for (RedisApplyScript.Call c : noScript)
                    evals.add(p.eval(RedisApplyScript.SOURCE_BYTES, c.scriptKeys(), c.scriptArgs()));
                countCommands(noScript.size());
                p.sync();
            }
            for (int i = 0; i < noScript.size(); i++) {
                Object result;
                try {
                    result = evals.get(i).get();
                } catch (JedisDataException e) {
                    if (isTransient(e)) throw e;
                    throw permanent(e, noScript.get(i));
                }
                long[] as = scriptResult(noScript.get(i), result);
                applied += as[0];
                stale += as[1];
            }
        }
        keysWritten.inc(applied);
        writesStale.inc(stale);
    }

    private static final SetParams NO_EXPIRY = SetParams.setParams();

    /**
     * A script call's reply {@code {applied, skipped, status, key1, error1, ...}}: reports the rejected keys,
     * and confirms each guarded COUNT that was applied (Redis was not ahead: from now on its key is written
     * plain). Returns {applied, skipped}.
     */
    private long[] scriptResult(RedisApplyScript.Call c, Object result) {
        if (!(result instanceof List<?> l) || l.size() < 3) {
            throw new RedisSinkException.Unchecked("Redis at " + endpoint + " answered the rollcount script with "
                    + result + " (first key " + c.firstKey + ")");
        }
        String status = text(l.get(2));
        for (int i = 0; i < status.length() && i < c.writes.size(); i++) {
            RedisWrite w = c.writes.get(i);
            if (status.charAt(i) == 'a' && w.kind == RedisWrite.COUNT) {
                long h = ConfirmedKeys.hash(w.key);
                if (!confirmed.contains(h) && confirmed.add(h)) keysConfirmed.inc();
            }
        }
        for (int r = 3; r + 1 < l.size(); r += 2) rejected(text(l.get(r)), text(l.get(r + 1)));
        return new long[] {((Number) l.get(0)).longValue(), ((Number) l.get(1)).longValue()};
    }

    private static boolean isAccessError(JedisDataException e) {
        String m = e.getMessage();
        return m != null && (m.startsWith("NOPERM") || m.startsWith("NOAUTH") || m.startsWith("WRONGPASS"));
    }

    /**
     * A key Redis rejected for good (its write cannot succeed on retry: a key of another type under the
     * prefix, say): logged and counted once per key; a window's key holds the watermark below that window.
     */
    private void rejected(String key, String error) {
        if (error.endsWith(".")) error = error.substring(0, error.length() - 1);
        long start = RedisKeys.windowStartMillis(key);
        if (start != Long.MIN_VALUE && start < heldWatermark) heldWatermark = start;
        if (rejectedKeys.contains(key)) return;
        boolean listed = rejectedKeys.size() < MAX_REPORTED_KEYS;
        if (listed) rejectedKeys.add(key);
        keysRejected.inc();
        if (firstRejected == null) firstRejected = key + " (" + error + ")";
        if (listed) {
            LOG.warn(
                    "Redis at {} rejected key {} for good: {}. Every other key is still written; this one is not{}.",
                    endpoint,
                    key,
                    error,
                    start != Long.MIN_VALUE
                            ? ", and " + watermarkKey + " stays below its window (start " + start + " ms)"
                            : "");
        } else if (rejectedKeys.size() == MAX_REPORTED_KEYS) {
            LOG.warn(
                    "Redis at {} rejected more than {} keys; more are counted in the metric redisRejected, not logged",
                    endpoint,
                    MAX_REPORTED_KEYS);
        }
    }

    private static String text(Object o) {
        return o instanceof byte[] b ? new String(b, java.nio.charset.StandardCharsets.UTF_8) : String.valueOf(o);
    }

    private UnifiedJedis connection() {
        if (jedis == null) {
            UnifiedJedis j = endpoint.client();
            try {
                loadScript(j);
                if (!markRead && !sink.plainWritesOnly) readMark(j);
                learnEpochs(j);
            } catch (RuntimeException e) {
                j.close();
                throw e;
            }
            jedis = j;
        }
        return jedis;
    }

    /**
     * The epoch keys of the slot map now ({@link RedisEpoch#keys}); each one this writer does not know yet is
     * read, or created, and known from now on. A key it knew keeps the token it knew: the next batch compares.
     */
    private void learnEpochs(UnifiedJedis j) {
        List<String> keys = RedisEpoch.keys(j, epochKey);
        if (keys.size() > 1) countCommands(1);
        Map<String, String> known = knownEpochs == null ? new HashMap<>() : knownEpochs;
        for (String k : keys) {
            if (known.containsKey(k)) continue;
            countCommands(2);
            known.put(k, RedisEpoch.ensure(j, k));
        }
        knownEpochs = known;
        epochKeys = keys;
    }

    /**
     * Reads {@code P:_mark} once, before this writer's first write: if it exists, a run before this writer
     * (the one it is restored from, a sibling, an earlier job) may have written larger values, and the
     * guard is on for every total and every window up to the mark.
     */
    private void readMark(UnifiedJedis j) {
        countCommands(1);
        String mark = j.get(markKey);
        if (mark != null) {
            try {
                guardBelow = Long.parseLong(mark);
            } catch (NumberFormatException e) {
                throw new RedisSinkException.Unchecked("Redis at " + endpoint + " holds '" + mark + "' at " + markKey
                        + ", not a time in epoch ms: delete that key");
            }
            guardTotals = true;
            publishedMark = guardBelow;
            LOG.info(
                    "{} is {}: totals and windows up to it are written through the guarded script until Redis is not ahead",
                    markKey,
                    guardBelow);
        }
        markRead = true;
    }

    private void loadScript(UnifiedJedis j) {
        if (j instanceof RedisClusterClient cluster) {
            loadScriptOnEveryNode(cluster);
            return;
        }
        countCommands(1);
        String sha = j.scriptLoad(RedisApplyScript.SOURCE);
        if (!RedisApplyScript.SHA1.equals(sha)) {
            throw new IllegalStateException(
                    "Redis returned SHA " + sha + " for the rollcount script, expected " + RedisApplyScript.SHA1);
        }
    }

    /**
     * SCRIPT LOAD on every node of the cluster client's topology (a script lives on one node; replicas get
     * it too, for the day they are promoted). A node that cannot be reached is skipped: if it serves again,
     * its NOSCRIPT reply makes the writer load the script again.
     */
    private void loadScriptOnEveryNode(RedisClusterClient cluster) {
        JedisException last = null;
        int loaded = 0;
        for (Map.Entry<String, ConnectionPool> node : cluster.getClusterNodes().entrySet()) {
            countCommands(1);
            try (Connection c = node.getValue().getResource();
                    Jedis n = new Jedis(c)) {
                String sha = n.scriptLoad(RedisApplyScript.SOURCE);
                if (!RedisApplyScript.SHA1.equals(sha)) {
                    throw new IllegalStateException("Redis at " + node.getKey() + " returned SHA " + sha
                            + " for the rollcount script, expected " + RedisApplyScript.SHA1);
                }
                loaded++;
            } catch (JedisConnectionException e) {
                last = e;
            }
        }
        if (loaded == 0 && last != null) throw last;
    }

    /**
     * Cluster only: appends to the pipeline, after the calls, one {@code WAIT 1 <timeout>} per master that
     * the calls' slots map to, on the pipeline's own connection to that master (WAIT waits for the writes of
     * its connection), so that a batch completes only once its writes are on a replica as well: a master
     * killed after that loses none of them at failover. Masters known to have no replica are skipped.
     * Returns the WAIT replies by master.
     */
    private Map<String, Response<Long>> waitForReplicas(
            RedisClusterClient cluster, AbstractPipeline p, List<String> keys) {
        Map<String, String> sampleKeyByNode = new LinkedHashMap<>();
        for (String key : keys) {
            if (key == null) continue;
            int slot = JedisClusterCRC16.getSlot(key);
            String node = nodeOfSlot.computeIfAbsent(slot, s -> {
                try (Connection conn = cluster.getConnectionFromSlot(s)) {
                    return conn.getHostAndPort().toString();
                }
            });
            sampleKeyByNode.putIfAbsent(node, key);
        }
        Map<String, Response<Long>> replies = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : sampleKeyByNode.entrySet()) {
            if (noReplica.contains(e.getKey())) continue;
            replies.put(e.getKey() + " " + e.getValue(), p.waitReplicas(e.getValue(), 1, REPLICA_WAIT_MILLIS));
            countCommands(1);
        }
        return replies;
    }

    /**
     * A master whose WAIT timed out: fine (and skipped from now on) if it has no replica connected, as after
     * its replica was promoted in place of a failed master; otherwise a transient NOREPLICAS error, and the
     * batch is sent again.
     */
    private void checkReplicated(Map<String, Response<Long>> replies) {
        for (Map.Entry<String, Response<Long>> e : replies.entrySet()) {
            if (e.getValue().get() >= 1) continue;
            String node = e.getKey().substring(0, e.getKey().indexOf(' '));
            String sampleKey = e.getKey().substring(node.length() + 1);
            int replicas;
            try (Connection c =
                            ((RedisClusterClient) jedis).getConnectionFromSlot(JedisClusterCRC16.getSlot(sampleKey));
                    Jedis n = new Jedis(c)) {
                replicas = connectedReplicas(n.info("replication"));
            }
            if (replicas > 0) {
                throw new JedisDataException("NOREPLICAS no replica of " + node + " acknowledged the batch within "
                        + REPLICA_WAIT_MILLIS + " ms");
            }
            LOG.warn(
                    "Redis Cluster master {} has no replica: writes to it are not waited for until the writer reconnects",
                    node);
            noReplica.add(node);
        }
    }

    private static int connectedReplicas(String infoReplication) {
        for (String line : infoReplication.split("\\r?\\n")) {
            if (line.startsWith("connected_slaves:"))
                return Integer.parseInt(
                        line.substring("connected_slaves:".length()).trim());
        }
        return 0;
    }

    private void countCommands(int n) {
        commandsSent.inc(n);
    }

    private void closeConnection() {
        nodeOfSlot.clear();
        noReplica.clear();
        if (jedis != null) {
            try {
                jedis.close();
            } catch (RuntimeException e) {
                LOG.debug("closing the Redis connection to {} failed", endpoint, e);
            }
            jedis = null;
        }
    }

    private static boolean isNoScript(JedisDataException e) {
        String m = e.getMessage();
        return m != null && m.startsWith("NOSCRIPT");
    }

    /** Worth retrying: the connection broke or timed out, or the server is briefly unable to serve. */
    static boolean isTransient(Throwable e) {
        if (e instanceof JedisAccessControlException) return false;
        if (e instanceof JedisConnectionException) {
            for (Throwable c = e.getCause(); c != null && c != c.getCause(); c = c.getCause()) {
                // refused credentials and untrusted certificates do not heal by waiting
                if (c instanceof JedisAccessControlException
                        || c instanceof java.security.cert.CertificateException
                        || c instanceof javax.net.ssl.SSLPeerUnverifiedException) {
                    return false;
                }
            }
            return true;
        }
        if (e instanceof JedisDataException) {
            String m = e.getMessage() == null ? "" : e.getMessage();
            return m.startsWith("LOADING")
                    || m.startsWith("BUSY")
                    || m.startsWith("MASTERDOWN")
                    || m.startsWith("TRYAGAIN")
                    || m.startsWith("CLUSTERDOWN")
                    || m.startsWith("READONLY")
                    || m.startsWith("OOM")
                    || m.startsWith("MISCONF")
                    || m.startsWith("NOREPLICAS")
                    || isRedirection(e);
        }
        // a Redis Cluster whose topology the client could not read or follow (a failover in progress)
        return e instanceof JedisClusterOperationException;
    }

    /** A MOVED or ASK reply: the slot is served by another node (a failover or a slot migration). */
    static boolean isRedirection(Throwable e) {
        if (e instanceof JedisRedirectionException) return true;
        String m = e.getMessage();
        return e instanceof JedisDataException && m != null && (m.startsWith("MOVED ") || m.startsWith("ASK "));
    }

    private RedisSinkException permanent(JedisException e, RedisApplyScript.Call call) {
        String what;
        if (e instanceof JedisAccessControlException
                || e.getCause() instanceof JedisAccessControlException
                || (e.getMessage() != null
                        && (e.getMessage().startsWith("NOPERM")
                                || e.getMessage().startsWith("WRONGPASS")
                                || e.getMessage().startsWith("NOAUTH")))) {
            what = "Redis at " + endpoint + " refused access"
                    + (endpoint.user() != null ? " for user " + endpoint.user() : "")
                    + (call != null ? " to the batch of key " + call.firstKey : "");
        } else if (isRedirection(e)) {
            what = "Redis at " + endpoint
                    + " is a node of a Redis Cluster (it redirected a write): add --redis.cluster and list the cluster's nodes in --redis";
        } else if (hasCause(e, java.security.cert.CertificateException.class)) {
            what = "Redis at " + endpoint + " presented a certificate that is not trusted or does not name the host";
        } else if (call != null) {
            what = "Redis at " + endpoint + " failed a script call (its first key " + call.firstKey + ")";
        } else {
            what = "Redis at " + endpoint + " failed";
        }
        return new RedisSinkException(what + ": " + describe(e), sanitized(e));
    }

    private static boolean hasCause(Throwable e, Class<? extends Throwable> type) {
        for (Throwable c = e; c != null; c = c.getCause() == c ? null : c.getCause()) {
            if (type.isInstance(c)) return true;
        }
        return false;
    }

    /** The exception's class and message, with its root cause's message where that adds something; redacted. */
    private String describe(Throwable e) {
        String m = e.getMessage();
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        if (root != e && root.getMessage() != null && (m == null || !m.contains(root.getMessage()))) {
            m = (m == null ? "" : m + ": ") + root.getMessage();
        }
        return endpoint.redact(e.getClass().getSimpleName() + (m == null ? "" : " " + m));
    }

    /**
     * The exception to keep as the cause: the original unless its messages would show the password
     * (Jedis never puts it there, but a cause chain is printed in full in Flink's UI and logs).
     */
    private Throwable sanitized(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            String m = c.getMessage();
            if (m != null && !m.equals(endpoint.redact(m))) {
                return new RedisSinkException.Unchecked(
                        endpoint.redact(String.valueOf(e.getMessage())) + " (cause removed: it showed the password)");
            }
            if (c.getCause() == c) break;
        }
        return e;
    }
}
