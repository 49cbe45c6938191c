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
 * A C baseline packaged with the command line: its source is copied into a temporary directory,
 * compiled, run, and GB/s per block size read from its output. A missing compiler, missing headers
 * or a failing program never throw; the result says why instead, and how to fix it.
 */
final class CompiledBaseline
{
    private static final long COMPILE_SECONDS = 120;
    // gcc's words for a header or library it cannot find
    private static final Pattern MISSING_DEPENDENCY = Pattern.compile("(?m)^.*(fatal error: .*No such file or directory|cannot find -l[\\w.+-]+).*$");

    /**
     * One C program.
     *
     * @param source the resource next to this class, e.g. {@code memcpy_stream.c}.
     * @param libraries linker arguments after the source, e.g. {@code -lucp}.
     * @param line the output line of one block size: group 1 the block bytes, group 2 the GB/s.
     * @param label what the program measures, e.g. {@code memcpy baseline}.
     * @param developmentPackage the Debian package with the headers and libraries it needs besides
     *     the C library, e.g. {@code libucx-dev}; empty when there is none.
     * @param runSeconds how long one run may take.
     */
    record Program(String source, List<String> libraries, Pattern line, String label, String developmentPackage, long runSeconds)
    {
        Program
        {
            requireNonNull(source, "source is null");
            libraries = List.copyOf(libraries);
            requireNonNull(line, "line is null");
            requireNonNull(label, "label is null");
            requireNonNull(developmentPackage, "developmentPackage is null");
        }

        String binaryName()
        {
            return source.replaceFirst("\\.c$", "");
        }
    }

    private CompiledBaseline()
    {
    }

    /**
     * Finds the directory of the native library a transport is told to bind, so that its baseline
     * links to and runs with the same file.
     *
     * @param property the transport's library property, naming a file or its directory.
     * @return the directory, or null when the property is unset and the linker's search decides.
     */
    static Path libraryDirectory(String property)
    {
        String configured = System.getProperty(property);
        if (configured == null || configured.isBlank()) {
            return null;
        }
        Path path = Path.of(configured).toAbsolutePath();
        return Files.isDirectory(path) ? path : path.getParent();
    }

    /**
     * Compiles and runs a program.
     *
     * @param program the program.
     * @param compiler the C compiler command, normally {@code gcc}.
     * @param arguments the program's arguments.
     * @param blockSizes the block sizes the output must give a figure for.
     * @return the figures, or the reason there are none.
     */
    static BaselineResult measure(Program program, String compiler, List<String> arguments, List<Long> blockSizes)
    {
        return measure(program, compiler, arguments, blockSizes, Map.of());
    }

    /**
     * Compiles and runs a program with extra environment variables, such as the directory of the
     * library it must load.
     *
     * @param environment added to this process's environment for the run (not the compile).
     */
    static BaselineResult measure(Program program, String compiler, List<String> arguments, List<Long> blockSizes, Map<String, String> environment)
    {
        return measureEach(program, compiler, arguments, blockSizes, environment, List.of(program.line())).getFirst();
    }

    /**
     * Compiles and runs a program that prints several series, such as one per operation, in one run.
     *
     * @param lines one pattern per series, as {@link Program#line()}: group 1 the block bytes, group 2 the GB/s.
     * @return one result per pattern, in their order; when the run failed, each says why.
     */
    static List<BaselineResult> measureEach(Program program, String compiler, List<String> arguments, List<Long> blockSizes, Map<String, String> environment,
            List<Pattern> lines)
    {
        requireNonNull(environment, "environment is null");
        requireNonNull(program, "program is null");
        requireNonNull(compiler, "compiler is null");
        requireNonNull(arguments, "arguments is null");
        requireNonNull(blockSizes, "blockSizes is null");
        requireNonNull(lines, "lines is null");
        Path directory = null;
        try {
            directory = Files.createTempDirectory("kvbridge-baseline");
            Compiled compiled = compile(program, compiler, directory);
            if (compiled.binary() == null) {
                return unavailable(lines, compiled.reason());
            }
            List<String> command = new ArrayList<>();
            command.add(compiled.binary().toString());
            command.addAll(arguments);
            Run measured = run(command, directory.resolve("run.log"), program.runSeconds(), environment);
            if (measured == null || measured.exitCode() != 0) {
                return unavailable(lines, program.binaryName() + " failed"
                        + (measured == null ? " to start" : " with exit code " + measured.exitCode() + ": " + measured.output().strip()));
            }
            List<BaselineResult> results = new ArrayList<>();
            for (Pattern line : lines) {
                Map<Long, Double> figures = new LinkedHashMap<>();
                Matcher matcher = line.matcher(measured.output());
                while (matcher.find()) {
                    figures.put(Long.parseLong(matcher.group(1)), Double.parseDouble(matcher.group(2)));
                }
                results.add(figures.keySet().containsAll(blockSizes) ? new BaselineResult(figures, "")
                        : BaselineResult.unavailable(program.binaryName() + " printed no figure for some block sizes: " + measured.output().strip()));
            }
            return results;
        }
        catch (IOException e) {
            return unavailable(lines, "could not prepare the " + program.label() + ": " + e.getMessage());
        }
        finally {
            deleteQuietly(directory);
        }
    }

    private static List<BaselineResult> unavailable(List<Pattern> lines, String reason)
    {
        return lines.stream().map(line -> BaselineResult.unavailable(reason)).toList();
    }

    /**
     * A program compiled and started in the background, such as the receiving end of a stream
     * between two hosts; {@link #close()} kills it if it still runs and removes its directory.
     */
    static final class Started implements AutoCloseable
    {
        private final Process process;
        private final Path log;
        private final Path directory;

        private Started(Process process, Path log, Path directory)
        {
            this.process = process;
            this.log = log;
            this.directory = directory;
        }

        /**
         * Waits for a line of the program's output.
         *
         * @param line what to find; its groups are what the caller reads.
         * @param timeoutMillis how long to wait.
         * @return the match, or null when the program ended or the time passed first.
         */
        Matcher await(Pattern line, long timeoutMillis) throws IOException
        {
            long deadline = System.nanoTime() + timeoutMillis * 1_000_000;
            while (true) {
                Matcher matcher = line.matcher(Files.readString(log, StandardCharsets.UTF_8));
                if (matcher.find()) {
                    return matcher;
                }
                if (!process.isAlive() || System.nanoTime() - deadline > 0) {
                    return null;
                }
                java.util.concurrent.locks.LockSupport.parkNanos(10_000_000L);
            }
        }

        /** {@return what the program printed so far} */
        String output() throws IOException
        {
            return Files.readString(log, StandardCharsets.UTF_8).strip();
        }

        @Override
        public void close()
        {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
            process.destroyForcibly();
            try {
                process.waitFor(5, TimeUnit.SECONDS);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            deleteQuietly(directory);
        }
    }

    /**
     * Compiles a program and starts it in the background.
     *
     * @param program the program.
     * @param compiler the C compiler command.
     * @param arguments the program's arguments.
     * @param reason receives why it could not start, when it could not.
     * @return the running program, or null.
     */
    static Started start(Program program, String compiler, List<String> arguments, StringBuilder reason)
    {
        return start(program, compiler, arguments, Map.of(), reason);
    }

    /**
     * Compiles a program and starts it in the background with extra environment variables.
     *
     * @param environment added to this process's environment for the run (not the compile).
     */
    static Started start(Program program, String compiler, List<String> arguments, Map<String, String> environment, StringBuilder reason)
    {
        Path directory = null;
        try {
            directory = Files.createTempDirectory("kvbridge-baseline");
            Compiled compiled = compile(program, compiler, directory);
            if (compiled.binary() == null) {
                reason.append(compiled.reason());
                deleteQuietly(directory);
                return null;
            }
            List<String> command = new ArrayList<>();
            command.add(compiled.binary().toString());
            command.addAll(arguments);
            Path log = directory.resolve("run.log");
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
            builder.environment().putAll(environment);
            Process process = builder.start();
            return new Started(process, log, directory);
        }
        catch (IOException e) {
            reason.append("could not start the ").append(program.label()).append(": ").append(e.getMessage());
            deleteQuietly(directory);
            return null;
        }
    }

    /** A compiled binary, or why there is none. */
    private record Compiled(Path binary, String reason)
    {
    }

    private static Compiled compile(Program program, String compiler, Path directory) throws IOException
    {
        Path source = directory.resolve(program.source());
        try (InputStream in = CompiledBaseline.class.getResourceAsStream(program.source())) {
            if (in == null) {
                return new Compiled(null, program.source() + " is not packaged with the command line; rebuild the examples module");
            }
            Files.copy(in, source);
        }
        Path binary = directory.resolve(program.binaryName());
        List<String> compile = new ArrayList<>(List.of(compiler, "-O2", "-o", binary.toString(), source.toString()));
        compile.addAll(program.libraries());
        Run compiled = run(compile, directory.resolve("compile.log"), COMPILE_SECONDS, Map.of());
        if (compiled == null) {
            String packages = program.developmentPackage().isEmpty() ? "gcc" : "gcc " + program.developmentPackage();
            return new Compiled(null, "C compiler " + compiler + " not found; install " + install(packages) + " to measure the " + program.label());
        }
        if (compiled.exitCode() != 0) {
            return new Compiled(null, compileFailure(program, compiler, compiled));
        }
        return new Compiled(binary, "");
    }

    private static String compileFailure(Program program, String compiler, Run compiled)
    {
        Matcher missing = MISSING_DEPENDENCY.matcher(compiled.output());
        if (!program.developmentPackage().isEmpty() && missing.find()) {
            return "compiler=" + compiler + " could not find what " + program.source() + " needs (" + missing.group(1).strip() + "); install "
                    + install(program.developmentPackage()) + " to measure the " + program.label();
        }
        return "compiler=" + compiler + " failed with exit code " + compiled.exitCode() + ": " + compiled.output().strip();
    }

    private static String install(String packages)
    {
        return packages.replace(" ", " and ") + " (apt-get install " + packages + ")";
    }

    private record Run(int exitCode, String output)
    {
    }

    /**
     * Runs a command to its end, or kills it with its children after the timeout; null when it
     * cannot be started at all. The output goes to a file, so a program that hangs cannot block the read.
     */
    private static Run run(List<String> command, Path log, long timeoutSeconds, Map<String, String> environment) throws IOException
    {
        Process process;
        try {
            ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
            builder.environment().putAll(environment);
            process = builder.start();
        }
        catch (IOException e) {
            return null;
        }
        try {
            if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                return new Run(-1, "timed out after " + timeoutSeconds + " s");
            }
            return new Run(process.exitValue(), new String(Files.readAllBytes(log), StandardCharsets.UTF_8));
        }
        catch (InterruptedException e) {
            process.descendants().forEach(ProcessHandle::destroyForcibly);
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
