package io.rollcount.job.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Properties;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.SimpleCounter;
import org.apache.flink.metrics.groups.UnregisteredMetricsGroup;
import org.apache.flink.metrics.reporter.MetricReporter;
import org.junit.jupiter.api.Test;

class LocalMetricsTest {
    private final MetricGroup group = new UnregisteredMetricsGroup();

    private static MetricReporter created(Configuration conf) {
        Properties p = new Properties();
        p.setProperty(
                LocalMetrics.ID,
                conf.get(ConfigOptions.key("metrics.reporter." + LocalMetrics.REPORTER + "." + LocalMetrics.ID)
                        .stringType()
                        .noDefaultValue()));
        return new LocalMetricsFactory().createMetricReporter(p);
    }

    @Test
    void flinksFactoryHandsOverTheReporterAddedToTheConfiguration() {
        Configuration conf = new Configuration();
        LocalMetrics metrics = LocalMetrics.addTo(conf);
        assertThat(conf.get(ConfigOptions.key("metrics.reporter." + LocalMetrics.REPORTER + ".factory.class")
                        .stringType()
                        .noDefaultValue()))
                .isEqualTo(LocalMetricsFactory.class.getName());
        assertThat(created(conf)).isSameAs(metrics);
        // a second MiniCluster of the same configuration gets a reporter of its own
        assertThat(created(conf)).isNotSameAs(metrics);
    }

    @Test
    void sumsCountersOfEverySubtaskOnceAndKeepsThoseOfEndedSubtasks() {
        Configuration conf = new Configuration();
        LocalMetrics metrics = LocalMetrics.addTo(conf);
        MetricReporter reporter = created(conf);
        SimpleCounter first = new SimpleCounter();
        SimpleCounter second = new SimpleCounter();
        // the writer registers one counter under its group and under the rollcount group
        reporter.notifyOfAddedMetric(first, "redisKeysWritten", group);
        reporter.notifyOfAddedMetric(first, "redisKeysWritten", group);
        reporter.notifyOfAddedMetric(second, "redisKeysWritten", group);
        reporter.notifyOfAddedMetric(new SimpleCounter(), "other", group);
        first.inc(3);
        second.inc(4);
        assertThat(metrics.sum("redisKeysWritten")).isEqualTo(7);
        reporter.notifyOfRemovedMetric(first, "redisKeysWritten", group);
        reporter.notifyOfRemovedMetric(first, "redisKeysWritten", group);
        second.inc();
        assertThat(metrics.sum("redisKeysWritten")).isEqualTo(8);
        assertThat(metrics.sum("absent")).isZero();
    }

    @Test
    void aGaugeReadsTheFirstValueOfAnySubtaskAndKeepsItAfterTheSubtaskEnded() {
        Configuration conf = new Configuration();
        LocalMetrics metrics = LocalMetrics.addTo(conf);
        MetricReporter reporter = created(conf);
        String[] value = {null};
        Gauge<String> none = () -> null;
        Gauge<String> some = () -> value[0];
        reporter.notifyOfAddedMetric(none, "redisFirstRejected", group);
        reporter.notifyOfAddedMetric(some, "redisFirstRejected", group);
        assertThat(metrics.gauge("redisFirstRejected")).isNull();
        value[0] = "rc:{a}:total (WRONGTYPE)";
        assertThat(metrics.gauge("redisFirstRejected")).isEqualTo("rc:{a}:total (WRONGTYPE)");
        reporter.notifyOfRemovedMetric(some, "redisFirstRejected", group);
        assertThat(metrics.gauge("redisFirstRejected")).isEqualTo("rc:{a}:total (WRONGTYPE)");
    }
}
