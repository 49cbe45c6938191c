package io.kvbridge.netlab;

import java.util.List;

/**
 * An external command ({@code ip}, {@code tc}, etcd) that failed or did not finish in time; the
 * message names the command, its exit code and what it wrote to stderr.
 */
public final class HostCommandException extends RuntimeException
{
    private static final long serialVersionUID = 1L;

    /** {@link #exitCode()} of a command that did not finish within its deadline, or could not start. */
    public static final int NO_EXIT_CODE = -1;

    private final transient List<String> command;
    private final int exitCode;
    private final String stderr;

    /**
     * @param command the command line.
     * @param exitCode its exit code, or {@link #NO_EXIT_CODE}.
     * @param stderr what it wrote to stderr, or why it has no exit code.
     */
    public HostCommandException(List<String> command, int exitCode, String stderr)
    {
        super("'" + String.join(" ", command) + "' " + (exitCode == NO_EXIT_CODE ? "failed" : "exited with code " + exitCode) + ": "
                + (stderr.isBlank() ? "(no output on stderr)" : stderr.strip()));
        this.command = List.copyOf(command);
        this.exitCode = exitCode;
        this.stderr = stderr;
    }

    /** {@return the command line} */
    public List<String> command()
    {
        return command;
    }

    /** {@return the exit code, or {@link #NO_EXIT_CODE} when the command did not finish or start} */
    public int exitCode()
    {
        return exitCode;
    }

    /** {@return what the command wrote to stderr} */
    public String stderr()
    {
        return stderr;
    }
}
