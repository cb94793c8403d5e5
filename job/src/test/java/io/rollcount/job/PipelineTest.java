package io.rollcount.job;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.job.support.JobRuns;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Pipeline}'s job graph, without running it: which operators share a task, so where records are serialized. */
class PipelineTest {
    @TempDir
    Path dir;

    private List<String> tasks() {
        JobSettings o = JobRuns.fileSettings(dir, "redis://127.0.0.1:6379", "rc-graph", Duration.ofSeconds(1), dir);
        StreamExecutionEnvironment env = JobRuns.environment(o, 2, 0, null);
        JobRuns.buildFromFiles(env, o);
        List<String> names = new ArrayList<>();
        for (JobVertex v : env.getStreamGraph().getJobGraph().getVertices()) names.add(v.getName());
        return names;
    }

    @Test
    void anEventCrossesOneShuffleBeforeItIsCombined() {
        List<String> tasks = tasks();
        // the source and the routing in one task, deduplication and pre-aggregation in the next
        assertThat(tasks).anySatisfy(t -> assertThat(t).contains("route"));
        assertThat(tasks).anySatisfy(t -> assertThat(t).startsWith("drop-duplicates -> pre-aggregate"));
        assertThat(tasks).noneSatisfy(t -> assertThat(t).startsWith("pre-aggregate"));
    }
}
