package io.rollcount.job.metrics;

import java.util.Properties;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.apache.flink.metrics.reporter.MetricReporterFactory;

/** Flink's factory of the {@link LocalMetrics} reporter (found through {@code META-INF/services}). */
public final class LocalMetricsFactory implements MetricReporterFactory {
    @Override
    public MetricReporter createMetricReporter(Properties properties) {
        return LocalMetrics.claim(properties);
    }
}
