package io.rollcount.cli;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import picocli.CommandLine;

/** One {@code rollcount} command run in this JVM as {@code Main} runs it: its exit code and what it printed. */
record CliRun(int code, String out, String err) {

    /** Runs {@code command} (a command object, e.g. a {@code RunCommand}) with {@code args}, its out and err captured. */
    static CliRun of(Object command, String... args) {
        return of(new CommandLine(command), args);
    }

    /** Runs {@code cli} with {@code args}, its out and err captured (System.out and System.err are left alone). */
    static CliRun of(CommandLine cli, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        cli.setOut(new PrintWriter(out, true));
        cli.setErr(new PrintWriter(err, true));
        int code = cli.execute(args);
        return new CliRun(code, out.toString(), err.toString());
    }

    /** Runs {@code rollcount args...} as {@code Main} does, standard output and error captured (and restored after). */
    static CliRun run(String... args) {
        PrintStream out = System.out;
        PrintStream err = System.err;
        ByteArrayOutputStream o = new ByteArrayOutputStream();
        ByteArrayOutputStream e = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(o, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(e, true, StandardCharsets.UTF_8));
            CommandLine cli = Main.commandLine();
            cli.setErr(new PrintWriter(System.err, true));
            int code = cli.execute(args);
            return new CliRun(code, o.toString(StandardCharsets.UTF_8), e.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(out);
            System.setErr(err);
        }
    }
}
