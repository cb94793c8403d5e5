package io.rollcount.job.support;

import java.nio.file.Path;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The base of the tests that run the whole job on a MiniCluster against the real Redis: a MiniCluster of one
 * TaskManager with two slots shared by the tests of a class, a temporary folder {@link #dir} and a key prefix
 * of its own {@link #redis} (its keys deleted after each test) per test. Build the job with {@link JobRuns}.
 */
public abstract class JobOnMiniClusterTest {
    @RegisterExtension
    protected static final MiniClusterExtension FLINK = MiniClusters.slots(2);

    @TempDir
    protected Path dir;

    @RegisterExtension
    protected final RedisTestSupport redis = new RedisTestSupport();
}
