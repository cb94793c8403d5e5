package io.rollcount.job.redis.internal;

import io.rollcount.job.redis.RedisSinkException;
import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.util.IoThreadOnly;
import java.io.IOException;
import java.util.List;

/**
 * Publishes a writer's watermark to {@code rc:meta:watermark} (the minimum over all writers, see
 * {@link RedisApplyScript#watermark}) after the writes before it are in Redis, in a round trip of its own, held
 * below the earliest window Redis rejected a key of ({@link Rejections}). The counts' sink publishes; a second
 * sink (top-K and trending lists) uses {@link #NONE}, so that the watermark never runs ahead of the window values.
 */
public class WatermarkPublisher {
    /** Publishes nothing. */
    public static final WatermarkPublisher NONE = new WatermarkPublisher();

    private WatermarkPublisher() {}

    /** Whether the writer hands watermarks over at all. */
    public boolean publishes() {
        return false;
    }

    /** Writes {@code wm} (held as above) if it moved: called by the I/O thread after the writes before it. */
    @IoThreadOnly
    public void publish(long wm) throws IOException, InterruptedException {}

    /** After a loss of Redis's data: the last watermark written, and the allowed lateness, written again. */
    @IoThreadOnly
    public void dataLost(CallSender send) throws RedisSinkException {}

    /** The publisher of writer {@code subtask} of {@code parallelism}, for the counts' sink. */
    public static final class Publishing extends WatermarkPublisher {
        private final String perWriterKey;
        private final String watermarkKey;
        /** {@code P:meta:allowed_lateness_ms}, written with the first watermark and again after a loss. */
        private final String latenessKey;
        /** Negative: nothing written to {@link #latenessKey}. */
        private final long allowedLatenessMillis;

        private final int subtask;
        private final int parallelism;
        private final Rejections rejections;
        private final RetryingConnection connection;
        private final CallSender send;
        /** The last watermark written to Redis. */
        @IoThreadOnly
        private long written = Long.MIN_VALUE;
        /** Whether the lateness was written since this writer started or Redis last lost its data. */
        @IoThreadOnly
        private boolean latenessWritten;

        public Publishing(
                String perWriterKey,
                String watermarkKey,
                String latenessKey,
                long allowedLatenessMillis,
                int subtask,
                int parallelism,
                Rejections rejections,
                RetryingConnection connection,
                CallSender send) {
            this.perWriterKey = perWriterKey;
            this.watermarkKey = watermarkKey;
            this.latenessKey = latenessKey;
            this.allowedLatenessMillis = allowedLatenessMillis;
            this.subtask = subtask;
            this.parallelism = parallelism;
            this.rejections = rejections;
            this.connection = connection;
            this.send = send;
        }

        @Override
        public boolean publishes() {
            return true;
        }

        @Override
        public void publish(long wm) throws IOException, InterruptedException {
            long effective = Math.min(wm, rejections.heldWatermark());
            if (effective <= written || effective < 0) return;
            List<RedisApplyScript.Call> calls = withLateness(call(effective));
            connection.retrying(() -> send.send(calls));
            written = effective;
        }

        @Override
        public void dataLost(CallSender send) throws RedisSinkException {
            long wm = written;
            written = Long.MIN_VALUE;
            if (wm == Long.MIN_VALUE) return;
            latenessWritten = false;
            send.send(withLateness(call(wm)));
            written = wm;
        }

        private RedisApplyScript.Call call(long wm) {
            return RedisApplyScript.watermark(perWriterKey, watermarkKey, subtask, parallelism, wm);
        }

        /**
         * The watermark's call, and where the allowed lateness is not written yet a call that writes it (a call
         * of its own: in a Redis Cluster its key is in another slot).
         */
        private List<RedisApplyScript.Call> withLateness(RedisApplyScript.Call watermark) {
            if (latenessWritten || allowedLatenessMillis < 0) return List.of(watermark);
            latenessWritten = true;
            RedisApplyScript.Call lateness = new RedisApplyScript.Call();
            lateness.add(RedisWrite.count(latenessKey, null, allowedLatenessMillis, 0, false, RedisWrite.NO_WINDOW, 0));
            return List.of(watermark, lateness);
        }
    }
}
