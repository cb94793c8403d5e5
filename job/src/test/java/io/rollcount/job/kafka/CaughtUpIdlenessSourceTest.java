package io.rollcount.job.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.kafka.CaughtUpIdlenessSource.Partition;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;

/** When a quiet partition counts as read to its end. */
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
        var kafka = io.rollcount.job.RollcountJob.plainKafkaSource(options());
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

    private static io.rollcount.job.JobOptions options() {
        io.rollcount.job.JobOptions o = new io.rollcount.job.JobOptions();
        o.kafkaBootstrap = "127.0.0.1:9";
        o.kafkaTopic = "t";
        o.kafkaGroupId = "g";
        o.kafkaStartingOffsets = io.rollcount.job.JobOptions.StartingOffsets.earliest;
        o.maxFuture = java.time.Duration.ofMinutes(10);
        return o;
    }
}
