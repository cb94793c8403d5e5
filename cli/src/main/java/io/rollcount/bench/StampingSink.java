package io.rollcount.bench;

import java.io.IOException;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/**
 * A sink that tells {@link BenchClock} when each of its subtasks has flushed the end of its input: the
 * moment every result is out, before the final checkpoint a bounded job waits for. Wraps a real sink
 * (Rollcount's Redis sink) or, with none, discards (the references' results).
 */
final class StampingSink<T> implements Sink<T> {
    private static final long serialVersionUID = 1L;
    private final Sink<T> delegate;

    StampingSink(Sink<T> delegate) {
        this.delegate = delegate;
    }

    @Override
    public SinkWriter<T> createWriter(WriterInitContext context) throws IOException {
        SinkWriter<T> inner = delegate == null ? null : delegate.createWriter(context);
        return new SinkWriter<>() {
            @Override
            public void write(T element, Context ctx) throws IOException, InterruptedException {
                if (inner != null) inner.write(element, ctx);
            }

            @Override
            public void writeWatermark(Watermark watermark) throws IOException, InterruptedException {
                if (inner != null) inner.writeWatermark(watermark);
            }

            @Override
            public void flush(boolean endOfInput) throws IOException, InterruptedException {
                if (inner != null) inner.flush(endOfInput);
                if (endOfInput) BenchClock.ended();
            }

            @Override
            public void close() throws Exception {
                if (inner != null) inner.close();
            }
        };
    }
}
