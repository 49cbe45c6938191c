package io.kvbridge.examples.cli;

import io.kvbridge.core.config.Durations;
import io.kvbridge.core.config.Sizes;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParameterException;

/**
 * Checks of files, durations and sizes that commands make before any work starts, each refusing with
 * a usage error that names the option, the value, why and the fix.
 */
final class InputChecks
{
    private InputChecks()
    {
    }

    /** @return a usage error of the command with a formatted message. */
    static ParameterException refusal(CommandSpec spec, String format, Object... args)
    {
        return new ParameterException(spec.commandLine(), String.format(Locale.ROOT, format, args));
    }

    /** Refuses with a usage error unless {@code condition} holds. */
    static void check(CommandSpec spec, boolean condition, String format, Object... args)
    {
        if (!condition) {
            throw refusal(spec, format, args);
        }
    }

    /**
     * Reads {@code HOST:PORT} ({@code [v6]:PORT} too); the host is resolved when the socket is used.
     *
     * @param option names the value in the refusal, e.g. {@code --peer}.
     * @param portZero whether port 0 (any free port, for an address to listen on) is accepted.
     * @return the address.
     */
    static InetSocketAddress address(CommandSpec spec, String option, String text, boolean portZero)
    {
        int colon = text.lastIndexOf(':');
        try {
            int port = Integer.parseInt(text.substring(colon + 1));
            String host = text.substring(0, colon).replace("[", "").replace("]", "");
            if (colon <= 0 || port < (portZero ? 0 : 1) || port > 65535) {
                throw new NumberFormatException();
            }
            return new InetSocketAddress(host, port);
        }
        catch (NumberFormatException | StringIndexOutOfBoundsException e) {
            throw refusal(spec, "%s %s is not HOST:PORT with a port in [%d, 65535]; write for example 127.0.0.1:5600", option, text, portZero ? 0 : 1);
        }
    }

    /**
     * Checks that a duration lies in a range; waits longer than the maximum are refused rather than
     * left to overflow or to hang a command that was given an unbounded one by mistake.
     *
     * @return the duration.
     */
    static Duration within(CommandSpec spec, String option, Duration value, Duration min, Duration max)
    {
        if (value.compareTo(min) < 0 || value.compareTo(max) > 0) {
            // as the user wrote it: a huge ISO-8601 value reformatted would not be recognisable
            List<String> written = spec.findOption(option).originalStringValues();
            throw refusal(spec, "%s=%s is outside [%s, %s]; give a duration such as 5s", option,
                    written.isEmpty() ? Durations.format(value) : written.getLast(), Durations.format(min), Durations.format(max));
        }
        return value;
    }

    /**
     * Reads a small file whole, refusing one that is missing, not a regular file (a directory, a device
     * such as {@code /dev/zero}, a pipe), unreadable or larger than {@code maxBytes}; never reads more
     * than {@code maxBytes + 1} bytes, so a file that grows meanwhile cannot exhaust memory either.
     *
     * @return the file's bytes.
     */
    static byte[] readSmallFile(CommandSpec spec, String option, Path file, int maxBytes)
    {
        check(spec, Files.exists(file), "%s=%s does not exist; give the path of an existing file", option, file);
        check(spec, Files.isRegularFile(file), "%s=%s is not a regular file (a directory, device or pipe); give the path of a file", option, file);
        check(spec, Files.isReadable(file), "%s=%s cannot be read by this user; fix its permissions", option, file);
        byte[] bytes;
        try (InputStream in = Files.newInputStream(file)) {
            bytes = in.readNBytes(maxBytes + 1);
        }
        catch (IOException e) {
            throw refusal(spec, "%s=%s cannot be read: %s", option, file, e.getMessage());
        }
        check(spec, bytes.length <= maxBytes, "%s=%s is larger than %s, more than this option ever needs; give the right file", option, file,
                Sizes.format(maxBytes));
        return bytes;
    }

    /**
     * Checks, without creating anything, that a file can be written: an existing one must be a writable
     * regular file; otherwise the nearest existing ancestor must be a writable directory (the missing
     * ones are created when the file is written).
     */
    static void checkWritable(CommandSpec spec, String option, Path file)
    {
        Path absolute = file.toAbsolutePath().normalize();
        if (Files.exists(absolute)) {
            check(spec, Files.isRegularFile(absolute) && Files.isWritable(absolute), "%s=%s exists and is not a writable regular file; choose another path",
                    option, file);
            return;
        }
        Path ancestor = absolute.getParent();
        while (ancestor != null && !Files.exists(ancestor)) {
            ancestor = ancestor.getParent();
        }
        check(spec, ancestor != null && Files.isDirectory(ancestor) && Files.isWritable(ancestor),
                "%s=%s cannot be created: %s is not a writable directory; choose a path in one", option, file, ancestor);
    }

    /**
     * Memory this machine can give a run without swapping: Linux's {@code MemAvailable} (free plus
     * what the page cache would give back), else the free memory the JVM reports.
     *
     * @return the bytes, or empty when neither is known.
     */
    static OptionalLong availableMemory()
    {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/meminfo"))) {
                if (line.startsWith("MemAvailable:")) {
                    return OptionalLong.of(Long.parseLong(line.replaceAll("\\D", "")) * 1024);
                }
            }
        }
        catch (IOException | NumberFormatException e) {
            // not Linux, or a kernel without the field: the JVM's figure below
        }
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean system) {
            return OptionalLong.of(system.getFreeMemorySize());
        }
        return OptionalLong.empty();
    }
}
