package io.kvbridge.netlab;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Runs short external commands with a deadline; a failure is a {@link HostCommandException}. */
final class HostCommands
{
    /** Enough for any {@code ip} or {@code tc} call, even on a loaded machine. */
    public static final Duration DEFAULT_DEADLINE = Duration.ofSeconds(10);

    private HostCommands()
    {
    }

    /**
     * Runs a command within {@link #DEFAULT_DEADLINE}.
     *
     * @param command the command line.
     * @return what it wrote to stdout.
     * @throws HostCommandException when it cannot start, exits with another code than 0, or runs past the deadline.
     */
    public static String run(String... command)
    {
        return run(DEFAULT_DEADLINE, List.of(command));
    }

    /**
     * Runs a command within a deadline.
     *
     * @param deadline how long it may take; it is killed after that.
     * @param command the command line.
     * @return what it wrote to stdout.
     * @throws HostCommandException when it cannot start, exits with another code than 0, or runs past the deadline.
     */
    public static String run(Duration deadline, List<String> command)
    {
        Process process;
        try {
            process = new ProcessBuilder(command).redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
        }
        catch (IOException e) {
            throw new HostCommandException(command, HostCommandException.NO_EXIT_CODE, "cannot start it: " + e.getMessage());
        }
        // both pipes drained at once, so that a chatty command never blocks on a full one
        CompletableFuture<String> stdout = CompletableFuture.supplyAsync(() -> read(process.getInputStream()), Thread::startVirtualThread);
        CompletableFuture<String> stderr = CompletableFuture.supplyAsync(() -> read(process.getErrorStream()), Thread::startVirtualThread);
        try {
            if (!process.waitFor(deadline.toNanos(), TimeUnit.NANOSECONDS)) {
                process.destroyForcibly();
                throw new HostCommandException(command, HostCommandException.NO_EXIT_CODE, "did not finish within " + deadline.toMillis() + " ms");
            }
            String errors = stderr.get(1, TimeUnit.SECONDS);
            if (process.exitValue() != 0) {
                throw new HostCommandException(command, process.exitValue(), errors);
            }
            return stdout.get(1, TimeUnit.SECONDS);
        }
        catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new HostCommandException(command, HostCommandException.NO_EXIT_CODE, "interrupted while waiting for it");
        }
        catch (ExecutionException | TimeoutException e) {
            throw new HostCommandException(command, process.exitValue(), "its output could not be read: " + e.getMessage());
        }
    }

    private static String read(InputStream stream)
    {
        try (stream) {
            return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
