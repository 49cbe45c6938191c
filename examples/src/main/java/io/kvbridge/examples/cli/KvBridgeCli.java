package io.kvbridge.examples.cli;

import io.kvbridge.spi.KvBridgeException;
import java.io.PrintWriter;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code kvbridge} command line. */
@Command(name = "kvbridge", mixinStandardHelpOptions = true, version = "kvbridge 0.1.0",
        description = "Moves LLM KV-cache blocks between prefill and decode engines.",
        subcommands = {PluginsCommand.class, DemoCommand.class, BenchCommand.class, InspectCommand.class, DemoWorkerCommand.class, ConfigCommand.class})
public final class KvBridgeCli implements Runnable
{
    @Override
    public void run()
    {
        new CommandLine(this).usage(System.out);
    }

    /**
     * Runs a command line and returns its exit code.
     *
     * @param out where normal output goes.
     * @param err where errors go.
     * @param args the arguments.
     * @return 0 on success.
     */
    public static int execute(PrintWriter out, PrintWriter err, String... args)
    {
        CommandLine commandLine = new CommandLine(new KvBridgeCli());
        commandLine.setOut(out);
        commandLine.setErr(err);
        commandLine.setExecutionExceptionHandler((exception, line, parseResult) -> {
            // typed errors are for the user: their message says what to fix, a stack trace would bury it
            if (exception instanceof KvBridgeException typed) {
                line.getErr().println("kvbridge: " + typed.getMessage());
                line.getErr().flush();
                return 2;
            }
            throw exception;
        });
        return commandLine.execute(args);
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
        System.exit(execute(out, err, args));
    }
}
