package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link JobIdentity}: which job folders are a run's own, and the file that keeps it. */
class JobIdentityTest {
    private static final JobIdentity KAFKA =
            new JobIdentity("rc", "127.0.0.1:6379/0", "kafka topic events of cluster abc");

    @TempDir
    Path dir;

    @Test
    void sameOnlyWithTheSamePrefixRedisAndSource() {
        assertThat(KAFKA.sameJob(new JobIdentity("rc", "127.0.0.1:6379/0", KAFKA.source())))
                .isTrue();
        assertThat(KAFKA.sameJob(new JobIdentity("rc2", KAFKA.redis(), KAFKA.source())))
                .isFalse();
        assertThat(KAFKA.sameJob(new JobIdentity("rc", "127.0.0.1:6380/0", KAFKA.source())))
                .isFalse();
        assertThat(KAFKA.sameJob(new JobIdentity("rc", KAFKA.redis(), "kafka topic events of cluster xyz")))
                .isFalse();
        assertThat(KAFKA.sameJob(new JobIdentity("rc", KAFKA.redis(), "files"))).isFalse();
    }

    @Test
    void aRedisClusterIsTheSameWhenItSharesANodeId() {
        JobIdentity a = new JobIdentity("rc", "cluster n1,n2,n3", "files");
        assertThat(a.sameJob(new JobIdentity("rc", "cluster n3,n4", "files"))).isTrue();
        assertThat(a.sameJob(new JobIdentity("rc", "cluster n4,n5", "files"))).isFalse();
        assertThat(a.sameJob(new JobIdentity("rc", "127.0.0.1:6379/0", "files")))
                .isFalse();
    }

    @Test
    void keptInTheJobFolder() throws Exception {
        assertThat(JobIdentity.readFrom(dir)).as("a job of an earlier version").isNull();
        KAFKA.writeTo(dir.resolve("job"));
        assertThat(JobIdentity.readFrom(dir.resolve("job"))).isEqualTo(KAFKA);
        Files.writeString(dir.resolve("job").resolve(JobIdentity.FILE), "prefix=rc\n");
        assertThat(JobIdentity.readFrom(dir.resolve("job"))).as("incomplete").isNull();
    }
}
