package io.rollcount.job.support;

import io.rollcount.job.kafka.KafkaBroker;
import io.rollcount.job.kafka.KafkaBrokerExtension;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The base of the tests that need a Kafka broker of their own: one plain broker per test class
 * ({@link KafkaBrokerExtension}), {@link #broker} once it runs (a subclass's {@code @BeforeAll} methods may
 * create topics on it), and a temporary folder {@link #dir} per class. The MiniCluster, if any, is the
 * subclass's.
 */
public abstract class KafkaBrokerTest {
    @RegisterExtension
    protected static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();

    @TempDir
    protected static Path dir;

    /** The broker of the running test class. */
    protected static KafkaBroker broker;

    @BeforeAll
    static void brokerOfThisClass() {
        broker = KAFKA.broker();
    }
}
