package io.rollcount.job;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import java.net.URISyntaxException;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Which package of the job may use which, checked on the job's compiled classes (its main classes only, each
 * package with its subpackages): the operators know no store, the Redis adapter knows no operator, the
 * policies know no Redis and the file input knows no operator. What they share lives in {@code model}; the
 * job ({@link RollcountJob}) joins them.
 */
class LayeringTest {
    private static final String JOB = "io.rollcount.job.";

    private static JavaClasses job;

    @BeforeAll
    static void importJobClasses() throws URISyntaxException {
        Path classes = Path.of(RollcountJob.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        job = new ClassFileImporter().importPath(classes);
    }

    @Test
    void operatorsUseNoRedis() {
        noClasses()
                .that()
                .resideInAPackage(JOB + "ops..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage(JOB + "redis..")
                .because("the operators own the interfaces of what they need from a store (LossWatch,"
                        + " ClosedWindowsRebuild); the job wires Redis in")
                .check(job);
    }

    @Test
    void redisUsesNoOperator() {
        noClasses()
                .that()
                .resideInAPackage(JOB + "redis..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage(JOB + "ops..")
                .because("the Redis adapter writes model types; what it shares with the operators lives in model")
                .check(job);
    }

    @Test
    void policiesUseNoRedis() {
        noClasses()
                .that()
                .resideInAPackage(JOB + "policy..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage(JOB + "redis..")
                .because("a policy is about counters and namespaces (model), not about where they are written")
                .check(job);
    }

    @Test
    void filesUseNoOperator() {
        noClasses()
                .that()
                .resideInAPackage(JOB + "files..")
                .should()
                .dependOnClassesThat()
                .resideInAPackage(JOB + "ops..")
                .because("the file input and output are adapters; what they share with the operators lives in model")
                .check(job);
    }
}
