package io.rollcount.job.metrics;

import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.Metric;
import org.apache.flink.metrics.MetricConfig;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.metrics.reporter.MetricReporter;

/**
 * The metrics of the jobs of one local Flink (a MiniCluster of {@code rollcount run}, the demo, the bench, a
 * test), read in the same JVM: a Flink {@link MetricReporter} that keeps the counters and gauges the operators
 * register, by metric name. {@link #addTo} adds it to a MiniCluster's configuration; after that,
 * {@link #sum(String)} is the sum of every counter of that name over the subtasks, including those of
 * subtasks that have ended (their last value is kept), so a job's total is still there once it finished
 * or restarted. Nothing is static but the hand-over from Flink's reporter factory to the caller, by id.
 */
public final class LocalMetrics implements MetricReporter {
    static final String REPORTER = "rollcount-local";
    static final String ID = "id";
    private static final Map<String, LocalMetrics> PENDING = new ConcurrentHashMap<>();

    private final Map<String, Set<Counter>> live = new ConcurrentHashMap<>();
    private final Map<String, Long> ended = new ConcurrentHashMap<>();
    private final Map<String, Set<Gauge<?>>> gauges = new ConcurrentHashMap<>();
    private final Map<String, Object> endedGauges = new ConcurrentHashMap<>();

    private LocalMetrics() {}

    /** Adds a reporter to {@code conf} (the configuration of a MiniCluster about to start) and returns it. */
    public static LocalMetrics addTo(Configuration conf) {
        String id = UUID.randomUUID().toString();
        LocalMetrics metrics = new LocalMetrics();
        PENDING.put(id, metrics);
        conf.set(
                ConfigOptions.key("metrics.reporter." + REPORTER + ".factory.class")
                        .stringType()
                        .noDefaultValue(),
                LocalMetricsFactory.class.getName());
        conf.set(
                ConfigOptions.key("metrics.reporter." + REPORTER + "." + ID)
                        .stringType()
                        .noDefaultValue(),
                id);
        return metrics;
    }

    /** The reporter {@link #addTo} created for {@code id}, once (Flink creates one reporter per MiniCluster). */
    static LocalMetrics claim(Properties properties) {
        String id = properties.getProperty(ID);
        LocalMetrics m = id == null ? null : PENDING.remove(id);
        return m != null ? m : new LocalMetrics();
    }

    /** The sum of the counters named {@code name} over every subtask that registered one, ended ones included. */
    public long sum(String name) {
        long n = ended.getOrDefault(name, 0L);
        Set<Counter> set = live.getOrDefault(name, Set.of());
        synchronized (set) {
            for (Counter c : set) n += c.getCount();
        }
        return n;
    }

    /** The first non-null value of a gauge named {@code name} (a live one first), or null. */
    public Object gauge(String name) {
        Set<Gauge<?>> set = gauges.getOrDefault(name, Set.of());
        synchronized (set) {
            for (Gauge<?> g : set) {
                Object v = g.getValue();
                if (v != null) return v;
            }
        }
        return endedGauges.get(name);
    }

    /**
     * The largest value now of the numeric gauges named {@code name} of the subtasks running (those of a job
     * that ended are not included), or 0 for none.
     */
    public long maxLive(String name) {
        long m = 0;
        Set<Gauge<?>> set = gauges.getOrDefault(name, Set.of());
        synchronized (set) {
            for (Gauge<?> g : set) {
                if (g.getValue() instanceof Number n) m = Math.max(m, n.longValue());
            }
        }
        return m;
    }

    @Override
    public void open(MetricConfig config) {}

    @Override
    public void close() {}

    @Override
    public void notifyOfAddedMetric(Metric metric, String name, MetricGroup group) {
        if (metric instanceof Counter c) {
            live.computeIfAbsent(name, k -> identitySet()).add(c);
        } else if (metric instanceof Gauge<?> g) {
            gauges.computeIfAbsent(name, k -> identitySet()).add(g);
        }
    }

    @Override
    public void notifyOfRemovedMetric(Metric metric, String name, MetricGroup group) {
        if (metric instanceof Counter c) {
            Set<Counter> set = live.get(name);
            // the same counter may be registered under two groups: its value is kept once
            if (set != null && set.remove(c)) ended.merge(name, c.getCount(), Long::sum);
        } else if (metric instanceof Gauge<?> g) {
            Set<Gauge<?>> set = gauges.get(name);
            if (set != null && set.remove(g)) {
                Object v = g.getValue();
                if (v != null) endedGauges.putIfAbsent(name, v);
            }
        }
    }

    private static <T> Set<T> identitySet() {
        return Collections.synchronizedSet(Collections.newSetFromMap(new IdentityHashMap<>()));
    }
}
