package io.rollcount.job.util;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.source.SourceOutput;

/**
 * A {@link SourceOutput} that passes every record, watermark and idleness mark on to another, and shows each
 * record to {@link #onRecord} first: the base of source wrappers that watch what a reader emits.
 */
public abstract class ForwardingSourceOutput<T> implements SourceOutput<T> {
    protected final SourceOutput<T> out;

    protected ForwardingSourceOutput(SourceOutput<T> out) {
        this.out = out;
    }

    /** Called with each record before it is passed on. */
    protected abstract void onRecord(T record);

    @Override
    public void collect(T record) {
        onRecord(record);
        out.collect(record);
    }

    @Override
    public void collect(T record, long timestamp) {
        onRecord(record);
        out.collect(record, timestamp);
    }

    @Override
    public void emitWatermark(Watermark watermark) {
        out.emitWatermark(watermark);
    }

    @Override
    public void markIdle() {
        out.markIdle();
    }

    @Override
    public void markActive() {
        out.markActive();
    }
}
