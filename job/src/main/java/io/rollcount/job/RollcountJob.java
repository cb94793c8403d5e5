package io.rollcount.job;

import io.rollcount.job.policy.PoliciesException;
import io.rollcount.job.redis.RedisSink;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import picocli.CommandLine;

/**
 * The Rollcount job: {@code flink run job/target/rollcount-job.jar [options]}, an application cluster (the
 * Flink Kubernetes Operator, {@code deploy/local-cluster/start-application.sh}), or {@code ./rollcount run}
 * on a local MiniCluster. {@link Pipeline#build} is the whole pipeline, top to bottom; sources and sinks are passed in
 * so that tests run the very same graph on bounded input.
 *
 * <p>{@link #main} never exits the JVM. A start it refuses fails with a {@link RefusedStartException} of one
 * line: {@code flink run} fails the submission with that line as its root cause and sets its exit code.
 *
 * <p>Which starts are checked where: {@link Launcher}, the one start sequence of every way the job starts. With
 * {@code flink run} the client checks the key prefix before it submits. In application mode ({@code execution.target}
 * {@code embedded}) main runs again at every start of a JobManager, also after a failover, while Flink recovers the
 * running job from its HA store and ignores the job graph main builds then. A client-side check there would find
 * the lease held by the very job being recovered and fail the JobManager at every start. So in application mode
 * main leaves the prefix to the writers of the Redis sink: they hold the lease with the token in the job graph, or
 * the token restored from their checkpointed state (an HA recovery, a restore from {@code execution.savepoint.path}
 * or the operator's {@code initialSavepointPath}), take back a lease of their own token, and fail the job with
 * restarts suppressed when another job's token holds it, or when they restore nothing and the prefix's job mark
 * names another job ({@link RedisSink#refusingEarlierJob}: an empty start over an earlier job's counts). A restart
 * before the first checkpoint finds its own token there: the token is in the job graph Flink recovers.
 * {@code --fresh}, which deletes keys at start, is refused there.
 */
public final class RollcountJob {
    private RollcountJob() {}

    /**
     * Flink's entry point: {@code flink run} runs it on the client, an application cluster on the JobManager
     * at every start of that JobManager. It never exits the JVM: a start it refuses ({@link Launcher}) fails with
     * a {@link RefusedStartException} whose message is the one line that says what to do; {@code --help} prints
     * the usage and returns.
     */
    public static void main(String[] args) throws Exception {
        JobSettings settings = parseSettings(args);
        if (settings == null) return;
        // the cluster's settings (the client's config.yaml and -D options; on the JobManager in application mode)
        ReadableConfig cluster =
                StreamExecutionEnvironment.getExecutionEnvironment().getConfiguration();
        Launcher launcher =
                Launcher.of(settings, Launcher.Place.ofCluster(cluster), "flink run -s <its checkpoint or savepoint>");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(launcher.settings(cluster));
        if (settings.parallelism != null) env.setParallelism(settings.parallelism);
        launcher.checkStart(env.getConfiguration().get(StateRecoveryOptions.SAVEPOINT_PATH), "flink run -s");
        launcher.assemble(env);
        env.execute("rollcount");
    }

    /**
     * The settings of {@code args}, made and checked once; null for {@code --help} (after printing the usage). A bad
     * option is a {@link RefusedStartException} of one line.
     */
    static JobSettings parseSettings(String[] args) {
        JobOptions options = new JobOptions();
        CommandLine cli = new CommandLine(options);
        cli.setCommandName("flink run job/target/rollcount-job.jar");
        cli.getCommandSpec()
                .usageMessage()
                .description(
                        "The Rollcount job: exact multi-resolution counts, uniques and trending into Redis and Kafka.");
        if (java.util.Arrays.asList(args).contains("--help")
                || java.util.Arrays.asList(args).contains("-h")) {
            cli.usage(System.out);
            return null;
        }
        try {
            return options.toSettings(cli.parseArgs(args));
        } catch (PoliciesException e) {
            throw new RefusedStartException(e.getMessage());
        } catch (CommandLine.ParameterException | IllegalArgumentException e) {
            throw new RefusedStartException(e.getMessage() + " (--help lists the options)");
        }
    }
}
