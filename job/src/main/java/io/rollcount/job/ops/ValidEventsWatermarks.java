package io.rollcount.job.ops;

import io.rollcount.job.model.Event;
import java.time.Duration;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;

/**
 * Bounded out-of-orderness watermarks over valid events only: a dead letter (say, a record a year in the
 * future) must not push the watermark and make every other event late. Used in {@code env.fromSource}
 * so that Kafka partitions get their own watermarks, and with idleness so a quiet partition does not
 * stall the job.
 */
public final class ValidEventsWatermarks implements WatermarkGenerator<Event> {
    private final long outOfOrdernessMillis;
    private long maxTimestamp;

    public ValidEventsWatermarks(Duration outOfOrderness) {
        this.outOfOrdernessMillis = outOfOrderness.toMillis();
        this.maxTimestamp = Long.MIN_VALUE + outOfOrdernessMillis + 1;
    }

    public static WatermarkStrategy<Event> strategy(Duration outOfOrderness, Duration idleTimeout) {
        WatermarkStrategy<Event> s = WatermarkStrategy.<Event>forGenerator(ctx -> new ValidEventsWatermarks(outOfOrderness))
                .withTimestampAssigner((e, recordTs) -> e.isDeadLetter() ? (recordTs > 0 ? recordTs : e.ts) : e.ts);
        return idleTimeout.isZero() ? s : s.withIdleness(idleTimeout);
    }

    @Override
    public void onEvent(Event event, long eventTimestamp, WatermarkOutput output) {
        if (!event.isDeadLetter()) maxTimestamp = Math.max(maxTimestamp, eventTimestamp);
    }

    @Override
    public void onPeriodicEmit(WatermarkOutput output) {
        output.emitWatermark(new Watermark(maxTimestamp - outOfOrdernessMillis - 1));
    }
}
