package io.rollcount.job.kafka;

import io.rollcount.job.model.Event;
import java.time.Duration;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumState;
import org.apache.flink.connector.kafka.source.enumerator.SplitAndAssignmentStatus;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;

/**
 * {@link KafkaSource} whose partitions hold the watermark back until they are read, and count as idle only
 * when they have nothing left to read.
 *
 * <p>Flink gives each Kafka partition its own watermark generator and takes the least of their watermarks,
 * but two of its defaults let one partition's events fall behind the watermark after a stop: a partition's
 * generator exists only from its first record on (so after a restore the partition read first sets the
 * watermark alone, and a consumer drains up to {@code max.partition.fetch.bytes} of one partition before
 * the next), and {@code withIdleness} counts a partition as idle when it has sent nothing for a while,
 * whether it is empty or its backlog is simply not fetched yet (a broker restart, a partition leader moving).
 * Either way the watermark runs ahead over one partition's backlog and the others' backlog comes in late:
 * dead-lettered, not counted.
 *
 * <p>This wrapper changes both, around the unchanged Kafka reader:
 * <ul>
 *   <li>every split gets its watermark output as soon as it is assigned, before any record of any split is
 *       emitted, so a partition not yet read holds the watermark at its start;
 *   <li>a partition counts as idle (its output {@link SourceOutput#markIdle() marked idle}) only when it has
 *       sent no record for {@code idleTimeout} <em>and</em> the broker says it holds nothing past what was
 *       read (its end offset, read with the consumer's isolation level); while the broker cannot be asked, it
 *       stays active. Its next valid event makes it active again (the watermark generator emits).
 * </ul>
 * An empty partition therefore still lets the job's windows close, and a partition with a backlog always holds
 * the watermark, however long the backlog waits. The check asks the broker only about partitions quiet for
 * {@code idleTimeout}, at most once every {@link #checkIntervalMillis} per reader, from a small admin client
 * the reader opens on first need and closes with itself.
 *
 * <p>A reader with no partition (a topic with fewer partitions than the source has subtasks) has no split
 * output that could go idle, and its output would hold every downstream watermark at its start for ever: once
 * it has had no partition for {@code idleTimeout} since its first completed checkpoint, it marks its whole
 * output idle. Counting from the first checkpoint, not from its start: the enumerator hands the partitions it
 * finds at start out a while after the readers start (over a second on a busy machine), and a reader idle
 * before its partition came would let the others' watermark run ahead of that partition's events. By the
 * first completed checkpoint every subtask runs and the enumerator has had that while. A partition assigned
 * later (partition discovery) makes the reader active again with the partition's first watermark; its events
 * behind the job's watermark by more than the allowed lateness are late, as any late event.
 *
 * <p>A bounded source ({@code setBounded}) stops at the end offsets found at its start on every partition. Flink's
 * enumerator sets them on the splits it makes; a split restored from an unbounded run's checkpoint has none, and
 * the reader gives it its partition's end offset when it gets the split. Restored with every partition of its
 * topics, Flink's enumerator never tells the readers that no split will come: {@link RestoredBoundedEnumerator}
 * does.
 */
public final class CaughtUpIdlenessSource
        implements Source<Event, KafkaPartitionSplit, KafkaSourceEnumState>, ResultTypeQueryable<Event> {
    private static final long serialVersionUID = 1L;

    private final KafkaSource<Event> kafka;
    private final Properties clientProperties;
    private final long idleTimeoutMillis;

    /**
     * @param kafka the source to wrap
     * @param clientProperties the consumer's client properties (bootstrap servers, security, isolation level),
     *     used for the admin client that reads end offsets
     * @param idleTimeout how long a caught-up partition sends nothing before it counts as idle; {@code 0}: never
     */
    public CaughtUpIdlenessSource(KafkaSource<Event> kafka, Properties clientProperties, Duration idleTimeout) {
        if (idleTimeout.isNegative()) throw new IllegalArgumentException("idleTimeout: must not be negative");
        this.kafka = kafka;
        this.clientProperties = clientProperties;
        this.idleTimeoutMillis = idleTimeout.toMillis();
    }

    /** How often a reader looks at its quiet partitions: a quarter of the timeout, between 50 ms and 1 s. */
    long idleTimeoutMillis() {
        return idleTimeoutMillis;
    }

    Properties clientProperties() {
        return clientProperties;
    }

    long checkIntervalMillis() {
        return Math.max(50, Math.min(1000, idleTimeoutMillis / 4));
    }

    @Override
    public Boundedness getBoundedness() {
        return kafka.getBoundedness();
    }

    @Override
    public SplitEnumerator<KafkaPartitionSplit, KafkaSourceEnumState> createEnumerator(
            SplitEnumeratorContext<KafkaPartitionSplit> context) throws Exception {
        return kafka.createEnumerator(context);
    }

    @Override
    public SplitEnumerator<KafkaPartitionSplit, KafkaSourceEnumState> restoreEnumerator(
            SplitEnumeratorContext<KafkaPartitionSplit> context, KafkaSourceEnumState checkpoint) throws Exception {
        SplitEnumerator<KafkaPartitionSplit, KafkaSourceEnumState> restored =
                kafka.restoreEnumerator(context, checkpoint);
        if (!bounded()) return restored;
        Set<TopicPartition> partitions = new HashSet<>();
        for (SplitAndAssignmentStatus s : checkpoint.splits())
            partitions.add(s.split().getTopicPartition());
        return new RestoredBoundedEnumerator(restored, context, partitions, adminProperties());
    }

    /** Whether the source stops at the end offsets found at its start ({@code setBounded}). */
    boolean bounded() {
        return kafka.getBoundedness() == Boundedness.BOUNDED;
    }

    @Override
    public SimpleVersionedSerializer<KafkaPartitionSplit> getSplitSerializer() {
        return kafka.getSplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<KafkaSourceEnumState> getEnumeratorCheckpointSerializer() {
        return kafka.getEnumeratorCheckpointSerializer();
    }

    @Override
    public SourceReader<Event, KafkaPartitionSplit> createReader(SourceReaderContext context) throws Exception {
        return new CaughtUpIdlenessReader(kafka.createReader(context), this);
    }

    @Override
    public TypeInformation<Event> getProducedType() {
        return kafka.getProducedType();
    }

    /** Properties of the admin client: those of the consumer's that an admin client knows. */
    Properties adminProperties() {
        Properties p = new Properties();
        for (String name : clientProperties.stringPropertyNames()) {
            if (AdminClientConfig.configNames().contains(name)) p.put(name, clientProperties.getProperty(name));
        }
        p.putIfAbsent(AdminClientConfig.CLIENT_ID_CONFIG, "rollcount-idleness");
        return p;
    }

    IsolationLevel isolationLevel() {
        String level = clientProperties.getProperty(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        return "read_committed".equalsIgnoreCase(level)
                ? IsolationLevel.READ_COMMITTED
                : IsolationLevel.READ_UNCOMMITTED;
    }

    /** The offset of a record from an event's {@code source}, {@code topic/partition/offset}; -1 if none. */
    static long offsetOf(String source) {
        if (source == null) return -1;
        int slash = source.lastIndexOf('/');
        if (slash < 0 || slash == source.length() - 1) return -1;
        try {
            return Long.parseLong(source, slash + 1, source.length(), 10);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** What a reader knows of one of its partitions. */
    static final class Partition {
        final TopicPartition topicPartition;
        /** The split's starting offset; negative: a marker (earliest, latest, committed). */
        private final long start;
        /** The {@code source} of the last record emitted ({@code topic/partition/offset}), or null; parsed at a check. */
        String lastSource;
        /** Records emitted so far, and at the last look. */
        long records;

        long recordsSeen;
        long quietSinceNanos;
        SourceOutput<Event> output;
        boolean idle;
        /** End offset at the previous answer that did not make it idle, and the records seen then. */
        long lastEnd = -1;

        long recordsAtLastEnd = -1;

        Partition(KafkaPartitionSplit split, long nowNanos) {
            this.topicPartition = split.getTopicPartition();
            this.start = split.getStartingOffset();
            this.quietSinceNanos = nowNanos;
        }

        /** The offset of the next record to read, as far as this reader knows; negative: not known. */
        long next() {
            long offset = offsetOf(lastSource);
            return offset >= 0 ? offset + 1 : start;
        }

        /**
         * Whether a partition whose end offset the broker gave as {@code end} has nothing left to read, given the
         * offset of the next record to read ({@code position}; negative: not known, the split started at "latest").
         * Read to the end when the end is not past the position; or, for a transactional topic (whose commit
         * markers take offsets that no record fills) or an unknown position, when the same end, at most two
         * offsets past, came twice with no record between.
         */
        boolean caughtUp(long end, long position) {
            if (position >= 0 && end <= position) return true;
            boolean stable = end == lastEnd && records == recordsAtLastEnd && (position < 0 || end - position <= 2);
            lastEnd = end;
            recordsAtLastEnd = records;
            return stable;
        }
    }
}
