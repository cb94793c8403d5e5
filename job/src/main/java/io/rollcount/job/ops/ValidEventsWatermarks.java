package io.rollcount.job.ops;

import io.rollcount.job.model.Event;
import io.rollcount.job.model.RecentEventTimes;
import java.time.Duration;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.common.eventtime.WatermarkGenerator;
import org.apache.flink.api.common.eventtime.WatermarkOutput;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;

/**
 * Bounded out-of-orderness watermarks over valid events only, following the stream's robust progress
 * ({@link RecentEventTimes}: a high quantile of its recent event times) instead of its maximum.
 *
 * <p>Two kinds of record must not push the watermark and make every other event late: a dead letter (say,
 * a record a year in the future), and a valid event with a wrong clock, for example one 9 minutes ahead
 * on a Kafka partition (inside {@code --max-future}, so it counts). The latter is one of the last 1024
 * times, above the quantile: it is counted in its own window, which closes when the rest of the stream
 * gets there. The watermark never goes back. Used in {@code env.fromSource}, so that each Kafka partition
 * and each file gets its own generator, by the job without Flink's idleness: a file split holds the watermark
 * until it ends, and {@link io.rollcount.job.kafka.CaughtUpIdlenessSource} marks a partition idle only when it
 * is read to its end.
 */
public final class ValidEventsWatermarks implements WatermarkGenerator<Event> {
    private final long outOfOrdernessMillis;
    private final RecentEventTimes recent = new RecentEventTimes();
    private long watermark = Long.MIN_VALUE;
    private boolean changed;

    public ValidEventsWatermarks(Duration outOfOrderness) {
        this.outOfOrdernessMillis = outOfOrderness.toMillis();
    }

    public static WatermarkStrategy<Event> strategy(Duration outOfOrderness, Duration idleTimeout) {
        WatermarkStrategy<Event> s = WatermarkStrategy.<Event>forGenerator(
                        ctx -> new ValidEventsWatermarks(outOfOrderness))
                .withTimestampAssigner((e, recordTs) -> e.isDeadLetter() ? (recordTs > 0 ? recordTs : e.ts) : e.ts);
        return idleTimeout.isZero() ? s : s.withIdleness(idleTimeout);
    }

    @Override
    public void onEvent(Event event, long eventTimestamp, WatermarkOutput output) {
        if (!event.isDeadLetter()) {
            recent.add(eventTimestamp);
            changed = true;
        }
    }

    /**
     * Emits only after a valid event: an emission marks the partition active, so a partition that a
     * {@link io.rollcount.job.kafka.CaughtUpIdlenessSource} marked idle stays idle until it has events again.
     */
    @Override
    public void onPeriodicEmit(WatermarkOutput output) {
        if (!changed) return;
        changed = false;
        long progress = recent.progress();
        if (progress > Long.MIN_VALUE + outOfOrdernessMillis + 1) {
            watermark = Math.max(watermark, progress - outOfOrdernessMillis - 1);
        }
        output.emitWatermark(new Watermark(watermark));
    }
}
