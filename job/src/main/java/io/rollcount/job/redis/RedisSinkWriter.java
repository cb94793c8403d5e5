package io.rollcount.job.redis;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;
import org.apache.flink.runtime.execution.SuppressRestartsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.exceptions.JedisClusterOperationException;
import redis.clients.jedis.exceptions.JedisRedirectionException;
import redis.clients.jedis.util.JedisClusterCRC16;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The writer of {@link RedisSink}: buffers and coalesces writes, and applies them with
 * {@code EVALSHA} of {@link RedisApplyScript} (several counters per call), pipelined, when the buffer is
 * full and on a processing-time timer.
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
 * <p>A key Redis rejects for good (the script's per-key errors, such as WRONGTYPE for a key of another
 * type under the prefix) does not fail the batch: the script writes every other key and returns the
 * rejected ones, which the writer reports once each (a WARN line, {@code redisRejected},
 * {@link RedisSink#KEYS_REJECTED}) and keeps in its checkpointed state ({@link RedisWriterState}) with the
 * start of the earliest rejected window, below which it holds the watermark it publishes. The watermark goes
 * to Redis after the writes of its batch, in a round trip of its own.
 *
 * <p>Against a Redis Cluster ({@link RedisEndpoint#cluster()}) the connection is a cluster client whose
 * pipelines send each call to the master of its slot. A redirection (MOVED, ASK: a failover or a slot
 * migration), CLUSTERDOWN, TRYAGAIN or a lost node is retried like a lost connection, on a new client that
 * reads the topology anew; the script is loaded on every node; and each pipeline ends with {@code WAIT 1} to
 * every master it wrote to, so that a batch completes only once a replica has it ({@link #waitForReplicas}).
 *
 * <p>Metrics on the writer's metric group: {@code redisCommandsSent}, {@code redisKeysWritten},
 * {@code redisWritesStale} (skipped by the version check), {@code redisWritesCoalesced} (absorbed in the
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
    private static final byte[] SHA = RedisApplyScript.b(RedisApplyScript.SHA1);
    private static final byte[] NO_LINEAGE = new byte[0];
    /** Script calls per pipeline round trip. */
    private static final int PIPELINE_SLICE = 1_000;
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
    private final Counter recordsSend;
    private final Counter sendErrors;
    private volatile long lastFlushMillis;

    /** Used by the I/O thread only. */
    private UnifiedJedis jedis;
    /**
     * This writer's lineage mark (I/O thread only): allocated from Redis ({@code INCR P:_lineage}) before
     * its first growing sketch is sent, kept for its whole life, so that no other writer, before or after, has the same one
     * while fewer than 16,777,215 writers have started against this Redis since. See {@link RedisWrite#growingHll}.
     */
    private byte[] lineage;
    private final String lineageKey;
    private boolean closed;
    private final java.util.concurrent.ExecutorService io;
    /** The batch in flight, or null. */
    private java.util.concurrent.Future<?> inFlight;
    private final String watermarkPerWriterKey;
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
    /** Set by the I/O thread when another job holds the lease; thrown by the task thread. */
    private volatile RuntimeException leaseLost;

    RedisSinkWriter(RedisSink sink, WriterInitContext context) {
        this(sink, context, null, false, List.of());
    }

    /**
     * @param restored whether the job restores a checkpoint or savepoint: then a lease held by another token is waited for, up to its expiry
     * @param restoredState the states this writer restores: their rejected keys and watermark holds are kept
     */
    RedisSinkWriter(RedisSink sink, WriterInitContext context, String leaseToken, boolean restored, java.util.Collection<RedisWriterState> restoredState) {
        for (RedisWriterState r : restoredState) {
            heldWatermark = Math.min(heldWatermark, r.heldWatermark);
            rejectedKeys.addAll(r.keys);
        }
        this.sink = sink;
        this.leaseToken = leaseToken;
        this.leaseWaitUntil = restored ? System.currentTimeMillis() + PrefixGuard.LEASE_TTL.toMillis() + 5_000 : 0;
        this.guard = new PrefixGuard(sink.keyPrefix);
        this.endpoint = sink.endpoint;
        this.buffer = new RedisWriteBuffer(sink.keyPrefix);
        this.timers = context.getProcessingTimeService();
        this.subtask = context.getTaskInfo().getIndexOfThisSubtask();
        this.parallelism = context.getTaskInfo().getNumberOfParallelSubtasks();
        this.maxParallelism = Math.max(parallelism, context.getTaskInfo().getMaxNumberOfParallelSubtasks());
        RedisKeys keys = new RedisKeys(sink.keyPrefix);
        this.watermarkKey = keys.watermark();
        this.lineageKey = keys.lineage();
        this.watermarkPerWriterKey = keys.watermarkPerWriter(context.getJobInfo().getJobId().toString(), parallelism);
        SinkWriterMetricGroup metrics = context.metricGroup();
        metrics.counter("redisCommandsSent", commandsSent);
        metrics.counter("redisKeysWritten", keysWritten);
        metrics.counter("redisWritesStale", writesStale);
        metrics.counter("redisWritesCoalesced", writesCoalesced);
        metrics.counter("redisRetries", retries);
        metrics.counter("redisFlushes", flushes);
        metrics.counter("redisRejected", keysRejected);
        metrics.gauge("redisLastFlushMillis", () -> lastFlushMillis);
        metrics.setCurrentSendTimeGauge(() -> lastFlushMillis);
        this.recordsSend = metrics.getNumRecordsSendCounter();
        this.sendErrors = metrics.getNumRecordsSendErrorsCounter();
        String ioName = "redis-writer-io-" + subtask;
        this.io = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, ioName);
            t.setDaemon(true);
            return t;
        });
        renewLeaseIfDue();
        scheduleTimer();
    }

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
                countCommands(1);
                holder = guard.acquire(connection(), leaseToken);
            } catch (JedisException e) {
                closeConnection();
                LOG.warn("renewing the lease of key prefix '{}' at {} failed ({}); retrying in {} s", sink.keyPrefix, endpoint, describe(e),
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
            leaseLost = new SuppressRestartsException(new RedisSinkException.Unchecked("key prefix '" + sink.keyPrefix
                    + "' is in use by another job (lease " + guard.prefix() + ":_lease held by " + holder
                    + "): stop that job, or give this one its own --redis.key-prefix"));
            return;
        }
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
        if (sink.publishesWatermark && watermark.getTimestamp() > pendingWatermark) pendingWatermark = watermark.getTimestamp();
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
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException | java.util.concurrent.RejectedExecutionException e) {
                LOG.info("could not give up the lease of key prefix '{}' (it expires within {} s): {}", sink.keyPrefix,
                        PrefixGuard.LEASE_TTL.toSeconds(), e.toString());
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
        List<RedisApplyScript.Call> calls = new ArrayList<>();
        int writes = 0;
        if (!buffer.isEmpty()) {
            writesCoalesced.inc(buffer.takeCoalesced());
            calls.addAll(buffer.drain(sink.maxWritesPerCall, sink.countersPerCall));
            for (RedisApplyScript.Call c : calls) writes += c.writes;
        }
        long wm = pendingWatermark;
        boolean publish = wm > handedWatermark && wm >= 0;
        if (calls.isEmpty() && !publish) return;
        if (publish) handedWatermark = wm;
        awaitInFlight();
        int batchWrites = writes;
        long batchWatermark = publish ? wm : Long.MIN_VALUE;
        inFlight = io.submit(() -> {
            long start = System.nanoTime();
            RuntimeException lost = leaseLost;
            if (lost != null) throw lost; // never write under a prefix another job holds
            try {
                if (!calls.isEmpty()) sendWithRetry(calls);
                publishWatermark(batchWatermark);
            } catch (IOException | RuntimeException e) {
                sendErrors.inc(batchWrites);
                throw e;
            }
            recordsSend.inc(batchWrites);
            flushes.inc();
            lastFlushMillis = (System.nanoTime() - start) / 1_000_000;
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
        sendWithRetry(List.of(RedisApplyScript.watermark(watermarkPerWriterKey, watermarkKey, subtask, parallelism, effective)));
        writtenWatermark = effective;
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

    /** Sends the calls, retrying transient failures with backoff until the retry timeout has passed. */
    private void sendWithRetry(List<RedisApplyScript.Call> calls) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + sink.retryTimeoutMillis * 1_000_000;
        long backoff = sink.initialBackoffMillis;
        int attempt = 0;
        while (true) {
            attempt++;
            try {
                send(calls);
                if (attempt > 1) LOG.info("Redis at {} reachable again after {} attempts", endpoint, attempt);
                return;
            } catch (JedisException e) {
                // a redirection from a single server: it is a cluster node, and --redis.cluster is missing
                if (!isTransient(e) || (!endpoint.cluster() && isRedirection(e))) throw permanent(e, null);
                closeConnection(); // a cluster client made anew reads the topology afresh
                retries.inc();
                long remainingMillis = (deadline - System.nanoTime()) / 1_000_000;
                if (remainingMillis <= 0) {
                    throw new RedisSinkException("Redis at " + endpoint + " still failing after retrying for "
                            + sink.retryTimeoutMillis + " ms (" + attempt + " attempts): " + describe(e), sanitized(e));
                }
                long pause = Math.min(backoff, remainingMillis);
                LOG.warn("Redis at {} failed ({}); retry {} in {} ms", endpoint, describe(e), attempt, pause);
                Thread.sleep(pause);
                backoff = Math.min(backoff * 2, sink.maxBackoffMillis);
            }
        }
    }

    /** One attempt: every call once, pipelined; reloads the script once on NOSCRIPT. */
    private void send(List<RedisApplyScript.Call> calls) throws RedisSinkException {
        UnifiedJedis j = connection();
        if (lineage == null && calls.stream().anyMatch(c -> !c.growing.isEmpty())) {
            countCommands(1);
            lineage = RedisApplyScript.lineageMark(j.incr(lineageKey));
        }
        byte[] mark = lineage != null ? lineage : NO_LINEAGE;
        long applied = 0;
        long stale = 0;
        for (int from = 0; from < calls.size(); from += PIPELINE_SLICE) {
            List<RedisApplyScript.Call> pending = calls.subList(from, Math.min(calls.size(), from + PIPELINE_SLICE));
            for (int round = 0; !pending.isEmpty(); round++) {
                List<Response<Object>> responses = new ArrayList<>(pending.size());
                Map<String, Response<Long>> replicated = new LinkedHashMap<>();
                try (AbstractPipeline p = j.pipelined()) {
                    for (RedisApplyScript.Call c : pending) responses.add(p.evalsha(SHA, c.scriptKeys(), c.scriptArgs(mark)));
                    countCommands(pending.size());
                    if (j instanceof RedisClusterClient cluster) replicated = waitForReplicas(cluster, p, pending);
                    p.sync();
                }
                checkReplicated(replicated);
                List<RedisApplyScript.Call> noScript = new ArrayList<>();
                for (int i = 0; i < pending.size(); i++) {
                    Object result;
                    try {
                        result = responses.get(i).get();
                    } catch (JedisDataException e) {
                        if (isNoScript(e)) {
                            noScript.add(pending.get(i));
                            continue;
                        }
                        if (isTransient(e)) throw e;
                        throw permanent(e, pending.get(i));
                    }
                    if (result instanceof List<?> l && l.size() >= 2) {
                        applied += ((Number) l.get(0)).longValue();
                        stale += ((Number) l.get(1)).longValue();
                        for (int r = 2; r + 1 < l.size(); r += 2) rejected(text(l.get(r)), text(l.get(r + 1)));
                    }
                }
                if (!noScript.isEmpty()) {
                    if (round > 0) {
                        throw new RedisSinkException.Unchecked("Redis at " + endpoint + " keeps losing the rollcount script (SCRIPT FLUSH in a loop?)");
                    }
                    loadScript(j);
                }
                pending = noScript;
            }
        }
        keysWritten.inc(applied);
        RedisSink.KEYS_WRITTEN.add(applied);
        writesStale.inc(stale);
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
        RedisSink.rejected(key, error);
        if (listed) {
            LOG.warn("Redis at {} rejected key {} for good: {}. Every other key is still written; this one is not{}.",
                    endpoint, key, error, start != Long.MIN_VALUE
                            ? ", and " + watermarkKey + " stays below its window (start " + start + " ms)" : "");
        } else if (rejectedKeys.size() == MAX_REPORTED_KEYS) {
            LOG.warn("Redis at {} rejected more than {} keys; more are counted in the metric redisRejected, not logged", endpoint, MAX_REPORTED_KEYS);
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
            } catch (RuntimeException e) {
                j.close();
                throw e;
            }
            jedis = j;
        }
        return jedis;
    }

    private void loadScript(UnifiedJedis j) {
        if (j instanceof RedisClusterClient cluster) {
            loadScriptOnEveryNode(cluster);
            return;
        }
        countCommands(1);
        String sha = j.scriptLoad(RedisApplyScript.SOURCE);
        if (!RedisApplyScript.SHA1.equals(sha)) {
            throw new IllegalStateException("Redis returned SHA " + sha + " for the rollcount script, expected " + RedisApplyScript.SHA1);
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
            try (Connection c = node.getValue().getResource(); Jedis n = new Jedis(c)) {
                String sha = n.scriptLoad(RedisApplyScript.SOURCE);
                if (!RedisApplyScript.SHA1.equals(sha)) {
                    throw new IllegalStateException("Redis at " + node.getKey() + " returned SHA " + sha + " for the rollcount script, expected " + RedisApplyScript.SHA1);
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
    private Map<String, Response<Long>> waitForReplicas(RedisClusterClient cluster, AbstractPipeline p, List<RedisApplyScript.Call> calls) {
        Map<String, String> sampleKeyByNode = new LinkedHashMap<>();
        for (RedisApplyScript.Call c : calls) {
            if (c.keys.isEmpty()) continue;
            int slot = JedisClusterCRC16.getSlot(c.keys.get(0));
            String node = nodeOfSlot.computeIfAbsent(slot, s -> {
                try (Connection conn = cluster.getConnectionFromSlot(s)) {
                    return conn.getHostAndPort().toString();
                }
            });
            sampleKeyByNode.putIfAbsent(node, new String(c.keys.get(0), java.nio.charset.StandardCharsets.UTF_8));
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
            try (Connection c = ((RedisClusterClient) jedis).getConnectionFromSlot(JedisClusterCRC16.getSlot(sampleKey)); Jedis n = new Jedis(c)) {
                replicas = connectedReplicas(n.info("replication"));
            }
            if (replicas > 0) {
                throw new JedisDataException("NOREPLICAS no replica of " + node + " acknowledged the batch within " + REPLICA_WAIT_MILLIS + " ms");
            }
            LOG.warn("Redis Cluster master {} has no replica: writes to it are not waited for until the writer reconnects", node);
            noReplica.add(node);
        }
    }

    private static int connectedReplicas(String infoReplication) {
        for (String line : infoReplication.split("\\r?\\n")) {
            if (line.startsWith("connected_slaves:")) return Integer.parseInt(line.substring("connected_slaves:".length()).trim());
        }
        return 0;
    }

    private void countCommands(int n) {
        commandsSent.inc(n);
        RedisSink.COMMANDS_SENT.add(n);
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
                if (c instanceof JedisAccessControlException || c instanceof java.security.cert.CertificateException
                        || c instanceof javax.net.ssl.SSLPeerUnverifiedException) {
                    return false;
                }
            }
            return true;
        }
        if (e instanceof JedisDataException) {
            String m = e.getMessage() == null ? "" : e.getMessage();
            return m.startsWith("LOADING") || m.startsWith("BUSY") || m.startsWith("MASTERDOWN")
                    || m.startsWith("TRYAGAIN") || m.startsWith("CLUSTERDOWN") || m.startsWith("READONLY")
                    || m.startsWith("OOM") || m.startsWith("MISCONF") || m.startsWith("NOREPLICAS") || isRedirection(e);
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
        if (e instanceof JedisAccessControlException || e.getCause() instanceof JedisAccessControlException
                || (e.getMessage() != null && (e.getMessage().startsWith("NOPERM") || e.getMessage().startsWith("WRONGPASS")
                        || e.getMessage().startsWith("NOAUTH")))) {
            what = "Redis at " + endpoint + " refused access" + (endpoint.user() != null ? " for user " + endpoint.user() : "")
                    + (call != null ? " to the batch of key " + call.firstKey : "");
        } else if (isRedirection(e)) {
            what = "Redis at " + endpoint + " is a node of a Redis Cluster (it redirected a write): add --redis.cluster and list the cluster's nodes in --redis";
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
                return new RedisSinkException.Unchecked(endpoint.redact(String.valueOf(e.getMessage())) + " (cause removed: it showed the password)");
            }
            if (c.getCause() == c) break;
        }
        return e;
    }
}
