package io.rollcount.job.pipeline;

import io.rollcount.job.util.ForwardingSourceOutput;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceEvent;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SourceSplit;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A test-only wrapper of the job's real source (the KafkaSource of {@code JobConnectors.kafkaSource}): everything is
 * delegated, but each reader
 * <ul>
 *   <li>reports completed checkpoints to {@link FailureInjection};</li>
 *   <li>after {@code holdAt} records, holds (emits nothing, checkpoints go on) until
 *       {@link FailureInjection#gateOpen()}, so that a bounded job cannot finish before the failure is due;</li>
 *   <li>at that moment, with {@link FailureInjection.Place#AFTER_SOURCE}, throws once: the failure right
 *       after the source.</li>
 * </ul>
 */
final class GatedSource<T, S extends SourceSplit, E> implements Source<T, S, E> {
    private static final long serialVersionUID = 1L;

    private final Source<T, S, E> delegate;
    private final long holdAt;

    GatedSource(Source<T, S, E> delegate, long holdAt) {
        this.delegate = delegate;
        this.holdAt = holdAt;
    }

    @Override
    public Boundedness getBoundedness() {
        return delegate.getBoundedness();
    }

    @Override
    public SourceReader<T, S> createReader(SourceReaderContext context) throws Exception {
        return new Reader<>(delegate.createReader(context), holdAt);
    }

    @Override
    public SplitEnumerator<S, E> createEnumerator(SplitEnumeratorContext<S> context) throws Exception {
        return delegate.createEnumerator(context);
    }

    @Override
    public SplitEnumerator<S, E> restoreEnumerator(SplitEnumeratorContext<S> context, E checkpoint) throws Exception {
        return delegate.restoreEnumerator(context, checkpoint);
    }

    @Override
    public SimpleVersionedSerializer<S> getSplitSerializer() {
        return delegate.getSplitSerializer();
    }

    @Override
    public SimpleVersionedSerializer<E> getEnumeratorCheckpointSerializer() {
        return delegate.getEnumeratorCheckpointSerializer();
    }

    private static final class Reader<T, S extends SourceSplit> implements SourceReader<T, S> {
        private final SourceReader<T, S> delegate;
        private final long holdAt;
        private long emitted;
        private boolean passed;
        private ReaderOutput<T> realOutput;
        private CountingOutput<T> counting;

        Reader(SourceReader<T, S> delegate, long holdAt) {
            this.delegate = delegate;
            this.holdAt = holdAt;
        }

        private boolean held() {
            if (passed || emitted < holdAt) return false;
            if (!FailureInjection.gateOpen()) return true;
            passed = true;
            if (FailureInjection.failNow(FailureInjection.Place.AFTER_SOURCE)) {
                throw FailureInjection.failure("source reader after " + emitted + " records");
            }
            return false;
        }

        @Override
        public InputStatus pollNext(ReaderOutput<T> output) throws Exception {
            if (held()) return InputStatus.NOTHING_AVAILABLE;
            if (output != realOutput) {
                realOutput = output;
                counting = new CountingOutput<>(output, this);
            }
            return delegate.pollNext(counting);
        }

        @Override
        public CompletableFuture<Void> isAvailable() {
            if (!passed && emitted >= holdAt) {
                // pollNext passes the gate (and throws, if that is the plan); until it opens, look again soon.
                if (FailureInjection.gateOpen()) return CompletableFuture.completedFuture(null);
                return CompletableFuture.runAsync(
                        () -> {}, CompletableFuture.delayedExecutor(20, TimeUnit.MILLISECONDS));
            }
            return delegate.isAvailable();
        }

        @Override
        public void start() {
            delegate.start();
        }

        @Override
        public List<S> snapshotState(long checkpointId) {
            return delegate.snapshotState(checkpointId);
        }

        @Override
        public void addSplits(List<S> splits) {
            delegate.addSplits(splits);
        }

        @Override
        public void notifyNoMoreSplits() {
            delegate.notifyNoMoreSplits();
        }

        @Override
        public void handleSourceEvents(SourceEvent event) {
            delegate.handleSourceEvents(event);
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) throws Exception {
            delegate.notifyCheckpointComplete(checkpointId);
            FailureInjection.checkpointCompleted(checkpointId);
        }

        @Override
        public void notifyCheckpointAborted(long checkpointId) throws Exception {
            delegate.notifyCheckpointAborted(checkpointId);
        }

        @Override
        public void pauseOrResumeSplits(Collection<String> pause, Collection<String> resume) {
            delegate.pauseOrResumeSplits(pause, resume);
        }

        @Override
        public void close() throws Exception {
            delegate.close();
        }
    }

    /** A source output that counts, for its reader, every record it passes on. */
    private static class CountingSplitOutput<T> extends ForwardingSourceOutput<T> {
        final Reader<T, ?> reader;

        CountingSplitOutput(SourceOutput<T> out, Reader<T, ?> reader) {
            super(out);
            this.reader = reader;
        }

        @Override
        protected void onRecord(T record) {
            reader.emitted++;
        }
    }

    /** The reader's output, and each split's, counting the records passed on. */
    private static final class CountingOutput<T> extends CountingSplitOutput<T> implements ReaderOutput<T> {
        private final ReaderOutput<T> readerOutput;

        CountingOutput(ReaderOutput<T> out, Reader<T, ?> reader) {
            super(out, reader);
            this.readerOutput = out;
        }

        @Override
        public SourceOutput<T> createOutputForSplit(String splitId) {
            return new CountingSplitOutput<>(readerOutput.createOutputForSplit(splitId), reader);
        }

        @Override
        public void releaseOutputForSplit(String splitId) {
            readerOutput.releaseOutputForSplit(splitId);
        }
    }
}
