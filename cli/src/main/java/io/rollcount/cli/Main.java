package io.rollcount.cli;

import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** {@code ./rollcount}: the command line of contract section 5. */
@Command(
        name = "rollcount",
        mixinStandardHelpOptions = true,
        version = "rollcount 0.1.0",
        description = "Exact, multi-resolution counting on Apache Flink, with Redis-native uniques and trending.",
        subcommands = {
            DemoCommand.class,
            RunCommand.class,
            QueryCommand.class,
            TopCommand.class,
            GenerateCommand.class,
            ProduceCommand.class,
            RebuildRedisCommand.class,
            io.rollcount.bench.BenchCommand.class,
            io.rollcount.chaos.ChaosCommand.class,
            io.rollcount.job.kafka.KafkaBroker.Cli.class,
            CommandLine.HelpCommand.class
        })
public final class Main implements Callable<Integer> {

    @Override
    public Integer call() {
        new CommandLine(this).usage(System.out);
        return 0;
    }

    public static void main(String[] args) {
        RunTempFolder.manage();
        System.exit(commandLine().execute(args));
    }

    /** The command line of {@code ./rollcount}: an error of a command is one line, exit code 1 (2: a bad {@code --policies} file, nothing started). */
    static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new Main());
        cli.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("rollcount: " + oneLine(ex));
            return ex instanceof io.rollcount.job.policy.PoliciesException ? 2 : 1;
        });
        return cli;
    }

    /** The message of an error and of its causes, on one line, without stack traces. */
    public static String oneLine(Throwable t) {
        StringBuilder sb = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            String m = c.getMessage();
            if (m == null || m.isBlank()) continue;
            if (sb.length() > 0) {
                if (sb.indexOf(m) >= 0) continue;
                sb.append(": ");
            }
            sb.append(m.replace('\n', ' '));
            if (sb.length() > 400) break;
        }
        return sb.length() == 0 ? t.getClass().getSimpleName() : sb.toString();
    }
}
