package io.rollcount.job.kafka;

import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.connector.kafka.source.enumerator.KafkaSourceEnumState;
import org.apache.flink.connector.kafka.source.split.KafkaPartitionSplit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.TopicPartition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The enumerator of a bounded Kafka source restored from a checkpoint: tells every reader that no split will come
 * when the checkpoint already holds every partition of its topics.
 *
 * <p>Flink's Kafka enumerator tells its readers so only after a discovery that found partitions to assign; restored
 * with all of them (their splits live in the readers' state), it finds none and never does, and the bounded job
 * never ends. This wrapper lists the topics' partitions once, at start; when the checkpoint holds them all it signals
 * every reader, and each reader that registers later. When there are new partitions, the wrapped enumerator assigns
 * them and signals itself.
 */
final class RestoredBoundedEnumerator implements SplitEnumerator<KafkaPartitionSplit, KafkaSourceEnumState> {
    private static final Logger LOG = LoggerFactory.getLogger(RestoredBoundedEnumerator.class);

    private final SplitEnumerator<KafkaPartitionSplit, KafkaSourceEnumState> inner;
    private final SplitEnumeratorContext<KafkaPartitionSplit> context;
    private final Set<TopicPartition> restored;
    private final Properties adminProperties;
    private boolean noMoreSplits;

    RestoredBoundedEnumerator(
            SplitEnumerator<KafkaPartitionSplit, KafkaSourceEnumState> inner,
            SplitEnumeratorContext<KafkaPartitionSplit> context,
            Set<TopicPartition> restored,
            Properties adminProperties) {
        this.inner = inner;
        this.context = context;
        this.restored = restored;
        this.adminProperties = adminProperties;
    }

    @Override
    public void start() {
        inner.start();
        if (!restored.isEmpty()) context.callAsync(this::allRestored, this::signalIfAllRestored);
    }

    /** Whether the checkpoint holds every partition its topics have now (on a worker thread). */
    private boolean allRestored() throws Exception {
        Set<String> topics = new HashSet<>();
        for (TopicPartition tp : restored) topics.add(tp.topic());
        try (Admin admin = Admin.create(adminProperties)) {
            for (TopicDescription d : admin.describeTopics(topics)
                    .allTopicNames()
                    .get(30, TimeUnit.SECONDS)
                    .values()) {
                for (var p : d.partitions()) {
                    if (!restored.contains(new TopicPartition(d.name(), p.partition()))) return false;
                }
            }
        }
        return true;
    }

    private void signalIfAllRestored(Boolean all, Throwable error) {
        if (error != null) throw new IllegalStateException("cannot list the partitions of " + restored, error);
        if (!all) return;
        noMoreSplits = true;
        LOG.info("restored bounded source holds every partition: no more splits");
        context.registeredReaders().keySet().forEach(context::signalNoMoreSplits);
    }

    @Override
    public void addReader(int subtaskId) {
        inner.addReader(subtaskId);
        if (noMoreSplits) context.signalNoMoreSplits(subtaskId);
    }

    @Override
    public void handleSplitRequest(int subtaskId, String requesterHostname) {
        inner.handleSplitRequest(subtaskId, requesterHostname);
    }

    @Override
    public void addSplitsBack(List<KafkaPartitionSplit> splits, int subtaskId) {
        inner.addSplitsBack(splits, subtaskId);
    }

    @Override
    public KafkaSourceEnumState snapshotState(long checkpointId) throws Exception {
        return inner.snapshotState(checkpointId);
    }

    @Override
    public void notifyCheckpointComplete(long checkpointId) throws Exception {
        inner.notifyCheckpointComplete(checkpointId);
    }

    @Override
    public void handleSourceEvent(int subtaskId, SourceEvent sourceEvent) {
        inner.handleSourceEvent(subtaskId, sourceEvent);
    }

    @Override
    public void close() throws java.io.IOException {
        inner.close();
    }
}
