package io.rollcount.job.pipeline;

import io.rollcount.job.redis.RedisWrite;
import io.rollcount.job.support.FailOnceSink;
import java.io.IOException;
import java.util.Collection;
import java.util.List;
import org.apache.flink.api.connector.sink2.Committer;
import org.apache.flink.api.connector.sink2.CommitterInitContext;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.connector.kafka.sink.TwoPhaseCommittingStatefulSink;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.SupportsPostCommitTopology;
import org.apache.flink.streaming.api.datastream.DataStream;

/** Test-only wrappers of the job's real sinks that throw once, where {@link FailureInjection} says. */
final class FailingSinks {
    /** How many rollups writers were restored from a checkpoint (set to 0 by each run). */
    static final java.util.concurrent.atomic.AtomicInteger RESTORED_WRITERS =
            new java.util.concurrent.atomic.AtomicInteger();

    private FailingSinks() {}

    /**
     * The real Redis sink; with {@link FailureInjection.Place#KEYED_OPERATOR} its writer throws from
     * {@code write} once the gate is open and {@code afterWrites} more values came. The writer is chained to
     * the keyed operator {@code count-per-counter} and called synchronously from its flush timer
     * ({@code CountPerCounter.flush} → {@code output.collect}), so the exception is raised inside the keyed
     * operator's flush, after it changed its state and before that state was stored; the test checks the
     * stack of the thrown exception to prove it.
     */
    static Sink<RedisWrite> redis(Sink<RedisWrite> delegate, int afterWrites) {
        return new FailOnceSink<>(delegate, afterWrites, new KeyedOperatorFlush());
    }

    /** Counts the COUNT writes once the gate is open, with {@link FailureInjection.Place#KEYED_OPERATOR}. */
    static final class KeyedOperatorFlush implements FailOnceSink.Trigger<RedisWrite> {
        private static final long serialVersionUID = 1L;

        @Override
        public boolean counts(RedisWrite w) {
            // counts, which the keyed operator's flush writes (users go out as each partial sum arrives)
            return FailureInjection.place == FailureInjection.Place.KEYED_OPERATOR
                    && FailureInjection.gateOpen()
                    && w.kind == RedisWrite.COUNT;
        }

        @Override
        public boolean fire() {
            return FailureInjection.failNow(FailureInjection.Place.KEYED_OPERATOR);
        }

        @Override
        public Exception failure(long writes) {
            return FailureInjection.failure("keyed operator's flush, after " + writes + " writes");
        }
    }

    /**
     * The real exactly-once KafkaSink (every interface the runtime looks for is delegated: writer state,
     * committer, post-commit topology); with {@link FailureInjection.Place#SINK_TRANSACTION} its writer throws
     * from {@code flush} once, right after the real writer flushed records of the open transaction to the
     * broker and before the transaction is pre-committed. Those records stay on the broker in a transaction
     * that is never committed: read_committed must not show them, read_uncommitted does.
     */
    static final class Kafka<IN, S, C>
            implements TwoPhaseCommittingStatefulSink<IN, S, C>, SupportsPostCommitTopology<C> {
        private static final long serialVersionUID = 1L;
        private final TwoPhaseCommittingStatefulSink<IN, S, C> delegate;

        @SuppressWarnings("unchecked")
        Kafka(TwoPhaseCommittingStatefulSink<IN, S, C> delegate) {
            this.delegate = delegate;
            if (!(delegate instanceof SupportsPostCommitTopology))
                throw new IllegalArgumentException("expected a KafkaSink");
        }

        @Override
        public PrecommittingStatefulSinkWriter<IN, S, C> createWriter(WriterInitContext context) throws IOException {
            return new Writer<>(delegate.createWriter(context));
        }

        @Override
        public PrecommittingStatefulSinkWriter<IN, S, C> restoreWriter(WriterInitContext context, Collection<S> state)
                throws IOException {
            if (!state.isEmpty()) RESTORED_WRITERS.incrementAndGet();
            return new Writer<>(delegate.restoreWriter(context, state));
        }

        @Override
        public SimpleVersionedSerializer<S> getWriterStateSerializer() {
            return delegate.getWriterStateSerializer();
        }

        @Override
        public Committer<C> createCommitter(CommitterInitContext context) throws IOException {
            return delegate.createCommitter(context);
        }

        @Override
        public SimpleVersionedSerializer<C> getCommittableSerializer() {
            return delegate.getCommittableSerializer();
        }

        @Override
        @SuppressWarnings("unchecked")
        public void addPostCommitTopology(DataStream<CommittableMessage<C>> committables) {
            ((SupportsPostCommitTopology<C>) delegate).addPostCommitTopology(committables);
        }
    }

    private static final class Writer<IN, S, C>
            implements TwoPhaseCommittingStatefulSink.PrecommittingStatefulSinkWriter<IN, S, C> {
        private final TwoPhaseCommittingStatefulSink.PrecommittingStatefulSinkWriter<IN, S, C> inner;
        /** Records written into the current transaction. */
        private long inTransaction;

        Writer(TwoPhaseCommittingStatefulSink.PrecommittingStatefulSinkWriter<IN, S, C> inner) {
            this.inner = inner;
        }

        @Override
        public void write(IN element, Context context) throws IOException, InterruptedException {
            inner.write(element, context);
            inTransaction++;
        }

        @Override
        public void flush(boolean endOfInput) throws IOException, InterruptedException {
            inner.flush(endOfInput);
            if (inTransaction > 0 && FailureInjection.failNow(FailureInjection.Place.SINK_TRANSACTION)) {
                throw FailureInjection.failure("rollups KafkaSink writer, " + inTransaction
                        + " records flushed to the broker in the open transaction");
            }
        }

        @Override
        public void writeWatermark(org.apache.flink.api.common.eventtime.Watermark watermark)
                throws IOException, InterruptedException {
            inner.writeWatermark(watermark);
        }

        @Override
        public Collection<C> prepareCommit() throws IOException, InterruptedException {
            inTransaction = 0;
            return inner.prepareCommit();
        }

        @Override
        public List<S> snapshotState(long checkpointId) throws IOException {
            return inner.snapshotState(checkpointId);
        }

        @Override
        public void close() throws Exception {
            inner.close();
        }
    }
}
