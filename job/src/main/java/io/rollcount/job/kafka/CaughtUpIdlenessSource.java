package io.rollcount.job.kafka;

import io.rollcount.job.model.Event;
import io.rollcount.job.util.ForwardingSourceOutput;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceEvent;
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
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
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
        return new Reader(kafka.createReader(context), this);
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

    /** The Kafka reader, with outputs made early and idleness decided by {@link Partition#caughtUp}. */
    static final class Reader implements SourceReader<Event, KafkaPartitionSplit> {
        private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(CaughtUpIdlenessSource.class);

        private final SourceReader<Event, KafkaPartitionSplit> inner;
        private final CaughtUpIdlenessSource source;
        private final long idleNanos;
        private final long checkNanos;
        private final Map<String, Partition> partitions = new LinkedHashMap<>();
        /** The outputs not made yet: made at the next {@link #pollNext}, before any record goes out. */
        private final List<String> withoutOutput = new ArrayList<>();

        private ReaderOutput<Event> realOutput;
        private CountingOutput countingOutput;
        private long nextCheckNanos;
        private Admin admin;
        private CompletableFuture<Map<TopicPartition, long[]>> query;
        private List<Partition> queried = List.of();
        private ScheduledExecutorService timer;
        private CompletableFuture<Void> checkDue;
        /** Since when this reader has had no partition, counted from its first completed checkpoint; 0: not yet. */
        private long withoutPartitionSinceNanos;
        /** Whether this reader marked its whole output idle for having no partition. */
        private boolean idleWithoutPartition;

        Reader(SourceReader<Event, KafkaPartitionSplit> inner, CaughtUpIdlenessSource source) {
            this.inner = inner;
            this.source = source;
            this.idleNanos = TimeUnit.MILLISECONDS.toNanos(source.idleTimeoutMillis);
            this.checkNanos = TimeUnit.MILLISECONDS.toNanos(source.checkIntervalMillis());
        }

        @Override
        public void start() {
            inner.start();
        }

        @Override
        public InputStatus pollNext(ReaderOutput<Event> output) throws Exception {
            if (output != realOutput) {
                realOutput = output;
                countingOutput = new CountingOutput(output);
            }
            for (String id : withoutOutput) {
                Partition p = partitions.get(id);
                if (p != null) p.output = output.createOutputForSplit(id);
            }
            withoutOutput.clear();
            InputStatus status = inner.pollNext(countingOutput);
            if (idleNanos > 0) {
                long now = System.nanoTime();
                markIdleWithoutPartition(output, now);
                if (now - nextCheckNanos >= 0) {
                    nextCheckNanos = now + checkNanos;
                    checkIdleness(now);
                }
            }
            return status;
        }

        /**
         * Marks the reader's whole output idle once it has had no partition for the idle timeout (since its first
         * completed checkpoint). With partitions, their split outputs go idle one by one ({@link #checkIdleness});
         * Flink marks the reader's output idle when its own output and all its split outputs are.
         */
        private void markIdleWithoutPartition(ReaderOutput<Event> output, long now) {
            if (idleWithoutPartition || !partitions.isEmpty() || withoutPartitionSinceNanos == 0) return;
            if (now - withoutPartitionSinceNanos < idleNanos) return;
            idleWithoutPartition = true;
            output.markIdle();
            LOG.info("no partition assigned for {} ms: idle", source.idleTimeoutMillis);
        }

        /** Marks idle the quiet partitions the broker says are read to their end; asks about the others. */
        private void checkIdleness(long now) {
            List<Partition> quiet = new ArrayList<>();
            for (Partition p : partitions.values()) {
                if (p.records != p.recordsSeen) {
                    p.recordsSeen = p.records;
                    p.quietSinceNanos = now;
                    p.idle = false;
                } else if (!p.idle && p.output != null && now - p.quietSinceNanos >= idleNanos) {
                    quiet.add(p);
                }
            }
            if (query != null) {
                if (!query.isDone()) return;
                Map<TopicPartition, long[]> ends = query.getNow(null);
                for (Partition p : ends == null ? List.<Partition>of() : queried) {
                    long[] endAndStart = ends.get(p.topicPartition);
                    // Only if nothing came in since the question, and it was still assigned here.
                    if (endAndStart == null || p.idle || !quiet.contains(p)) continue;
                    long next = p.next();
                    long position = next >= 0 ? next : endAndStart[1];
                    if (p.caughtUp(endAndStart[0], position)) {
                        p.idle = true;
                        p.output.markIdle();
                        LOG.debug("{} read to its end ({}) and quiet: idle", p.topicPartition, endAndStart[0]);
                    }
                }
                query = null;
                queried = List.of();
                quiet.removeIf(p -> p.idle);
            }
            if (!quiet.isEmpty()) ask(quiet);
        }

        /** Asks the broker, on the timer's thread, for the end offsets of the quiet partitions. */
        private void ask(List<Partition> quiet) {
            Map<TopicPartition, Long> starts = new HashMap<>();
            for (Partition p : quiet) starts.put(p.topicPartition, p.next());
            queried = quiet;
            query = CompletableFuture.supplyAsync(() -> endsAndStarts(starts), timer());
        }

        /**
         * For each partition: its end offset, and where a split that started at a marker ({@code earliest},
         * {@code committed}) and has read nothing starts (-1 where not known). Empty when the broker does not
         * answer within 5 s: the partitions stay active.
         */
        private Map<TopicPartition, long[]> endsAndStarts(Map<TopicPartition, Long> starts) {
            Map<TopicPartition, long[]> out = new HashMap<>();
            try {
                if (admin == null) admin = Admin.create(source.adminProperties());
                Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
                Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
                for (var e : starts.entrySet()) {
                    latest.put(e.getKey(), OffsetSpec.latest());
                    if (e.getValue() == KafkaPartitionSplit.EARLIEST_OFFSET
                            || e.getValue() == KafkaPartitionSplit.COMMITTED_OFFSET) {
                        earliest.put(e.getKey(), OffsetSpec.earliest());
                    }
                }
                ListOffsetsOptions isolation = new ListOffsetsOptions(source.isolationLevel());
                var ends = admin.listOffsets(latest, isolation).all().get(5, TimeUnit.SECONDS);
                var firsts = earliest.isEmpty()
                        ? Map.<TopicPartition, ListOffsetsResultInfo>of()
                        : admin.listOffsets(earliest, isolation).all().get(5, TimeUnit.SECONDS);
                Map<TopicPartition, OffsetAndMetadata> committed = Map.of();
                String group = source.clientProperties.getProperty(ConsumerConfig.GROUP_ID_CONFIG);
                if (group != null && starts.containsValue(KafkaPartitionSplit.COMMITTED_OFFSET)) {
                    committed = admin.listConsumerGroupOffsets(group)
                            .partitionsToOffsetAndMetadata()
                            .get(5, TimeUnit.SECONDS);
                }
                for (var e : starts.entrySet()) {
                    TopicPartition tp = e.getKey();
                    long start = -1;
                    if (e.getValue() == KafkaPartitionSplit.EARLIEST_OFFSET) {
                        start = firsts.get(tp).offset();
                    } else if (e.getValue() == KafkaPartitionSplit.COMMITTED_OFFSET) {
                        OffsetAndMetadata c = committed.get(tp);
                        start = c != null ? c.offset() : firsts.get(tp).offset();
                    }
                    out.put(tp, new long[] {ends.get(tp).offset(), start});
                }
            } catch (Exception e) {
                if (e instanceof InterruptedException) Thread.currentThread().interrupt();
                LOG.debug("end offsets not available, partitions stay active: {}", e.toString());
                return Map.of();
            }
            return out;
        }

        private ScheduledExecutorService timer() {
            if (timer == null) {
                timer = Executors.newSingleThreadScheduledExecutor(r -> {
                    Thread t = new Thread(r, "rollcount-idleness-check");
                    t.setDaemon(true);
                    return t;
                });
            }
            return timer;
        }

        /** Whether some partition, or the reader without one, may still become idle. */
        private boolean anyActive() {
            if (partitions.isEmpty()) return !idleWithoutPartition;
            for (Partition p : partitions.values()) if (!p.idle) return true;
            return false;
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            CompletableFuture<Void> data = inner.isAvailable();
            // Without data, poll again when a check is due, so that quiet partitions (or a reader without one)
            // can become idle.
            if (data.isDone() || idleNanos == 0 || !anyActive()) return data;
            if (checkDue == null || checkDue.isDone()) {
                CompletableFuture<Void> due = new CompletableFuture<>();
                timer().schedule(() -> due.complete(null), checkNanos, TimeUnit.NANOSECONDS);
                checkDue = due;
            }
            return data.applyToEither(checkDue, v -> null);
        }

        @Override
        public List<KafkaPartitionSplit> snapshotState(long checkpointId) {
            return inner.snapshotState(checkpointId);
        }

        @Override
        public void addSplits(List<KafkaPartitionSplit> assigned) {
            List<KafkaPartitionSplit> splits = source.bounded() ? withStoppingOffsets(assigned) : assigned;
            long now = System.nanoTime();
            for (KafkaPartitionSplit s : splits) {
                partitions.put(s.splitId(), new Partition(s, now));
                withoutOutput.add(s.splitId());
            }
            // Its first watermark makes the reader's output active again.
            if (!splits.isEmpty()) idleWithoutPartition = false;
            inner.addSplits(splits);
        }

        /**
         * The splits, those without a stopping offset (restored from the checkpoint of an unbounded run) made to stop
         * at their partition's end offset now, read with the consumer's isolation level: a bounded run stops at the
         * end offsets found at its start on every partition, as Flink's own splits of {@code setBounded(latest())}
         * do. Fails (the job restarts) when the broker does not answer within 30 s.
         */
        private List<KafkaPartitionSplit> withStoppingOffsets(List<KafkaPartitionSplit> splits) {
            List<TopicPartition> open = new ArrayList<>();
            for (KafkaPartitionSplit s : splits) if (s.getStoppingOffset().isEmpty()) open.add(s.getTopicPartition());
            if (open.isEmpty()) return splits;
            Map<TopicPartition, Long> ends = endOffsets(open);
            List<KafkaPartitionSplit> out = new ArrayList<>();
            for (KafkaPartitionSplit s : splits) {
                Long end = ends.get(s.getTopicPartition());
                out.add(end == null ? s : new KafkaPartitionSplit(s.getTopicPartition(), s.getStartingOffset(), end));
            }
            LOG.info("bounded: restored partitions without a stopping offset stop at {}", ends);
            return out;
        }

        /** The end offsets of {@code partitions}, asked on the timer's thread (where the admin client lives). */
        private Map<TopicPartition, Long> endOffsets(List<TopicPartition> partitions) {
            try {
                return CompletableFuture.supplyAsync(() -> listEndOffsets(partitions), timer())
                        .get(30, TimeUnit.SECONDS);
            } catch (Exception e) {
                if (e instanceof InterruptedException) Thread.currentThread().interrupt();
                throw new IllegalStateException("bounded: cannot read the end offsets of " + partitions, e);
            }
        }

        private Map<TopicPartition, Long> listEndOffsets(List<TopicPartition> partitions) {
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (TopicPartition tp : partitions) latest.put(tp, OffsetSpec.latest());
            try {
                if (admin == null) admin = Admin.create(source.adminProperties());
                var ends = admin.listOffsets(latest, new ListOffsetsOptions(source.isolationLevel()))
                        .all()
                        .get(25, TimeUnit.SECONDS);
                Map<TopicPartition, Long> out = new HashMap<>();
                ends.forEach((tp, info) -> out.put(tp, info.offset()));
                return out;
            } catch (Exception e) {
                if (e instanceof InterruptedException) Thread.currentThread().interrupt();
                throw new java.util.concurrent.CompletionException(e);
            }
        }

        @Override
        public void notifyNoMoreSplits() {
            inner.notifyNoMoreSplits();
        }

        @Override
        public void handleSourceEvents(SourceEvent sourceEvent) {
            inner.handleSourceEvents(sourceEvent);
        }

        @Override
        public void pauseOrResumeSplits(Collection<String> toPause, Collection<String> toResume) {
            inner.pauseOrResumeSplits(toPause, toResume);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) throws Exception {
            if (withoutPartitionSinceNanos == 0) withoutPartitionSinceNanos = System.nanoTime();
            inner.notifyCheckpointComplete(checkpointId);
        }

        @Override
        public void notifyCheckpointAborted(long checkpointId) throws Exception {
            inner.notifyCheckpointAborted(checkpointId);
        }

        @Override
        public void close() throws Exception {
            try {
                inner.close();
            } finally {
                if (timer != null) timer.shutdownNow();
                // The admin client is made and used on the timer's thread; closed here once that has stopped.
                if (timer != null) timer.awaitTermination(6, TimeUnit.SECONDS);
                if (admin != null) admin.close(Duration.ofSeconds(1));
            }
        }

        /** The reader's output, handing the Kafka reader split outputs that count what they emit. */
        private final class CountingOutput extends ForwardingSourceOutput<Event> implements ReaderOutput<Event> {
            private final ReaderOutput<Event> readerOutput;
            private final Map<String, SourceOutput<Event>> splitOutputs = new HashMap<>();

            CountingOutput(ReaderOutput<Event> out) {
                super(out);
                this.readerOutput = out;
            }

            @Override
            protected void onRecord(Event record) {}

            @Override
            public SourceOutput<Event> createOutputForSplit(String splitId) {
                return splitOutputs.computeIfAbsent(splitId, id -> {
                    Partition p = partitions.get(id);
                    SourceOutput<Event> real = readerOutput.createOutputForSplit(id);
                    if (p == null) return real;
                    p.output = real;
                    return new CountingSplitOutput(real, p);
                });
            }

            @Override
            public void releaseOutputForSplit(String splitId) {
                splitOutputs.remove(splitId);
                if (partitions.remove(splitId) != null && partitions.isEmpty() && withoutPartitionSinceNanos != 0) {
                    withoutPartitionSinceNanos = System.nanoTime();
                }
                readerOutput.releaseOutputForSplit(splitId);
            }
        }
    }

    /** One partition's output: counts its records and keeps the last one's {@code source} (parsed only at a check). */
    private static final class CountingSplitOutput extends ForwardingSourceOutput<Event> {
        private final Partition partition;

        CountingSplitOutput(SourceOutput<Event> out, Partition partition) {
            super(out);
            this.partition = partition;
        }

        @Override
        protected void onRecord(Event e) {
            partition.records++;
            if (e.source != null) partition.lastSource = e.source;
        }
    }
}
