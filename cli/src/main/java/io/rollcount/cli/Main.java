package io.rollcount.cli;

import io.rollcount.job.RefusedStartException;
import io.rollcount.job.util.Messages;
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

    /** Exit code of a usage error: an unknown or malformed option, a value a command refuses, a bad file. */
    static final int EXIT_USAGE = 2;
    /** Exit code of a failure at run time. */
    static final int EXIT_FAILURE = 1;

    /**
     * The command line of {@code ./rollcount} with the contract's exit codes: an unknown or malformed option is one
     * line and a pointer to the command's help, exit 2; an error of a command is one line, exit 2 where it refuses a
     * value or a file ({@link IllegalArgumentException}, which the option checks throw) or a start
     * ({@link RefusedStartException}), else 1.
     */
    static CommandLine commandLine() {
        CommandLine cli = new CommandLine(new Main());
        cli.setParameterExceptionHandler((ex, args) -> {
            CommandLine c = ex.getCommandLine();
            c.getErr().println("rollcount: " + Messages.oneLine(ex));
            c.getErr().println("try './" + c.getCommandSpec().qualifiedName() + " --help'");
            c.getErr().flush();
            return EXIT_USAGE;
        });
        cli.setExecutionExceptionHandler((ex, commandLine, parseResult) -> {
            commandLine.getErr().println("rollcount: " + Messages.oneLine(ex));
            return exitCodeOf(ex);
        });
        return cli;
    }

    /**
     * 2 for a refused value or file ({@link IllegalArgumentException}: the options' checks) or a refused start
     * ({@link RefusedStartException}), 1 for any other failure.
     */
    static int exitCodeOf(Throwable ex) {
        return ex instanceof IllegalArgumentException || ex instanceof RefusedStartException
                ? EXIT_USAGE
                : EXIT_FAILURE;
    }
}
