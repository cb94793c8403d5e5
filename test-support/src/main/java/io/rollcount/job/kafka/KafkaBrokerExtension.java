package io.rollcount.job.kafka;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * A plain {@link KafkaBroker} for the tests of a class, as a JUnit extension: started on a free port before
 * them (before the class's {@code @BeforeAll} methods, which may create topics) with its data in a temporary
 * folder of its own, stopped and the folder deleted after them. Register it on a static field:
 * <pre>{@code
 * @RegisterExtension
 * static final KafkaBrokerExtension KAFKA = new KafkaBrokerExtension();
 * }</pre>
 */
public final class KafkaBrokerExtension implements BeforeAllCallback, AfterAllCallback {
    private Path dir;
    private KafkaBroker broker;

    /** The running broker. */
    public KafkaBroker broker() {
        if (broker == null) throw new IllegalStateException("the broker starts before the tests of the class");
        return broker;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        dir = Files.createTempDirectory("rollcount-kafka-");
        broker = new KafkaBroker(0, dir).start();
    }

    @Override
    public void afterAll(ExtensionContext context) throws IOException {
        try {
            if (broker != null) broker.close();
        } finally {
            broker = null;
            if (dir != null) {
                try (Stream<Path> all = Files.walk(dir)) {
                    for (Path p : all.sorted(Comparator.reverseOrder()).toList()) Files.deleteIfExists(p);
                }
            }
        }
    }
}
