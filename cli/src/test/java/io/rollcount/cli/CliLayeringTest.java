package io.rollcount.cli;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the command line ({@code io.rollcount.cli}, {@code io.rollcount.bench}, {@code io.rollcount.chaos}) may use
 * of the job: its launcher, options, pipeline and connectors' mapping ({@code io.rollcount.job}), the model, the
 * metrics and the connectors' public faces; never an operator or a connector's internal machinery.
 */
class CliLayeringTest {
    private static JavaClasses cli;

    @BeforeAll
    static void importCliClasses() {
        cli = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
                .importPackages("io.rollcount.cli", "io.rollcount.bench", "io.rollcount.chaos");
    }

    @Test
    void theCommandLineUsesNoOperator() {
        noClasses()
                .should()
                .dependOnClassesThat()
                .resideInAPackage("io.rollcount.job.ops..")
                .because("the command line reads a job's results through JobAccumulators and its metrics, and builds"
                        + " the job through Launcher, Pipeline and JobConnectors")
                .check(cli);
    }

    @Test
    void theCommandLineUsesNoConnectorInternals() {
        noClasses()
                .should()
                .dependOnClassesThat()
                .resideInAnyPackage("io.rollcount.job.redis.internal..", "io.rollcount.job.redis.lease..")
                .because("the Redis sink's public face is RedisSink, its builder, RedisWrite, RedisKeys and"
                        + " RedisEndpoint")
                .check(cli);
    }
}
