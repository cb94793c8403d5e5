package io.rollcount.cli;

import java.util.concurrent.CancellationException;
import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

/**
 * The cause of the last checkpoint that failed in its asynchronous part, e.g.
 * {@code java.io.IOException: No space left on device}. Flink ends a job whose checkpoints keep failing
 * with "Exceeded checkpoint tolerable failure threshold" and no cause; the cause is only logged, by the
 * task's {@code AsyncCheckpointRunnable}, in this JVM for a local run: {@link #listen()} adds an appender to
 * that logger (configured in {@code log4j2-cli.properties}) so that {@code run} can name it in its last line.
 *
 * <p>A checkpoint that Flink aborts because another part of it failed ends in a {@link CancellationException}
 * (or an interrupt): that is a consequence, not a cause, so it does not replace the cause seen before it.
 */
final class CheckpointFailures {
    static final String LOGGER = "org.apache.flink.streaming.runtime.tasks.AsyncCheckpointRunnable";
    private static volatile String last;

    private CheckpointFailures() {}

    /** Starts recording; does nothing where log4j is not the logging backend or that logger is not configured. */
    static void listen() {
        try {
            if (!(LogManager.getContext(false) instanceof LoggerContext ctx)) return;
            LoggerConfig config = ctx.getConfiguration().getLoggerConfig(LOGGER);
            if (!LOGGER.equals(config.getName()) || config.getAppenders().containsKey("rollcount-checkpoint-failures"))
                return;
            AbstractAppender appender =
                    new AbstractAppender("rollcount-checkpoint-failures", null, null, true, Property.EMPTY_ARRAY) {
                        @Override
                        public void append(LogEvent event) {
                            record(event.getThrown());
                        }
                    };
            appender.start();
            config.addAppender(appender, Level.INFO, null);
            ctx.updateLoggers();
        } catch (LinkageError | RuntimeException e) {
            // another logging backend: the log has the cause, the last line only the folder's free space
        }
    }

    /** Records a failed checkpoint's exception, unless it only says the checkpoint was cancelled. */
    static void record(Throwable thrown) {
        if (thrown == null) return;
        Throwable root = root(thrown);
        if (root instanceof CancellationException || root instanceof InterruptedException) return;
        last = root.toString();
    }

    /** The cause of the last failed checkpoint seen, or null. */
    static String last() {
        return last;
    }

    /** The innermost cause. */
    private static Throwable root(Throwable t) {
        Throwable root = t;
        while (root.getCause() != null && root.getCause() != root) root = root.getCause();
        return root;
    }

    /** Forgets what was recorded (tests). */
    static void clear() {
        last = null;
    }
}
