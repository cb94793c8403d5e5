package io.rollcount.bench;

import java.io.IOException;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.params.SetParams;

/**
 * The references' Redis output, the way Jedis's documentation shows bulk writes: each {@link CountWrite}
 * becomes {@code SET key value [PXAT t]} on a pipeline of the subtask's own connection, sent and its replies
 * read every {@link #BATCH} commands and whenever Flink flushes the writer (before each checkpoint barrier
 * and at the end of input). SET is idempotent, so a replay after a restore writes the same values again
 * (at least once); the references make no "never goes backwards" promise.
 */
final class PipelinedSetSink implements Sink<CountWrite> {
    private static final long serialVersionUID = 1L;
    static final int BATCH = 1_000;

    private final String host;
    private final int port;

    PipelinedSetSink(String host, int port) {
        this.host = host;
        this.port = port;
    }

    @Override
    public SinkWriter<CountWrite> createWriter(WriterInitContext context) {
        return new Writer(new Jedis(host, port));
    }

    private static final class Writer implements SinkWriter<CountWrite> {
        private final Jedis jedis;
        private Pipeline pipeline;
        private int pending;

        Writer(Jedis jedis) {
            this.jedis = jedis;
            this.pipeline = jedis.pipelined();
        }

        @Override
        public void write(CountWrite w, Context context) {
            String value = Long.toString(w.value);
            if (w.expireAtMillis > 0)
                pipeline.set(w.key, value, SetParams.setParams().pxAt(w.expireAtMillis));
            else pipeline.set(w.key, value);
            if (++pending >= BATCH) sync();
        }

        @Override
        public void flush(boolean endOfInput) {
            if (pending > 0) sync();
        }

        /** Sends what is pending and reads every reply; a reply that is an error fails the job (no silent drop). */
        private void sync() {
            for (Object reply : pipeline.syncAndReturnAll()) {
                if (reply instanceof RuntimeException e)
                    throw new IllegalStateException("a reference's Redis SET failed: " + e.getMessage(), e);
            }
            pending = 0;
        }

        @Override
        public void close() throws IOException {
            try {
                if (pending > 0) sync();
                pipeline.close();
            } finally {
                jedis.close();
            }
        }
    }
}
