package io.rollcount.job.ops;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.apache.flink.streaming.api.operators.KeyContext;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.tasks.TestProcessingTimeService;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.junit.jupiter.api.Test;

class DueWorkTest {
    private static final int COUNTERS = 200;
    private static final long SLICE_MILLIS = 5;
    /** Each due counter takes this long, so that a slice (the clock looked at every 64 counters) ends after 64. */
    private static final long NANOS_PER_COUNTER = 200_000;

    private final TestProcessingTimeService time = new TestProcessingTimeService();
    private final List<String> done = new ArrayList<>();
    private final List<Long> forwarded = new ArrayList<>();
    private final List<WatermarkStatus> statuses = new ArrayList<>();
    private final DueIndex index = new DueIndex(128);
    private final CurrentKey key = new CurrentKey();

    @Test
    void slicesFollowOneAnotherAndTheWatermarkAndStatusWaitForTheLast() throws Exception {
        DueWork work = dueWork(SLICE_MILLIS);
        for (int i = 0; i < COUNTERS; i++) index.add(1_000, "c" + i);
        time.setCurrentTime(10);

        work.watermark(new Watermark(1_000));
        assertThat(done).as("the first slice").hasSize(64);
        assertThat(forwarded).as("held while counters are due").isEmpty();
        assertThat(time.getActiveTimerTimestamps())
                .as("no record came in: the next slice at once")
                .containsExactly(10L);
        work.status(WatermarkStatus.IDLE);
        assertThat(statuses).as("a status is held with the watermark").isEmpty();

        work.watermark(new Watermark(2_000));
        assertThat(done).as("a later watermark only moves the target").hasSize(64);

        time.setCurrentTime(11);
        assertThat(done).hasSize(COUNTERS).doesNotHaveDuplicates();
        assertThat(forwarded).containsExactly(2_000L);
        assertThat(statuses).containsExactly(WatermarkStatus.IDLE);
        assertThat(time.getNumActiveTimers()).as("no slice after the last").isZero();
    }

    @Test
    void whileRecordsComeInTheyGetAsLongAsASliceAndOnceNoneCameForASecondTheSlicesFollowAtOnce() throws Exception {
        DueWork work = dueWork(SLICE_MILLIS);
        int counters = 5 * 64;
        for (int i = 0; i < counters; i++) index.add(1_000, "c" + i);
        time.setCurrentTime(10);
        work.record();

        work.watermark(new Watermark(1_000));
        assertThat(done).as("the first slice").hasSize(64);
        assertThat(time.getActiveTimerTimestamps())
                .as("the next slice after the records' turn")
                .containsExactly(10 + SLICE_MILLIS);
        time.setCurrentTime(10 + SLICE_MILLIS - 1);
        assertThat(done).as("the records' turn: no slice").hasSize(64);

        time.setCurrentTime(10 + SLICE_MILLIS);
        assertThat(done).as("the second slice").hasSize(128);
        assertThat(time.getActiveTimerTimestamps())
                .as("no record in that turn, but records came within a second: another turn")
                .containsExactly(10 + 2 * SLICE_MILLIS);

        work.record();
        long lastRecords = 10 + 2 * SLICE_MILLIS;
        time.setCurrentTime(lastRecords);
        assertThat(done).as("the third slice").hasSize(192);

        long beforeASecond = lastRecords + DueWork.RECORDS_WITHIN_MILLIS - 1;
        time.setCurrentTime(beforeASecond);
        assertThat(done).as("the fourth slice").hasSize(256);
        assertThat(time.getActiveTimerTimestamps())
                .as("the last record came within a second: a turn")
                .containsExactly(beforeASecond + SLICE_MILLIS);
        assertThat(forwarded).isEmpty();

        // a second after the last record: the fifth slice, and the next (which finds none left) at once
        time.setCurrentTime(beforeASecond + SLICE_MILLIS);
        assertThat(done).hasSize(counters).doesNotHaveDuplicates();
        assertThat(forwarded).containsExactly(1_000L);
        assertThat(time.getNumActiveTimers()).isZero();
    }

    @Test
    void theEndOfInputDrainsAtOnce() throws Exception {
        DueWork work = dueWork(SLICE_MILLIS);
        for (int i = 0; i < COUNTERS; i++) index.add(1_000 + i, "c" + i);

        work.watermark(Watermark.MAX_WATERMARK);
        assertThat(done).hasSize(COUNTERS);
        assertThat(forwarded).containsExactly(Long.MAX_VALUE);
        assertThat(time.getNumActiveTimers()).isZero();
    }

    private DueWork dueWork(long sliceMillis) {
        return new DueWork(
                index,
                sliceMillis,
                key,
                time,
                (id, at, watermark) -> {
                    assertThat(key.getCurrentKey())
                            .as("the key context is the due counter")
                            .isEqualTo(id);
                    done.add(id);
                    long until = System.nanoTime() + NANOS_PER_COUNTER;
                    while (System.nanoTime() < until) Thread.onSpinWait();
                },
                mark -> forwarded.add(mark.getTimestamp()),
                statuses::add);
    }

    private static final class CurrentKey implements KeyContext {
        private Object key;

        @Override
        public void setCurrentKey(Object key) {
            this.key = key;
        }

        @Override
        public Object getCurrentKey() {
            return key;
        }
    }
}
