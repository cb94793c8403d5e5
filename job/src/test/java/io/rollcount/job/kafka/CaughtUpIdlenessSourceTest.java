package io.rollcount.job.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.kafka.CaughtUpIdlenessSource.Partition;
import io.rollcount.job.model.Event;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.flink.core.io.InputStatus;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** When a quiet partition counts as read to its end, and when a reader without a partition counts as idle. */
class CaughtUpIdlenessSourceTest {
    private static Partition at(long next) {
        return new Partition(new KafkaPartitionSplit(new TopicPartition("t", 0), next), 0);
    }

    @Test
    void theOffsetOfARecordComesFromItsSource() {
        assertThat(CaughtUpIdlenessSource.offsetOf("events/3/12345")).isEqualTo(12345);
        assertThat(CaughtUpIdlenessSource.offsetOf("a/b/events/0/7")).isEqualTo(7);
        assertThat(CaughtUpIdlenessSource.offsetOf(null)).isEqualTo(-1);
        assertThat(CaughtUpIdlenessSource.offsetOf("events/3/")).isEqualTo(-1);
        assertThat(CaughtUpIdlenessSource.offsetOf("events/3/x")).isEqualTo(-1);
    }

    @Test
    void theNextOffsetIsTheStartUntilARecordThenTheRecordsOffsetPlusOne() {
        Partition p = at(100);
        assertThat(p.next()).isEqualTo(100);
        p.lastSource = "t/0/250";
        assertThat(p.next()).isEqualTo(251);
        assertThat(at(KafkaPartitionSplit.EARLIEST_OFFSET).next()).isNegative();
    }

    @Test
    void aPartitionReadToItsEndIsCaughtUp() {
        Partition p = at(100);
        assertThat(p.caughtUp(100, 100)).isTrue();
        assertThat(p.caughtUp(99, 100)).isTrue();
    }

    @Test
    void aBacklogIsNeverCaughtUpHoweverLongItWaits() {
        Partition p = at(100);
        for (int i = 0; i < 5; i++) assertThat(p.caughtUp(5_000, 100)).isFalse();
    }

    @Test
    void commitMarkersPastTheLastRecordCountOnlyWhenTheEndStaysPut() {
        Partition p = at(100);
        assertThat(p.caughtUp(102, 100)).as("first answer").isFalse();
        assertThat(p.caughtUp(102, 100))
                .as("the same end again, no record between")
                .isTrue();

        Partition q = at(100);
        assertThat(q.caughtUp(102, 100)).isFalse();
        q.records++;
        assertThat(q.caughtUp(102, 100)).as("a record came in between").isFalse();
        assertThat(q.caughtUp(103, 100)).as("three past: a record, not markers").isFalse();
        assertThat(q.caughtUp(103, 100)).isFalse();
    }

    @Test
    void anUnknownPositionNeedsAStableEnd() {
        Partition p = at(KafkaPartitionSplit.LATEST_OFFSET);
        assertThat(p.caughtUp(500, -1)).isFalse();
        assertThat(p.caughtUp(500, -1)).isTrue();
    }

    @Test
    void theCheckIntervalIsAQuarterOfTheTimeoutWithinBounds() {
        var kafka = io.rollcount.job.JobConnectors.plainKafkaSource(options());
        assertThat(new CaughtUpIdlenessSource(kafka, new java.util.Properties(), java.time.Duration.ofSeconds(10))
                        .checkIntervalMillis())
                .isEqualTo(1000);
        assertThat(new CaughtUpIdlenessSource(kafka, new java.util.Properties(), java.time.Duration.ofMillis(400))
                        .checkIntervalMillis())
                .isEqualTo(100);
        assertThat(new CaughtUpIdlenessSource(kafka, new java.util.Properties(), java.time.Duration.ofMillis(40))
                        .checkIntervalMillis())
                .isEqualTo(50);
    }

    @Test
    void aReaderWithoutPartitionIsPolledAndMarksItsOutputIdleAfterTheTimeoutFromItsFirstCheckpoint() throws Exception {
        RecordingOutput output = new RecordingOutput();
        try (CaughtUpIdlenessReader reader = reader(Duration.ofMillis(200))) {
            reader.pollNext(output);
            Thread.sleep(300);
            reader.pollNext(output);
            assertThat(output.idleMarks)
                    .as("no checkpoint yet: its partition may still come")
                    .isZero();
            reader.notifyCheckpointComplete(1);
            reader.pollNext(output);
            assertThat(output.idleMarks).as("before the timeout").isZero();

            long start = System.nanoTime();
            while (output.idleMarks == 0 && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(5)) {
                // As Flink's source operator does: poll only when the reader says it is available.
                reader.isAvailable().get(1, TimeUnit.SECONDS);
                reader.pollNext(output);
            }
            assertThat(output.idleMarks).as("marked idle").isOne();
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(150));
            assertThat(reader.isAvailable())
                    .as("idle: no wake-up, the Kafka reader's own future")
                    .isNotDone();
            reader.pollNext(output);
            assertThat(output.idleMarks).as("marked once").isOne();
        }
    }

    @Test
    void aReaderWithAPartitionLeavesIdlenessToItsPartition() throws Exception {
        RecordingOutput output = new RecordingOutput();
        try (CaughtUpIdlenessReader reader = reader(Duration.ofMillis(100))) {
            reader.addSplits(List.of(new KafkaPartitionSplit(new TopicPartition("t", 0), 0)));
            reader.notifyCheckpointComplete(1);
            reader.pollNext(output);
            Thread.sleep(200);
            reader.pollNext(output);
            assertThat(output.idleMarks).isZero();
            assertThat(output.splitOutputs).containsExactly("t-0");
        }
    }

    @Test
    void aZeroTimeoutNeverMarksAReaderWithoutPartitionIdle() throws Exception {
        RecordingOutput output = new RecordingOutput();
        try (CaughtUpIdlenessReader reader = reader(Duration.ZERO)) {
            reader.notifyCheckpointComplete(1);
            reader.pollNext(output);
            Thread.sleep(100);
            reader.pollNext(output);
            assertThat(output.idleMarks).isZero();
            assertThat(reader.isAvailable()).isNotDone();
        }
    }

    private static CaughtUpIdlenessReader reader(Duration idleTimeout) {
        var kafka = io.rollcount.job.JobConnectors.plainKafkaSource(options());
        return new CaughtUpIdlenessReader(
                new NoRecords(), new CaughtUpIdlenessSource(kafka, new java.util.Properties(), idleTimeout));
    }

    /** The Kafka reader of a subtask that has nothing to read. */
    private static final class NoRecords implements SourceReader<Event, KafkaPartitionSplit> {
        private final CompletableFuture<Void> never = new CompletableFuture<>();

        @Override
        public void start() {}

        @Override
        public InputStatus pollNext(ReaderOutput<Event> output) {
            return InputStatus.NOTHING_AVAILABLE;
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            return never;
        }

        @Override
        public List<KafkaPartitionSplit> snapshotState(long checkpointId) {
            return List.of();
        }

        @Override
        public void addSplits(List<KafkaPartitionSplit> splits) {}

        @Override
        public void notifyNoMoreSplits() {}

        @Override
        public void close() {}
    }

    /** A reader output that counts the times it was marked idle and names the split outputs made. */
    private static final class RecordingOutput implements ReaderOutput<Event> {
        int idleMarks;
        final List<String> splitOutputs = new java.util.ArrayList<>();

        @Override
        public void collect(Event record) {}

        @Override
        public void collect(Event record, long timestamp) {}

        @Override
        public void emitWatermark(Watermark watermark) {}

        @Override
        public void markIdle() {
            idleMarks++;
        }

        @Override
        public void markActive() {}

        @Override
        public SourceOutput<Event> createOutputForSplit(String splitId) {
            splitOutputs.add(splitId);
            return new SplitOutput();
        }

        @Override
        public void releaseOutputForSplit(String splitId) {}
    }

    /** A split's output: its idleness is not the reader's. */
    private static final class SplitOutput implements SourceOutput<Event> {
        @Override
        public void collect(Event record) {}

        @Override
        public void collect(Event record, long timestamp) {}

        @Override
        public void emitWatermark(Watermark watermark) {}

        @Override
        public void markIdle() {}

        @Override
        public void markActive() {}
    }

    private static io.rollcount.job.JobSettings options() {
        return io.rollcount.job.JobSettings.builder()
                .set("--kafka.bootstrap", "127.0.0.1:9")
                .set("--kafka.topic", "t")
                .set("--kafka.group-id", "g")
                .set("--kafka.starting-offsets", io.rollcount.job.JobSettings.StartingOffsets.earliest)
                .set("--max-future", java.time.Duration.ofMinutes(10))
                .build();
    }
}
