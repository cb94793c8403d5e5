package io.rollcount.job.redis;

import java.io.IOException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.UUID;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.StatefulSinkWriter;
import org.apache.flink.api.connector.sink2.SupportsWriterState;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A Flink Sink (V2) that applies {@link RedisWrite}s to Redis.
 *
 * <h2>Write path</h2>
 * The writer buffers writes and coalesces them per key (see {@code internal.RedisWriteBuffer}); it flushes when
 * {@link Builder#setMaxBufferedKeys} keys are buffered, every {@link Builder#setFlushInterval} of processing
 * time, and before every checkpoint barrier. A flush is one pipeline (in round trips of up to 2,000 writes) of plain
 * commands in the steady state:
 * <ul>
 *   <li>a count: {@code SET key value PXAT t GET} ({@code SET key value GET} for a total), and for a value
 *       that once took a negative delta also {@code SET versionKey version PXAT t GET}; {@code t} is the
 *       window's end plus its retention, the same for every write of the key, so expiry never moves;
 *   <li>unique users: {@code PFADD key user...} of the distinct users since the key's last flush, then
 *       {@code PEXPIREAT key t} for a window's key;
 * </ul>
 * and {@code EVALSHA} of the Lua script {@code apply.lua} (see {@code internal.RedisApplyScript}) for what must compare
 * before it writes: sorted sets (version check), the watermark, and the guarded counts.
 *
 * <h2>Guarantees</h2>
 * <ul>
 *   <li><b>Exactly-once results</b> (effectively once): every write is idempotent (a SET of a value, a
 *       PFADD), and the writer's {@link SinkWriter#flush(boolean) flush}, which Flink calls before every
 *       checkpoint barrier and at the end of input, returns only once every buffered write is in Redis. So a
 *       checkpoint never covers a write (or a user) that Redis has not seen, and after a restart from that
 *       checkpoint the replayed writes converge to the values of a run without failure.
 *   <li><b>Never backwards</b>, guarded only where a replay can reach: each writer raises the mark
 *       {@code P:_mark} (an upper bound of the window starts it writes; it only grows) in a round trip of its
 *       own before the writes it covers. A writer that finds the mark at its start (a restore, a rescale, a
 *       job over keys an earlier job left) writes every total, and every window key whose window starts at
 *       or below the mark, through the script: skipped unless its version is newer than the stored one
 *       (or, for a value that only took positive deltas, unless it is not smaller than the stored value),
 *       until one such write of the key is applied; from then on that key is written plain (the writer
 *       remembers up to {@value io.rollcount.job.redis.internal.MarkGuard#MAX_CONFIRMED_KEYS} such keys; beyond, keys stay guarded).
 *       Windows above the mark were never written before, and a PFADD never shrinks a HyperLogLog.
 *   <li><b>Bounded failure time</b>: connection errors, timeouts and transient server states (LOADING,
 *       BUSY, MASTERDOWN, TRYAGAIN, READONLY, and OOM, MISCONF, NOREPLICAS: a full {@code maxmemory} with
 *       {@code noeviction}, a failed snapshot, missing replicas) are retried with exponential backoff on a
 *       new connection, the whole batch again; the writer throws, failing the job (which then restarts from
 *       its last checkpoint), only once {@link Builder#setRetryTimeout retry timeout} has passed without
 *       success. Refused credentials fail at once, naming the user.
 *   <li><b>Per-key rejections</b>: a write Redis rejects for its key (WRONGTYPE: a key of another type under
 *       the prefix; a value that is not an integer where one is expected) cannot succeed on retry: that key
 *       is reported once (a WARN line naming the key and the error, the metric {@code redisRejected}, the
 *       gauge {@code redisFirstRejected}) and every other key is still written, each pipelined reply on its own. The
 *       watermark a writer publishes stays below the earliest window whose key was rejected, for the
 *       writer's life, so {@code rc:meta:watermark} never says final a window whose value is not in Redis.
 * </ul>
 * Each writer reports what it sent and wrote as Flink metrics of its metric group (see {@link io.rollcount.job.redis.internal.SinkMetrics});
 * local runs read them through {@link io.rollcount.job.metrics.LocalMetrics}.
 *
 * <h2>Redis permissions</h2>
 * The sink sends {@code SET}, {@code GET} (the mark, once per writer; the epoch {@code P:_epoch}, and in a
 * cluster each master's {@code P:_epoch:{n}}, with every batch, see {@link RedisEpoch}), {@code PFADD}, {@code PEXPIREAT}, {@code PFMERGE} and {@code DEL} (a
 * rebuilt sketch, after a loss of Redis's data),
 * {@code EVALSHA}, {@code EVAL} (a server that lost the script), {@code SCRIPT LOAD}, on connecting
 * {@code PING} (plus {@code AUTH}, always allowed, and {@code SELECT} for a database other than 0); the
 * script runs {@code GET}, {@code MGET}, {@code SET}, {@code DEL}, {@code ZADD}, {@code PEXPIREAT} and, for
 * the watermark, {@code HSET}, {@code HLEN}, {@code HVALS}, {@code PEXPIRE}, which the ACL checks too. A
 * least-privilege user for key prefix {@code rc}:
 * <pre>{@code
 * ACL SETUSER rollcount on >PASSWORD ~rc:* resetchannels -@all +set +get +mget +pfadd +pexpireat +pexpire
 *     +evalsha +eval +script|load +ping +del +zadd +hset +hlen +hvals +pfmerge
 * }</pre>
 *
 * <h2>One job per key prefix</h2>
 * The job's sink ({@link #holdingLease}) holds the prefix's lease {@code P:_lease} while it runs (see
 * {@link PrefixGuard}): each writer takes it before its first write and renews it every 5 s; a writer that
 * finds it held by another job's token fails the job without restarts. The token is the writers' state, so
 * a job restored from a checkpoint or savepoint holds the lease of the job it continues. That needs
 * {@code EVAL} as well ({@code +eval}) and writes {@code P:_lease} and {@code P:_job:{P:_lease}}.
 *
 * <h2>Redis Cluster</h2>
 * With a cluster endpoint ({@link RedisEndpoint#cluster()}, {@code --redis.cluster}) each script call writes
 * one counter (one slot); the pipelines go to each slot's master; MOVED/ASK, CLUSTERDOWN, TRYAGAIN and lost
 * connections are retried on a client that reads the topology anew; the script is loaded on every node; and
 * each batch ends with {@code WAIT 1} on every master it wrote to, completing only once a replica has it
 * (a master without a replica is not waited for). That needs {@code +wait}, {@code +info} and
 * {@code +cluster|slots} as well.
 *
 * <p>Create it with {@link #builder()}, whose setters check their values at once and name themselves when they
 * refuse one ({@link InvalidSettingException}); {@code RollcountJob.redisSink} maps the job's options to it:
 * <pre>{@code
 * stream.sinkTo(RedisSink.builder().setUrl("redis://127.0.0.1:6379").setKeyPrefix("rc").build()).name("redis");
 * }</pre>
 */
public final class RedisSink implements Sink<RedisWrite>, SupportsWriterState<RedisWrite, RedisWriterState> {
    private static final long serialVersionUID = 1L;

    public static final int DEFAULT_MAX_BUFFERED_KEYS = 2_000;
    public static final long DEFAULT_MAX_BUFFERED_BYTES = 16L << 20;
    public static final Duration DEFAULT_FLUSH_INTERVAL = Duration.ofMillis(200);
    public static final Duration DEFAULT_RETRY_TIMEOUT = Duration.ofSeconds(60);
    public static final int DEFAULT_MAX_WRITES_PER_CALL = 500;
    /** Counters per script call of the job's sink ({@code RollcountJob.redisSink}): see {@link Builder#setCountersPerCall}. */
    public static final int JOB_COUNTERS_PER_CALL = 64;
    /**
     * Keys the job's sink buffers before it flushes early (it also flushes every 200 ms and at every
     * checkpoint): each flush waits for Redis, so a larger buffer means fewer waits.
     */
    public static final int JOB_MAX_BUFFERED_KEYS = 20_000;

    final RedisEndpoint endpoint;
    final String keyPrefix;
    final int maxBufferedKeys;
    final long maxBufferedBytes;
    final long flushIntervalMillis;
    final long retryTimeoutMillis;
    final long initialBackoffMillis;
    final long maxBackoffMillis;
    final int maxWritesPerCall;
    /** Whether writers publish their watermark to {@code rc:meta:watermark} (the counts' sink does, a second sink does not). */
    final boolean publishesWatermark;
    /** What writers that publish the watermark write to {@code rc:meta:allowed_lateness_ms}; negative: nothing. */
    final long allowedLatenessMillis;

    final int countersPerCall;
    /** Every COUNT and USERS write plain: no guard, no mark (see {@link Builder#setPlainWritesOnly}). */
    final boolean plainWritesOnly;
    /** The token of the prefix's lease this sink's writers hold, or null for none (see {@link #holdingLease}). */
    final String leaseToken;
    /** Whether a writer that restores nothing refuses a prefix an earlier job has written (see {@link #refusingEarlierJob}). */
    final boolean refusesEarlierJob;

    private RedisSink(Builder b) {
        this(b, true, null);
    }

    private RedisSink(Builder b, boolean publishesWatermark, String leaseToken) {
        this.leaseToken = leaseToken;
        this.publishesWatermark = publishesWatermark;
        this.endpoint = b.endpoint;
        this.keyPrefix = b.keyPrefix;
        this.maxBufferedKeys = b.maxBufferedKeys;
        this.maxBufferedBytes = b.maxBufferedBytes;
        this.flushIntervalMillis = b.flushInterval.toMillis();
        this.retryTimeoutMillis = b.retryTimeout.toMillis();
        this.initialBackoffMillis = b.initialBackoff.toMillis();
        this.maxBackoffMillis = b.maxBackoff.toMillis();
        this.maxWritesPerCall = b.maxWritesPerCall;
        // a Redis Cluster serves one slot per script call: one counter's keys
        this.countersPerCall = b.endpoint != null && b.endpoint.cluster() ? 1 : b.countersPerCall;
        this.plainWritesOnly = b.plainWritesOnly;
        this.allowedLatenessMillis = b.allowedLateness == null ? -1 : b.allowedLateness.toMillis();
        this.refusesEarlierJob = b.refusesEarlierJob;
    }

    /**
     * The same sink for a second stream of writes (the sorted sets of top-K and trending lists): its writers
     * leave {@code rc:meta:watermark} to the writers of the counts, so that the watermark a dashboard reads
     * never runs ahead of the window values.
     */
    public RedisSink withoutWatermark() {
        return new RedisSink(copy(), false, null);
    }

    /**
     * The same sink, its writers holding the prefix's lease {@code P:_lease} with {@code token} (or the token
     * restored from their state): a second job on the prefix is refused (see {@link PrefixGuard}).
     */
    public RedisSink holdingLease(String token) {
        if (token == null || token.isBlank()) token = UUID.randomUUID().toString();
        return new RedisSink(copy(), publishesWatermark, token);
    }

    /**
     * The same sink, its lease-holding writers that restore nothing (a job started without a checkpoint or
     * savepoint) refusing a prefix whose job mark {@code P:_job:{P:_lease}} holds another token: an earlier job's
     * counts, which this job's smaller totals would never replace. They fail the job with restarts suppressed,
     * with the line of {@link PrefixGuard#earlierJobRefusal}. A writer of the same job graph (a restart before the
     * first checkpoint) finds its own token there. The job's check of an application cluster, where main runs
     * again at every JobManager start and leaves the prefix to the writers.
     */
    public RedisSink refusingEarlierJob() {
        Builder b = copy();
        b.refusesEarlierJob = true;
        return new RedisSink(b, publishesWatermark, leaseToken);
    }

    /** The lease token of this sink's writers, or null. */
    public String leaseToken() {
        return leaseToken;
    }

    private Builder copy() {
        Builder b = new Builder();
        b.endpoint = endpoint;
        b.keyPrefix = keyPrefix;
        b.maxBufferedKeys = maxBufferedKeys;
        b.maxBufferedBytes = maxBufferedBytes;
        b.flushInterval = Duration.ofMillis(flushIntervalMillis);
        b.retryTimeout = Duration.ofMillis(retryTimeoutMillis);
        b.initialBackoff = Duration.ofMillis(initialBackoffMillis);
        b.maxBackoff = Duration.ofMillis(maxBackoffMillis);
        b.maxWritesPerCall = maxWritesPerCall;
        b.countersPerCall = countersPerCall;
        b.plainWritesOnly = plainWritesOnly;
        b.allowedLateness = allowedLatenessMillis < 0 ? null : Duration.ofMillis(allowedLatenessMillis);
        b.refusesEarlierJob = refusesEarlierJob;
        return b;
    }

    public static Builder builder() {
        return new Builder();
    }

    @Override
    public StatefulSinkWriter<RedisWrite, RedisWriterState> createWriter(WriterInitContext context) throws IOException {
        return new RedisSinkWriter(this, context, leaseToken, false, List.of());
    }

    /**
     * A restored writer holds the lease with the token of the job it continues, and keeps the rejections of
     * the run it is restored from (see {@link RedisWriterState}).
     */
    @Override
    public StatefulSinkWriter<RedisWrite, RedisWriterState> restoreWriter(
            WriterInitContext context, Collection<RedisWriterState> recoveredState) throws IOException {
        String token = leaseToken;
        if (token != null) {
            for (RedisWriterState state : recoveredState) {
                if (state.leaseToken != null && !state.leaseToken.isEmpty()) {
                    token = state.leaseToken;
                    break;
                }
            }
        }
        return new RedisSinkWriter(this, context, token, true, recoveredState);
    }

    @Override
    public SimpleVersionedSerializer<RedisWriterState> getWriterStateSerializer() {
        return new RedisWriterState.Serializer();
    }

    public RedisEndpoint endpoint() {
        return endpoint;
    }

    @Override
    public String toString() {
        return "RedisSink{" + endpoint + ", prefix=" + keyPrefix + "}";
    }

    /**
     * Builds a {@link RedisSink}. Each setter checks its value at once and names itself when it refuses one
     * ({@link InvalidSettingException}, e.g. {@code RedisSink.builder().setFlushInterval: must be at least 1 ms,
     * got 0 ms}); {@link #build()} refuses a sink without {@link #setEndpoint endpoint}.
     */
    public static final class Builder {
        static final String NAME = "RedisSink.builder()";

        private RedisEndpoint endpoint;
        private String keyPrefix = "rc";
        private int maxBufferedKeys = DEFAULT_MAX_BUFFERED_KEYS;
        private long maxBufferedBytes = DEFAULT_MAX_BUFFERED_BYTES;
        private Duration flushInterval = DEFAULT_FLUSH_INTERVAL;
        private Duration retryTimeout = DEFAULT_RETRY_TIMEOUT;
        private Duration initialBackoff = Duration.ofMillis(50);
        private Duration maxBackoff = Duration.ofSeconds(5);
        private int maxWritesPerCall = DEFAULT_MAX_WRITES_PER_CALL;
        private int countersPerCall = 1;
        private boolean plainWritesOnly;
        private Duration allowedLateness;
        private boolean refusesEarlierJob;

        private Builder() {}

        private static InvalidSettingException invalid(String setter, String problem) {
            return new InvalidSettingException(NAME, setter, problem);
        }

        private static String millis(Duration d) {
            return d == null ? "none" : d.toMillis() + " ms";
        }

        /** Where to write (required). */
        public Builder setEndpoint(RedisEndpoint endpoint) {
            if (endpoint == null) throw invalid("setEndpoint", "the Redis endpoint must be set");
            this.endpoint = endpoint;
            return this;
        }

        /** Shorthand for {@code setEndpoint(RedisEndpoint.parse(url))}; the URL's errors name {@code RedisEndpoint.builder().setUrl}. */
        public Builder setUrl(String url) {
            return setEndpoint(RedisEndpoint.parse(url));
        }

        /**
         * The key prefix (default {@code rc}; the rule of {@link RedisKeys#validPrefix}): scratch keys go under
         * {@code P:_} or {@code P:{C}:_}.
         */
        public Builder setKeyPrefix(String keyPrefix) {
            if (!RedisKeys.validPrefix(keyPrefix)) {
                throw invalid(
                        "setKeyPrefix",
                        RedisKeys.PREFIX_RULE + ", got " + (keyPrefix == null ? "none" : "'" + keyPrefix + "'"));
            }
            this.keyPrefix = keyPrefix;
            return this;
        }

        /** Flush once this many distinct keys are buffered (default 2,000); at least 1. */
        public Builder setMaxBufferedKeys(int maxBufferedKeys) {
            if (maxBufferedKeys < 1) throw invalid("setMaxBufferedKeys", "must be at least 1, got " + maxBufferedKeys);
            this.maxBufferedKeys = maxBufferedKeys;
            return this;
        }

        /** Flush once users and sorted sets of about this many bytes are buffered (default 16 MiB); at least 1. */
        public Builder setMaxBufferedBytes(long maxBufferedBytes) {
            if (maxBufferedBytes < 1)
                throw invalid("setMaxBufferedBytes", "must be at least 1 byte, got " + maxBufferedBytes);
            this.maxBufferedBytes = maxBufferedBytes;
            return this;
        }

        /** Flush at least this often in processing time while writes are buffered (default 200 ms); at least 1 ms. */
        public Builder setFlushInterval(Duration flushInterval) {
            if (flushInterval == null || flushInterval.toMillis() < 1) {
                throw invalid("setFlushInterval", "must be at least 1 ms, got " + millis(flushInterval));
            }
            this.flushInterval = flushInterval;
            return this;
        }

        /** How long failing Redis calls are retried before the writer fails the job (default 60 s); not negative. */
        public Builder setRetryTimeout(Duration retryTimeout) {
            if (retryTimeout == null || retryTimeout.isNegative()) {
                throw invalid("setRetryTimeout", "must not be negative, got " + millis(retryTimeout));
            }
            this.retryTimeout = retryTimeout;
            return this;
        }

        /** First and largest pause between retries (default 50 ms doubling up to 5 s): initial at least 1 ms, max not below it. */
        public Builder setBackoff(Duration initial, Duration max) {
            if (initial == null || initial.toMillis() < 1) {
                throw invalid("setBackoff", "the initial pause must be at least 1 ms, got " + millis(initial));
            }
            if (max == null || max.compareTo(initial) < 0) {
                throw invalid(
                        "setBackoff",
                        "the largest pause must not be below the initial " + millis(initial) + ", got " + millis(max));
            }
            this.initialBackoff = initial;
            this.maxBackoff = max;
            return this;
        }

        /** At most this many writes per script call, so that no one call blocks Redis for long (default 500); at least 1. */
        public Builder setMaxWritesPerCall(int maxWritesPerCall) {
            if (maxWritesPerCall < 1)
                throw invalid("setMaxWritesPerCall", "must be at least 1, got " + maxWritesPerCall);
            this.maxWritesPerCall = maxWritesPerCall;
            return this;
        }

        /**
         * Pack the script writes (guarded counts, sorted sets) of up to this many counters into one script
         * call (default 1; at least 1). On a single Redis server, where a script may touch keys of any slot,
         * packing cuts the commands per flush by about that factor; in Redis Cluster each call holds one counter,
         * whatever this says. Each counter's script writes stay atomic together. The job's sink
         * ({@code RollcountJob.redisSink}) packs {@value #JOB_COUNTERS_PER_CALL}.
         */
        public Builder setCountersPerCall(int countersPerCall) {
            if (countersPerCall < 1) throw invalid("setCountersPerCall", "must be at least 1, got " + countersPerCall);
            this.countersPerCall = countersPerCall;
            return this;
        }

        /**
         * For measuring the floor of Redis's cost only (the benchmark's {@code redis_floor_us_per_event}): every
         * COUNT and USERS write as a plain command, with no guard, no mark and no version compare, so a
         * replay after a restore may lower a value. Sorted sets and the watermark go through the script as
         * usual. Default false; never for a job whose values anyone reads.
         */
        public Builder setPlainWritesOnly(boolean plainWritesOnly) {
            this.plainWritesOnly = plainWritesOnly;
            return this;
        }

        /**
         * The job's allowed lateness, which the writers that publish {@code rc:meta:watermark} also write to
         * {@code rc:meta:allowed_lateness_ms} (at their first watermark, and again after a loss of Redis's data),
         * so that a reader can tell a final window from one a late event may still change. Default: not written.
         */
        public Builder setAllowedLateness(Duration allowedLateness) {
            if (allowedLateness == null || allowedLateness.isNegative())
                throw invalid("setAllowedLateness", "must not be negative, got " + allowedLateness);
            this.allowedLateness = allowedLateness;
            return this;
        }

        public RedisSink build() {
            if (endpoint == null) throw invalid("setEndpoint", "the Redis endpoint must be set");
            return new RedisSink(this);
        }
    }
}
