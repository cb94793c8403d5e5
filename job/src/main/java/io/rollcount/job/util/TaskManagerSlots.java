package io.rollcount.job.util;

import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;

/** The slots of the TaskManager an operator runs on, by which operators share its heap. */
public final class TaskManagerSlots {
    private TaskManagerSlots() {}

    /** The TaskManager's slots ({@code taskmanager.numberOfTaskSlots}), 1 where the task cannot tell (a test harness). */
    public static int of(AbstractStreamOperator<?> operator) {
        try {
            return operator.getContainingTask()
                    .getEnvironment()
                    .getTaskManagerInfo()
                    .getConfiguration()
                    .get(TaskManagerOptions.NUM_TASK_SLOTS);
        } catch (RuntimeException e) {
            return 1;
        }
    }
}
