package io.rollcount.job.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.ScheduledFuture;
import org.apache.flink.api.common.JobID;
import org.apache.flink.api.common.JobInfo;
import org.apache.flink.api.common.JobInfoImpl;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.api.common.TaskInfoImpl;
import org.apache.flink.api.common.operators.MailboxExecutor;
import org.apache.flink.api.common.operators.ProcessingTimeService;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.metrics.groups.SinkWriterMetricGroup;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.util.UserCodeClassLoader;

/**
 * A WriterInitContext for driving a writer directly, with a manual processing-time clock: timers fire only
 * in {@link #advance(long)}, in the test's thread, as they would in the task's mailbox thread.
 */
public final class TestWriterContext implements WriterInitContext {

    /** The writer of {@code sink} in this context. */
    static RedisSinkWriter writer(RedisSink sink, TestWriterContext ctx) throws Exception {
        return (RedisSinkWriter) sink.createWriter(ctx);
    }

    private record Timer(long time, ProcessingTimeService.ProcessingTimeCallback callback) {}

    private long now = 1_000_000L;
    private final List<Timer> timers = new ArrayList<>();

    final ProcessingTimeService clock = new ProcessingTimeService() {
        @Override
        public long getCurrentProcessingTime() {
            return now;
        }

        @Override
        public ScheduledFuture<?> registerTimer(long time, ProcessingTimeService.ProcessingTimeCallback callback) {
            timers.add(new Timer(time, callback));
            return null;
        }
    };

    /** Moves the clock forward and fires every timer now due, in time order. */
    void advance(long millis) throws Exception {
        now += millis;
        while (true) {
            Timer due = null;
            for (Timer t : timers) if (t.time <= now && (due == null || t.time < due.time)) due = t;
            if (due == null) return;
            timers.remove(due);
            due.callback.onProcessingTime(due.time);
        }
    }

    int pendingTimers() {
        return timers.size();
    }

    @Override
    public UserCodeClassLoader getUserCodeClassLoader() {
        throw new UnsupportedOperationException();
    }

    @Override
    public MailboxExecutor getMailboxExecutor() {
        throw new UnsupportedOperationException();
    }

    @Override
    public ProcessingTimeService getProcessingTimeService() {
        return clock;
    }

    @Override
    public SinkWriterMetricGroup metricGroup() {
        return UnregisteredMetricsGroup.createSinkWriterMetricGroup();
    }

    @Override
    public SerializationSchema.InitializationContext asSerializationSchemaInitializationContext() {
        throw new UnsupportedOperationException();
    }

    @Override
    public boolean isObjectReuseEnabled() {
        return false;
    }

    @Override
    public <IN> TypeSerializer<IN> createInputSerializer() {
        throw new UnsupportedOperationException();
    }

    @Override
    public OptionalLong getRestoredCheckpointId() {
        return OptionalLong.empty();
    }

    @Override
    public JobInfo getJobInfo() {
        return new JobInfoImpl(new JobID(), "test");
    }

    @Override
    public TaskInfo getTaskInfo() {
        return new TaskInfoImpl("redis-sink", 1, 0, 1, 0);
    }
}
