package io.rollcount.job.support;

import java.io.IOException;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.sink2.SinkWriter;

/**
 * A sink writer that forwards every call to the real one, for tests that wrap a real sink to inject a
 * failure or slow it down: override what the test needs and call {@code super}.
 */
public class ForwardingSinkWriter<T> implements SinkWriter<T> {
    protected final SinkWriter<T> delegate;

    public ForwardingSinkWriter(SinkWriter<T> delegate) {
        this.delegate = delegate;
    }

    @Override
    public void write(T element, Context context) throws IOException, InterruptedException {
        delegate.write(element, context);
    }

    @Override
    public void writeWatermark(Watermark watermark) throws IOException, InterruptedException {
        delegate.writeWatermark(watermark);
    }

    @Override
    public void flush(boolean endOfInput) throws IOException, InterruptedException {
        delegate.flush(endOfInput);
    }

    @Override
    public void close() throws Exception {
        delegate.close();
    }
}
