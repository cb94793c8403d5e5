package io.rollcount.job.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.rollcount.chaos.ChaosRun;
import io.rollcount.chaos.LocalCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * The CI-sized chaos run of {@code ./rollcount chaos}: five minutes of live stream on the multi-process cluster,
 * every fault kind once (a fault every 20 to 35 s, two at once where the slots do not suffice), then everything
 * exact: Redis totals and windows, counter-rollups exactly once, dead letters exactly the bad records, no
 * positive-only total seen going down. The report and chart stay in {@code job/target/chaos-it/}.
 */
@Tag("cluster")
class ChaosIT {
    @Test
    void fiveMinutesUnderEveryKindOfFaultEndExact() throws Exception {
        LocalCluster.jobJar();
        Path dir = LocalCluster.repoRoot().resolve("job/target/chaos-it");
        ClusterFaultIT.deleteTree(dir);
        ChaosRun.Options o = ChaosRun.Options.of(Duration.ofMinutes(5), 17, dir);
        ChaosRun.Outcome outcome;
        try (ChaosRun run = new ChaosRun(o, System.out)) {
            outcome = run.run();
        }
        System.out.println(Files.readString(outcome.report()));
        assertThat(outcome.problems()).as("chaos problems").isEmpty();
        assertThat(outcome.resultLine()).contains("kinds=8 lost=0 duplicated=0 wrong=0 decreases=0");
        assertThat(outcome.pass()).isTrue();
        assertThat(Files.size(outcome.chart())).as("the PNG chart").isPositive();
        for (String bulky :
                new String[] {"cluster/checkpoints", "cluster/savepoints", "cluster/tmp", "kafka/data", "redis"})
            ClusterFaultIT.deleteTree(dir.resolve(bulky));
    }
}
