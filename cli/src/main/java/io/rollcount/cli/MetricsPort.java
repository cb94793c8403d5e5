package io.rollcount.cli;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;

/**
 * {@code --metrics.port} of {@code ./rollcount run} and {@code demo}: Flink's Prometheus reporter
 * ({@code flink-metrics-prometheus}, on the command line's class path) serving every metric of the local
 * MiniCluster, Rollcount's {@code rollcount_*} among them, at {@code http://HOST:PORT/metrics}. The port is
 * checked before the job starts, because the reporter itself only logs a port it cannot bind and runs on
 * without metrics.
 */
final class MetricsPort {
    private MetricsPort() {}

    /** The port of Flink's usual range (9249-9259) that the demo uses by default. */
    static final int DEFAULT_DEMO_PORT = 9249;

    static final String REPORTER_FACTORY = "org.apache.flink.metrics.prometheus.PrometheusReporterFactory";

    /** Adds the Prometheus reporter on {@code port} (all interfaces, as the reporter binds) to {@code conf}. */
    static Configuration configure(Configuration conf, int port) {
        conf.set(
                ConfigOptions.key("metrics.reporter.prom.factory.class")
                        .stringType()
                        .noDefaultValue(),
                REPORTER_FACTORY);
        conf.set(ConfigOptions.key("metrics.reporter.prom.port").stringType().noDefaultValue(), Integer.toString(port));
        return conf;
    }

    /** Fails with a message naming the option and the port when {@code port} is not a port number. */
    static void validate(String option, int port) {
        if (port < 1 || port > 65_535)
            throw new IllegalArgumentException(option + " must be a port between 1 and 65535, not " + port);
    }

    /** Whether nothing listens on {@code port}: a server socket on all interfaces (as the reporter's) binds to it. */
    static boolean isFree(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(false);
            s.bind(new InetSocketAddress(port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** The one line that says {@code port} is taken. */
    static String inUse(String option, int port) {
        return option + " " + port + ": the port is in use (another process listens on it); choose another port";
    }

    /** The line printed when metrics are on. */
    static String serving(int port) {
        return "Prometheus metrics at http://127.0.0.1:" + port + "/metrics (Rollcount's are named rollcount_*)";
    }
}
