package io.kvbridge.examples.cli;

import java.io.Console;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Optional;

/** Whether the process's standard error is a terminal, where progress may redraw one line with rate and ETA. */
final class Terminal
{
    private static final int STANDARD_ERROR = 2;

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
        try {
            Linker linker = Linker.nativeLinker();
            Optional<MethodHandle> isatty = linker.defaultLookup().find("isatty")
                    .map(symbol -> linker.downcallHandle(symbol, FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT)));
            if (isatty.isPresent()) {
                return (int) isatty.get().invokeExact(STANDARD_ERROR) == 1;
            }
        }
        catch (Throwable e) {
            // no native access (a JVM started without --enable-native-access): the console is the next best answer
        }
        Console console = System.console();
        return console != null && console.isTerminal();
    }
}
