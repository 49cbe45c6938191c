package io.kvbridge.examples.bench;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The single-thread memcpy baseline: {@code memcpy_stream.c} (packaged with the command line) is
 * compiled into a temporary directory and run over the same total and block sizes as the transports.
 */
public final class MemcpyBaseline
{
    private static final String SOURCE = "memcpy_stream.c";
    private static final Pattern LINE = Pattern.compile("memcpy chunk=(\\d+) best-of-5 [0-9.]+ ms per GiB = ([0-9.]+) GB/s");
    private static final long COMPILE_SECONDS = 120;
    private static final long RUN_SECONDS = 300;

    /**
     * What the baseline measured, or why it could not.
     *
     * @param gigabytesPerSecond GB/s per block size, in the order measured; empty when unavailable.
     * @param reason why there is no baseline; empty when there is one.
     */
    public record Result(Map<Long, Double> gigabytesPerSecond, String reason)
    {
        public Result
        {
            gigabytesPerSecond = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(requireNonNull(gigabytesPerSecond, "gigabytesPerSecond is null")));
            requireNonNull(reason, "reason is null");
        }

        public boolean available()
        {
            return reason.isEmpty();
        }
    }

    private MemcpyBaseline()
    {
    }

    /**
     * Compiles and runs the baseline; never throws for a missing or failing compiler, it says why instead.
     *
     * @param compiler the C compiler command, normally {@code gcc}.
     * @param totalBytes bytes streamed per block size.
     * @param blockSizes the block sizes.
     * @return the figures, or the reason there are none.
     */
    public static Result measure(String compiler, long totalBytes, List<Long> blockSizes)
    {
        requireNonNull(compiler, "compiler is null");
        requireNonNull(blockSizes, "blockSizes is null");
        Path directory = null;
        try {
            directory = Files.createTempDirectory("kvbridge-memcpy");
            Path source = directory.resolve(SOURCE);
            try (InputStream in = MemcpyBaseline.class.getResourceAsStream(SOURCE)) {
                if (in == null) {
                    return unavailable(SOURCE + " is not packaged with the command line; rebuild the examples module");
                }
                Files.copy(in, source);
            }
            Path binary = directory.resolve("memcpy_stream");
            Run compile = run(List.of(compiler, "-O2", "-o", binary.toString(), source.toString()), COMPILE_SECONDS);
            if (compile == null) {
                return unavailable("C compiler " + compiler + " not found; install gcc (apt-get install gcc) to measure the memcpy baseline");
            }
            if (compile.exitCode() != 0) {
                return unavailable("compiler=" + compiler + " failed with exit code " + compile.exitCode() + ": " + compile.output().strip());
            }
            List<String> command = new ArrayList<>(List.of(binary.toString(), "--total=" + totalBytes));
            blockSizes.forEach(size -> command.add(Long.toString(size)));
            Run measured = run(command, RUN_SECONDS);
            if (measured == null || measured.exitCode() != 0) {
                return unavailable("memcpy_stream failed" + (measured == null ? "" : " with exit code " + measured.exitCode() + ": " + measured.output().strip()));
            }
            Map<Long, Double> figures = new LinkedHashMap<>();
            Matcher matcher = LINE.matcher(measured.output());
            while (matcher.find()) {
                figures.put(Long.parseLong(matcher.group(1)), Double.parseDouble(matcher.group(2)));
            }
            if (!figures.keySet().containsAll(blockSizes)) {
                return unavailable("memcpy_stream printed no figure for some block sizes: " + measured.output().strip());
            }
            return new Result(figures, "");
        }
        catch (IOException e) {
            return unavailable("could not prepare the memcpy baseline: " + e.getMessage());
        }
        finally {
            deleteQuietly(directory);
        }
    }

    private static Result unavailable(String reason)
    {
        return new Result(Map.of(), reason);
    }

    private record Run(int exitCode, String output)
    {
    }

    /** Runs a command to its end; null when the program cannot be started at all. */
    private static Run run(List<String> command, long timeoutSeconds) throws IOException
    {
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).start();
        }
        catch (IOException e) {
            return null;
        }
        try {
            byte[] output = process.getInputStream().readAllBytes();
            if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return new Run(-1, "timed out after " + timeoutSeconds + " s");
            }
            return new Run(process.exitValue(), new String(output, StandardCharsets.UTF_8));
        }
        catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while running " + command.getFirst(), e);
        }
    }

    private static void deleteQuietly(Path directory)
    {
        if (directory == null) {
            return;
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException | UncheckedIOException e) {
            // a leftover temporary directory is harmless
        }
    }
}
