package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisEndpoint;
import io.rollcount.job.redis.RedisKeys;
import io.rollcount.job.redis.RedisSinkException;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.util.IoThreadOnly;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.params.SetParams;

/**
 * One attempt at a batch of writes, on the writer's I/O thread: the {@link WriteGuard} first, then every write
 * once, pipelined (in round trips of {@value #PIPELINE_SLICE} writes): plain commands ({@code SET ... PXAT ...
 * GET}, {@code PFADD}, {@code PEXPIREAT}, a staged {@code PFMERGE}) for the writes no replay can reach and for
 * the users, {@code EVALSHA} of {@link RedisApplyScript} for guarded counts, sorted sets and MAX, grouped per
 * counter (several counters per call on a single server, one in Redis Cluster, where a call must touch one slot).
 *
 * <p>Each reply is read on its own: a transient error fails the attempt (the whole batch is retried: every
 * write is idempotent), an error of one key rejects that key ({@link Rejections}), refused access fails the
 * batch, and {@code NOSCRIPT} sends that call again as {@code EVAL} of the source. The first round trip checks
 * the epoch keys ({@link EpochWatch}); in a cluster each ends with {@link ReplicaWait}. A loss of Redis's data is
 * logged once, counted, and handed to the {@link LossHandler} once the batch is written.
 */
public final class BatchPipeline implements CallSender {
    private static final Logger LOG = LoggerFactory.getLogger(BatchPipeline.class);
    /** Writes per pipeline round trip. */
    static final int PIPELINE_SLICE = 2_000;

    private static final SetParams NO_EXPIRY = SetParams.setParams();

    /** What makes the writer's view of Redis true again after Redis lost the job's data (I/O thread). */
    @FunctionalInterface
    public interface LossHandler {
        void dataLost(CallSender send) throws RedisSinkException;
    }

    private final RetryingConnection connection;
    private final RedisEndpoint endpoint;
    private final String keyPrefix;
    private final int countersPerCall;
    private final int maxWritesPerCall;
    private final WriteGuard guard;
    private final EpochWatch epochs;
    private final ReplicaWait replicas;
    private final Rejections rejections;
    private final SinkMetrics metrics;
    private final LossHandler lossHandler;

    /** Whether a round trip of the attempt found an epoch key gone or changed. */
    @IoThreadOnly
    private boolean epochChanged;

    public BatchPipeline(
            RetryingConnection connection,
            String keyPrefix,
            int countersPerCall,
            int maxWritesPerCall,
            WriteGuard guard,
            EpochWatch epochs,
            ReplicaWait replicas,
            Rejections rejections,
            SinkMetrics metrics,
            LossHandler lossHandler) {
        this.connection = connection;
        this.endpoint = connection.endpoint();
        this.keyPrefix = keyPrefix;
        this.countersPerCall = endpoint.cluster() ? 1 : countersPerCall;
        this.maxWritesPerCall = maxWritesPerCall;
        this.guard = guard;
        this.epochs = epochs;
        this.replicas = replicas;
        this.rejections = rejections;
        this.metrics = metrics;
        this.lossHandler = lossHandler;
    }

    /** One attempt at the writes (see the class); throws a transient failure for the caller to retry. */
    @IoThreadOnly
    public void write(List<RedisWrite> writes) throws RedisSinkException {
        UnifiedJedis j = connection.get();
        guard.beforeWrites(writes, this);
        List<Object> units = new ArrayList<>(writes.size());
        Map<String, List<RedisWrite>> scripted = new LinkedHashMap<>();
        List<RedisWrite> maxes = new ArrayList<>();
        long guardedCounts = 0;
        long plain = 0;
        for (RedisWrite w : writes) {
            switch (w.kind) {
                case RedisWrite.COUNT -> {
                    if (guard.guarded(w)) {
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
        metrics.writesGuarded.inc(guardedCounts);
        metrics.writesPlain.inc(plain);
    }

    /** Script calls alone, pipelined, in a round trip of their own (the watermark, the mark). */
    @Override
    @IoThreadOnly
    public void send(List<RedisApplyScript.Call> calls) throws RedisSinkException {
        sendUnits(connection.get(), new ArrayList<>(calls), false);
    }

    /**
     * The script calls of the groups: one group per call in Redis Cluster, else up to countersPerCall groups
     * (and maxWritesPerCall writes) per call.
     */
    private List<RedisApplyScript.Call> pack(Collection<List<RedisWrite>> groups) {
        List<RedisApplyScript.Call> calls = new ArrayList<>();
        RedisApplyScript.Call c = null;
        int inCall = 0;
        for (List<RedisWrite> g : groups) {
            if (c != null && (inCall >= countersPerCall || c.size() + g.size() > maxWritesPerCall)) c = null;
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
     * Redis lost the job's data (an epoch key, present at this writer's first connection, is gone or another):
     * said once in one line, counted ({@code redisDataLost}), the epoch created anew, and the rest left to the
     * {@link LossHandler}. The rebuild itself comes from the operators that hold the values.
     */
    private void dataLost(UnifiedJedis j) throws RedisSinkException {
        metrics.dataLost.inc();
        List<String> lostKeys = epochs.renewLost(j);
        LOG.warn(
                "Redis at {} lost the data under key prefix '{}' ({} gone or changed): the job rebuilds it from its state and from counter-rollups"
                        + " (see 'If Redis loses data' in the README)",
                endpoint,
                keyPrefix,
                String.join(", ", lostKeys));
        lossHandler.dataLost(this);
    }

    /** One round trip's commands and where each unit's replies begin. */
    private static final class Sent {
        final List<Response<?>> responses;
        final List<String> keysOf;
        final int[] firstResponse;
        Map<String, Response<String>> epochs = Map.of();
        Map<String, Response<Long>> replicated = Map.of();

        Sent(int units) {
            responses = new ArrayList<>(units + 8);
            keysOf = new ArrayList<>(units + 8);
            firstResponse = new int[units + 1];
        }

        void add(Response<?> r, String key) {
            responses.add(r);
            keysOf.add(key);
        }
    }

    /** One pipeline of plain writes ({@link RedisWrite}) and script calls, then their replies one by one. */
    private void sendUnits(UnifiedJedis j, List<Object> units, boolean checkEpoch) throws RedisSinkException {
        Sent sent = new Sent(units.size());
        try (AbstractPipeline p = j.pipelined()) {
            // the loss check: one GET per epoch key (one per master in a cluster) ahead of the writes, in the
            // same round trip
            if (checkEpoch) sent.epochs = epochs.queue(p);
            for (int u = 0; u < units.size(); u++) {
                sent.firstResponse[u] = sent.responses.size();
                if (units.get(u) instanceof RedisApplyScript.Call c) {
                    sent.add(RedisApplyScript.SCRIPT.evalsha(p, c), c.firstKey);
                } else {
                    queuePlain(p, (RedisWrite) units.get(u), sent);
                }
            }
            sent.firstResponse[units.size()] = sent.responses.size();
            metrics.commands(sent.responses.size() + sent.epochs.size());
            sent.replicated = replicas.queue(j, p, sent.keysOf);
            p.sync();
        }
        replicas.check(j, sent.replicated);
        if (epochs.check(sent.epochs)) epochChanged = true;
        readReplies(j, units, sent);
    }

    /** The plain commands of a write. */
    private static void queuePlain(AbstractPipeline p, RedisWrite w, Sent sent) {
        if (w.kind == RedisWrite.SKETCH) {
            // PFMERGE takes keys: the sketch is staged in a key of the counter's (same slot), merged, dropped
            String staging = RedisKeys.stagingKeyOf(w.key);
            sent.add(
                    p.set(
                            staging.getBytes(StandardCharsets.UTF_8),
                            w.sketch,
                            SetParams.setParams().px(60_000)),
                    staging);
            sent.add(p.pfmerge(w.key, w.key, staging), w.key);
            sent.add(p.del(staging), staging);
            if (w.expireAtMillis > 0) sent.add(p.pexpireAt(w.key, w.expireAtMillis), w.key);
        } else if (w.kind == RedisWrite.USERS) {
            sent.add(p.pfadd(w.key, w.users), w.key);
            if (w.expireAtMillis > 0) sent.add(p.pexpireAt(w.key, w.expireAtMillis), w.key);
        } else {
            SetParams at = w.expireAtMillis > 0 ? SetParams.setParams().pxAt(w.expireAtMillis) : NO_EXPIRY;
            // SET ... GET: Redis refuses it on a key of another type (WRONGTYPE) instead of replacing it
            sent.add(p.setGet(w.key, Long.toString(w.value), at), w.key);
            String versionKey = w.monotone ? null : w.versionKey();
            if (versionKey != null) {
                sent.add(p.setGet(versionKey, Long.toString(w.version), at), versionKey);
            }
        }
    }

    /**
     * The replies of a round trip: a transient error fails the attempt, an error of one key rejects that key,
     * NOSCRIPT sends that call again as {@code EVAL} of the source.
     */
    private void readReplies(UnifiedJedis j, List<Object> units, Sent sent) throws RedisSinkException {
        long[] counts = new long[2]; // applied, skipped
        List<RedisApplyScript.Call> noScript = new ArrayList<>();
        for (int u = 0; u < units.size(); u++) {
            if (units.get(u) instanceof RedisApplyScript.Call c) {
                Object result;
                try {
                    result = sent.responses.get(sent.firstResponse[u]).get();
                } catch (JedisDataException e) {
                    if (RedisErrors.isNoScript(e)) {
                        noScript.add(c);
                        continue;
                    }
                    throw failed(e, c);
                }
                scriptResult(c, result, counts);
            } else if (plainReplies(sent, u)) {
                counts[0]++;
            }
        }
        if (!noScript.isEmpty()) {
            // a server that lost the script (a restart, SCRIPT FLUSH, a cluster node that never saw SCRIPT LOAD):
            // EVAL of the source runs the call and caches the script there
            metrics.commands(noScript.size());
            List<Response<Object>> evals = RedisApplyScript.SCRIPT.evalAgain(j, noScript);
            for (int i = 0; i < noScript.size(); i++) {
                Object result;
                try {
                    result = evals.get(i).get();
                } catch (JedisDataException e) {
                    throw failed(e, noScript.get(i));
                }
                scriptResult(noScript.get(i), result, counts);
            }
        }
        metrics.keysWritten.inc(counts[0]);
        metrics.writesStale.inc(counts[1]);
    }

    /** The error of a script call: rethrown if transient, else the batch's failure naming the call. */
    private JedisDataException failed(JedisDataException e, RedisApplyScript.Call c) throws RedisSinkException {
        if (RedisErrors.isTransient(e)) throw e;
        throw RedisErrors.permanent(e, c.firstKey, endpoint);
    }

    /** Reads the replies of unit {@code u}, a plain write; returns whether none was rejected. */
    private boolean plainReplies(Sent sent, int u) throws RedisSinkException {
        boolean ok = true;
        for (int r = sent.firstResponse[u]; r < sent.firstResponse[u + 1]; r++) {
            try {
                sent.responses.get(r).get();
            } catch (JedisDataException e) {
                if (RedisErrors.isTransient(e)) throw e;
                if (RedisErrors.isAccessError(e)) throw RedisErrors.permanent(e, null, endpoint);
                rejections.rejected(sent.keysOf.get(r), e.getMessage() == null ? "error" : e.getMessage());
                ok = false;
            }
        }
        return ok;
    }

    /**
     * A script call's reply: reports the rejected keys, and tells the guard of each COUNT that was applied
     * (Redis was not ahead). Adds the call's applied and skipped writes to {@code counts}.
     */
    private void scriptResult(RedisApplyScript.Call c, Object result, long[] counts) {
        RedisScript.ApplyReply reply = RedisScript.ApplyReply.decode(result, c.firstKey, endpoint);
        String status = reply.status();
        for (int i = 0; i < status.length() && i < c.writes.size(); i++) {
            RedisWrite w = c.writes.get(i);
            if (status.charAt(i) == 'a' && w.kind == RedisWrite.COUNT) guard.applied(w);
        }
        List<String> rejected = reply.rejected();
        for (int r = 0; r + 1 < rejected.size(); r += 2) rejections.rejected(rejected.get(r), rejected.get(r + 1));
        counts[0] += reply.applied();
        counts[1] += reply.skipped();
    }
}
