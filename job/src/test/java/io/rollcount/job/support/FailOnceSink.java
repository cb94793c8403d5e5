package io.rollcount.job.support;

import java.io.IOException;
import java.io.Serializable;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;

/**
 * A real sink whose writer throws once, from {@code write}, once {@code afterWrites} writes its
 * {@link Trigger} counts have passed and the trigger fires: the fixture of the tests that make a job fail
 * mid-stream and restart from a checkpoint. The MiniCluster runs in the test's JVM, so a trigger keeps its
 * "once" (and whatever arms it: completed checkpoints, a gate) in the test's static state.
 */
public final class FailOnceSink<T> implements Sink<T> {
    private static final long serialVersionUID = 1L;

    /** When the writer fails: serializable, as it travels with the job graph. */
    public interface Trigger<T> extends Serializable {
        /** Whether {@code write} counts toward {@code afterWrites} (e.g. only once a gate is open, only counts). */
        boolean counts(T write);

        /** True exactly once: the failure is thrown now (e.g. after two completed checkpoints). */
        boolean fire();

        /** The failure to throw after {@code writes} counted writes: an IOException or a RuntimeException. */
        Exception failure(long writes);

        /** Called after each flush of the real writer ({@code endOfInput} false: a checkpoint is being taken). */
        default void flushed(boolean endOfInput) {}
    }

    private final Sink<T> delegate;
    private final long afterWrites;
    private final Trigger<T> trigger;

    public FailOnceSink(Sink<T> delegate, long afterWrites, Trigger<T> trigger) {
        this.delegate = delegate;
        this.afterWrites = afterWrites;
        this.trigger = trigger;
    }

    @Override
    public SinkWriter<T> createWriter(WriterInitContext context) throws IOException {
        return new ForwardingSinkWriter<>(delegate.createWriter(context)) {
            long counted;

            @Override
            public void write(T element, Context ctx) throws IOException, InterruptedException {
                super.write(element, ctx);
                if (trigger.counts(element) && ++counted >= afterWrites && trigger.fire()) {
                    Exception e = trigger.failure(counted);
                    if (e instanceof IOException io) throw io;
                    if (e instanceof RuntimeException r) throw r;
                    throw new IOException(e);
                }
            }

            @Override
            public void flush(boolean endOfInput) throws IOException, InterruptedException {
                super.flush(endOfInput);
                trigger.flushed(endOfInput);
            }
        };
    }
}
