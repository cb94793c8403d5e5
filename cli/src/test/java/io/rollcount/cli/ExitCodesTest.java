package io.rollcount.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The contract's exit codes for every command of {@code ./rollcount}: an unknown option is one line and a pointer to
 * the command's help, exit 2; a value a command refuses is one line, exit 2. Nothing starts.
 */
class ExitCodesTest {
    private static final List<String> COMMANDS =
            List.of("run", "demo", "query", "top", "produce", "generate", "rebuild-redis", "bench", "chaos", "kafka");

    @Test
    void anUnknownOptionIsOneLineAHintAndExitCode2ForEveryCommand() {
        for (String command : COMMANDS) {
            // query and top take a counter or a namespace first
            String[] args = command.equals("query") || command.equals("top")
                    ? new String[] {command, "post:1", "--nosuch"}
                    : new String[] {command, "--nosuch"};
            CliRun r = CliRun.of(Main.commandLine(), args);
            assertThat(r.code()).as(command).isEqualTo(2);
            // the first problem picocli finds: the unknown option, or a required option missing before it
            List<String> lines = r.err().strip().lines().toList();
            assertThat(lines).as(command).hasSize(2);
            assertThat(lines.get(0)).as(command).matches("rollcount: (Unknown option: '--nosuch'|Missing required .*)");
            assertThat(lines.get(1)).isEqualTo("try './rollcount " + command + " --help'");
            assertThat(r.out()).as(command).isEmpty();
        }
    }

    @Test
    void aValueACommandRefusesIsOneLineAndExitCode2() {
        for (List<String> args : List.of(
                List.of("query", "post:1:likes", "--res", "2m"),
                List.of("top", "post", "--res", "5s"),
                List.of("run", "--input", "in.jsonl", "--trending.half-life", "0s"),
                List.of("rebuild-redis", "--kafka.bootstrap", "127.0.0.1:1", "--from", "yesterday"))) {
            CliRun r = CliRun.of(Main.commandLine(), args.toArray(String[]::new));
            assertThat(r.code()).as(args.toString()).isEqualTo(2);
            assertThat(r.err().strip())
                    .as(args.toString())
                    .startsWith("rollcount")
                    .doesNotContain("\n");
        }
    }
}
