package io.kvbridge.examples.cli;

import io.kvbridge.spi.KvBridgeException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * The {@code kvbridge} command line. Exit codes: 0 success, 1 a runtime failure (a peer, a transport,
 * an audit that failed), 2 a usage error (a refused value, an unknown option, no command), which is
 * reported in one line naming the value, why and the fix, followed by a pointer to {@code --help}.
 */
@Command(name = "kvbridge", mixinStandardHelpOptions = true, versionProvider = KvBridgeCli.Version.class,
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:success", "1:a runtime failure (a peer, a transport, a failed audit)", "2:a usage error (a refused value or option)"},
        description = "Moves LLM KV-cache blocks between prefill and decode engines.",
        subcommands = {PluginsCommand.class, DemoCommand.class, BenchCommand.class, InspectCommand.class, DemoWorkerCommand.class, ConfigCommand.class})
public final class KvBridgeCli implements Callable<Integer>
{
    /** The version the build stamped into the jar's manifest, as Maven names it ({@code 0.1.0-SNAPSHOT}). */
    static final class Version implements CommandLine.IVersionProvider
    {
        @Override
        public String[] getVersion()
        {
            String version = KvBridgeCli.class.getPackage().getImplementationVersion();
            return new String[] {"kvbridge " + (version == null ? "(version unknown: not run from the built jar)" : version)};
        }
    }

    /** Exit code of a runtime failure. */
    public static final int FAILED = 1;
    /** Exit code of a usage error. */
    public static final int USAGE = 2;

    @Spec
    private CommandSpec spec;

    private final boolean errIsTerminal;

    private KvBridgeCli(boolean errIsTerminal)
    {
        this.errIsTerminal = errIsTerminal;
    }

    /** @return whether the error stream is a terminal, so that progress may redraw one line. */
    boolean errIsTerminal()
    {
        return errIsTerminal;
    }

    @Override
    public Integer call()
    {
        // no command is a usage error: the usage goes where errors go, so that `kvbridge > file` stays empty
        spec.commandLine().usage(spec.commandLine().getErr());
        return USAGE;
    }

    /**
     * Runs a command line and returns its exit code.
     *
     * @param out where normal output goes.
     * @param err where errors and progress go; never a terminal.
     * @param args the arguments.
     * @return 0 on success, 1 on a runtime failure, 2 on a usage error.
     */
    public static int execute(PrintWriter out, PrintWriter err, String... args)
    {
        return execute(out, err, false, args);
    }

    private static int execute(PrintWriter out, PrintWriter err, boolean errIsTerminal, String... args)
    {
        CommandLine commandLine = commandLine(errIsTerminal);
        commandLine.setOut(out);
        commandLine.setErr(err);
        commandLine.setParameterExceptionHandler(ErrorLines::report);
        commandLine.setExecutionExceptionHandler((exception, line, parseResult) -> {
            // typed errors and I/O failures are for the user: their message says what to fix, a stack trace would bury it
            if (exception instanceof KvBridgeException || exception instanceof UncheckedIOException) {
                line.getErr().println(ErrorLines.prefix(line) + ErrorLines.oneLine(exception.getMessage()));
                line.getErr().flush();
                return FAILED;
            }
            throw exception;
        });
        return commandLine.execute(args);
    }

    /** @return the command line with its converters, for running and for generating completion scripts. */
    static CommandLine commandLine(boolean errIsTerminal)
    {
        CommandLine commandLine = new CommandLine(new KvBridgeCli(errIsTerminal));
        commandLine.addSubcommand(new CompletionCommand());
        // every command takes -V from mixinStandardHelpOptions: each prints the build's version, not an empty line
        versionEverywhere(commandLine, new Version());
        commandLine.registerConverter(Duration.class, new ParsedTextConverter.DurationConverter());
        // the last of a repeated option wins, as scripts that append an override expect
        commandLine.setOverwrittenOptionsAllowed(true);
        // an argument starting with @ is a value (demo --kv-transfer-config @FILE names a document), not a file of arguments to split
        commandLine.setExpandAtFiles(false);
        return commandLine;
    }

    private static void versionEverywhere(CommandLine commandLine, CommandLine.IVersionProvider version)
    {
        commandLine.getCommandSpec().versionProvider(version);
        commandLine.getSubcommands().values().forEach(subcommand -> versionEverywhere(subcommand, version));
    }

    /**
     * Entry point.
     *
     * @param args the arguments.
     */
    public static void main(String[] args)
    {
        PrintWriter out = new PrintWriter(System.out, true);
        PrintWriter err = new PrintWriter(System.err, true);
        System.exit(execute(out, err, Terminal.isStandardError(), args));
    }
}
