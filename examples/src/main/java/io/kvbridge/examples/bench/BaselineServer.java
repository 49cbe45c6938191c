package io.kvbridge.examples.bench;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The serving end of a C baseline between two hosts (the TCP stream's receiver, the UCX probe's
 * target), running in the background until its peer is done or it is closed. Either it listens
 * ({@link #available()}, on {@link #port()}) or {@link #reason()} says why not.
 */
public final class BaselineServer implements AutoCloseable
{
    private static final long LISTEN_MILLIS = 60_000;

    private final CompiledBaseline.Started started;
    private final int port;
    private final String reason;

    private BaselineServer(CompiledBaseline.Started started, int port, String reason)
    {
        this.started = started;
        this.port = port;
        this.reason = reason;
    }

    /**
     * Compiles and starts a program that prints the port it listens on; never throws for a missing
     * compiler or a failing start, it says why instead.
     *
     * @param program the program.
     * @param compiler the C compiler command.
     * @param arguments its arguments, which make it listen.
     * @param environment added to this process's environment for the run.
     * @param listening its line that says the port, as group 1.
     * @param host the address it listens on, for the reason it does not.
     * @return the server.
     */
    static BaselineServer start(CompiledBaseline.Program program, String compiler, List<String> arguments, Map<String, String> environment,
            Pattern listening, String host)
    {
        StringBuilder reason = new StringBuilder();
        CompiledBaseline.Started started = CompiledBaseline.start(program, compiler, arguments, environment, reason);
        if (started == null) {
            return new BaselineServer(null, 0, reason.toString());
        }
        try {
            Matcher listens = started.await(listening, LISTEN_MILLIS);
            if (listens == null) {
                String output = started.output();
                started.close();
                return new BaselineServer(null, 0, program.binaryName() + " did not listen on " + host + ": " + (output.isEmpty() ? "no output" : output));
            }
            return new BaselineServer(started, Integer.parseInt(listens.group(1)), "");
        }
        catch (IOException e) {
            started.close();
            return new BaselineServer(null, 0, program.binaryName() + "'s output could not be read: " + e.getMessage());
        }
    }

    /**
     * A server that did not start.
     *
     * @param reason why.
     * @return the server.
     */
    static BaselineServer unavailable(String reason)
    {
        return new BaselineServer(null, 0, reason);
    }

    /** {@return whether it listens} */
    public boolean available()
    {
        return reason.isEmpty();
    }

    /** {@return the port it listens on; 0 when it does not} */
    public int port()
    {
        return port;
    }

    /** {@return why it does not listen; empty when it does} */
    public String reason()
    {
        return reason;
    }

    /** {@return the address and port a C program takes: {@code [v6]:port} or {@code host:port}} */
    static String hostPort(String host, int port)
    {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    @Override
    public void close()
    {
        if (started != null) {
            started.close();
        }
    }
}
