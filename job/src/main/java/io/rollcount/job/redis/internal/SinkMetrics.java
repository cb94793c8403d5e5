package io.rollcount.job.redis.internal;

import io.rollcount.job.metrics.RollcountMetrics;
import java.util.concurrent.Future;
import java.util.function.Supplier;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Histogram;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;

/**
 * The metrics of a Redis sink writer, on its metric group: {@code redisCommandsSent}, {@code redisKeysWritten},
 * {@code redisWritesStale} (skipped by the guard: Redis was ahead), {@code redisWritesGuarded} (counts sent
 * through the script), {@code redisWritesPlain} (counts and users sent as plain commands),
 * {@code redisWritesCoalesced} (absorbed in the buffer by a newer write of the same key), {@code redisRetries},
 * {@code redisFlushes}, {@code redisRejected} (distinct keys rejected for good), {@code redisDataLost}, gauges
 * {@code redisLastFlushMillis} and {@code redisFirstRejected}; Flink's standard {@code numRecordsSend} (writes
 * sent after coalescing), {@code numRecordsSendErrors} and {@code currentSendTime}; and the rollcount group's.
 *
 * <p>Counters are thread-safe enough for metrics (Flink reads them from its reporter thread); the I/O thread
 * counts most of them, the mailbox thread {@link #writesCoalesced}. The {@code volatile} fields are written by
 * the I/O thread and read by the others.
 */
public final class SinkMetrics {
    public final Counter commandsSent = new SimpleCounter();
    public final Counter keysWritten = new SimpleCounter();
    public final Counter writesStale = new SimpleCounter();
    public final Counter writesCoalesced = new SimpleCounter();
    public final Counter retries = new SimpleCounter();
    public final Counter flushes = new SimpleCounter();
    /** Distinct keys Redis rejected for good (each is logged once). */
    public final Counter keysRejected = new SimpleCounter();
    /** COUNT writes sent through the script, guarded because a replay may have reached their keys. */
    public final Counter writesGuarded = new SimpleCounter();
    /** COUNT and USERS writes sent as plain commands. */
    public final Counter writesPlain = new SimpleCounter();
    /** Losses of Redis's data this writer saw (each logged once). */
    public final Counter dataLost = new SimpleCounter();
    /** Keys that left the guard (one guarded write applied: Redis was not ahead). */
    public final Counter keysConfirmed = new SimpleCounter();
    /** The first key Redis rejected for good, with its error, or null: a run's summary names it. */
    public volatile String firstRejected;
    /** Writes of the batch in flight (the rollcount group's redisWritesInFlight while it runs). */
    public volatile int inFlightWrites;

    private volatile long lastFlushMillis;
    private final Counter recordsSend;
    private final Counter sendErrors;
    private final Histogram writeLatency;

    /** Registers the metrics on {@code metrics}; {@code inFlight} gives the batch in flight, or null. */
    public SinkMetrics(SinkWriterMetricGroup metrics, Supplier<Future<?>> inFlight) {
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
        RollcountMetrics.redisWritesInFlight(metrics, inFlight, () -> inFlightWrites);
        this.recordsSend = metrics.getNumRecordsSendCounter();
        this.sendErrors = metrics.getNumRecordsSendErrorsCounter();
    }

    /** Counts {@code n} commands sent. */
    public void commands(int n) {
        commandsSent.inc(n);
    }

    /** A batch of {@code writes} is in Redis after {@code millis} ms (I/O thread). */
    public void batchDone(int writes, long millis) {
        recordsSend.inc(writes);
        flushes.inc();
        lastFlushMillis = millis;
        writeLatency.update(millis);
    }

    /** A batch of {@code writes} failed (I/O thread). */
    public void batchFailed(int writes) {
        sendErrors.inc(writes);
    }
}
