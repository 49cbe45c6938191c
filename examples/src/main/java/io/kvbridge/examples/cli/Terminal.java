package io.kvbridge.examples.cli;

import io.kvbridge.transport.libc.Errno;
import io.kvbridge.transport.libc.Libc;
import java.io.Console;
import java.lang.foreign.Arena;

/** Whether the process's standard error is a terminal, where progress may redraw one line with rate and ETA. */
final class Terminal
{
    private Terminal()
    {
    }

    /**
     * Asks the C library's {@code isatty(2)}: the console the JDK reports describes standard input and
     * output, which say nothing about standard error ({@code demo > file} keeps a terminal on stderr,
     * {@code demo 2> log} does not).
     *
     * @return whether standard error is a terminal; without native access, whether the JDK sees a console.
     */
    static boolean isStandardError()
    {
        try (Arena arena = Arena.ofConfined()) {
            return Libc.isatty(Libc.STDERR, new Errno(arena)) == 1;
        }
        catch (RuntimeException | LinkageError e) {
            // no native access (a JVM started without --enable-native-access) or no C library to bind:
            // the console is the next best answer
        }
        Console console = System.console();
        return console != null && console.isTerminal();
    }
}
