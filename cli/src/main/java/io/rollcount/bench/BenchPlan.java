package io.rollcount.bench;

import io.rollcount.job.gen.EventGenerator.Workload;
import java.nio.file.Path;

/**
 * What one {@code rollcount bench job} runs: its size, Redis, work folder, the Kafka mode's producer settings
 * and the mode. Made once from the command line's options ({@link BenchCommand}), which checks their
 * combinations; {@link JobBench} only reads it.
 *
 * @param size events, counters and rounds of the run
 * @param redisUrl the Redis every variant writes to
 * @param work checkpoints, broker data and the reader's log (deleted by the command at the end)
 * @param kafkaProperties the Kafka mode's {@code --kafka.properties} (both jobs), or null
 * @param mode what runs
 */
public record BenchPlan(JobBench.Size size, String redisUrl, Path work, String kafkaProperties, Mode mode) {

    /** What a run of the bench does. */
    public sealed interface Mode permits Full, OnlyOurs, OnlyKafka {}

    /**
     * Every variant on every workload for {@code size.rounds()} rounds, then the policies run (when
     * {@code comparePolicies} is not null), the paced run and, with {@code kafka}, the Kafka mode.
     *
     * @param kafka whether the Kafka mode runs at the end
     * @param comparePolicies namespace policies to run the zipf workload under once more beside the default
     *     ({@link PolicyBench}); null: skipped
     */
    public record Full(boolean kafka, Path comparePolicies) implements Mode {}

    /**
     * Only Rollcount on one workload, for profiling: twice; or, {@code withFloor}, after an unmeasured warm-up,
     * alternated with its plain-writes floor (ours, floor, floor, ours, ours, floor), so that neither always runs
     * on the Redis the other has just emptied.
     *
     * @param workload the workload
     * @param withFloor the plain-writes floor too (needs Redis: not with {@code discardRedis})
     * @param discardRedis Rollcount's Redis writes built but discarded: the job's own cost without Redis's
     */
    public record OnlyOurs(Workload workload, boolean withFloor, boolean discardRedis) implements Mode {
        public OnlyOurs {
            if (workload == null) throw new IllegalArgumentException("a workload is needed");
            if (withFloor && discardRedis)
                throw new IllegalArgumentException("the floor is measured on Redis: not with its writes discarded");
        }

        /** The runs in order: {@link RedisWrites#FLOOR} or the writes of ours. */
        RedisWrites[] runs() {
            RedisWrites ours = discardRedis ? RedisWrites.DISCARDED : RedisWrites.SENT;
            return withFloor
                    ? new RedisWrites[] {ours, RedisWrites.FLOOR, RedisWrites.FLOOR, ours, ours, RedisWrites.FLOOR}
                    : new RedisWrites[] {ours, ours};
        }
    }

    /** Only the Kafka mode: its warm-up, ours and the textbook job, to compare Kafka settings. */
    public record OnlyKafka() implements Mode {}
}
