package io.rollcount.job.kafka;

import io.rollcount.job.kafka.CaughtUpIdlenessSource.Partition;
import io.rollcount.job.model.Event;
import io.rollcount.job.util.ForwardingSourceOutput;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.flink.core.io.InputStatus;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;

/** The Kafka reader, with outputs made early and idleness decided by {@link Partition#caughtUp}. */
final class CaughtUpIdlenessReader implements SourceReader<Event, KafkaPartitionSplit> {
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

    CaughtUpIdlenessReader(SourceReader<Event, KafkaPartitionSplit> inner, CaughtUpIdlenessSource source) {
        this.inner = inner;
        this.source = source;
        this.idleNanos = TimeUnit.MILLISECONDS.toNanos(source.idleTimeoutMillis());
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
        LOG.info("no partition assigned for {} ms: idle", source.idleTimeoutMillis());
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
            String group = source.clientProperties().getProperty(ConsumerConfig.GROUP_ID_CONFIG);
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
