package io.kvbridge.examples.cli;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** One {@code kvbridge} command line in a child JVM, running while the test goes on: a bench target or initiator. */
final class BenchChild implements AutoCloseable
{
    /** How long a child may take to print a line awaited or to end. */
    static final long SECONDS = 60;
    private static final Pattern LISTENING = Pattern.compile("listening on 127\\.0\\.0\\.1:(\\d+)");

    final Process process;
    private final Path out;
    private final Path err;
    private final List<String> args;

    private BenchChild(Process process, Path out, Path err, List<String> args)
    {
        this.process = process;
        this.out = out;
        this.err = err;
        this.args = args;
    }

    static BenchChild start(Path directory, Map<String, String> environment, String... args) throws IOException
    {
        return start(directory, environment, List.of(), args);
    }

    /**
     * Starts the CLI in a child JVM on this test's class path.
     *
     * @param directory where its stdout and stderr are written.
     * @param environment variables added to this JVM's.
     * @param jvmArgs options of the child JVM, such as system properties.
     * @param args the command line.
     * @return the running child.
     */
    static BenchChild start(Path directory, Map<String, String> environment, List<String> jvmArgs, String... args) throws IOException
    {
        Files.createDirectories(directory);
        List<String> options = new ArrayList<>(List.of("-XX:TieredStopAtLevel=1"));
        options.addAll(jvmArgs);
        ProcessBuilder builder = ChildCli.builder(directory, options, args);
        builder.environment().putAll(environment);
        return new BenchChild(builder.start(), directory.resolve("out.txt"), directory.resolve("err.txt"), List.of(args));
    }

    /** {@return the port a target printed it listens on} */
    int port() throws IOException, InterruptedException
    {
        return Integer.parseInt(await(LISTENING).group(1));
    }

    /** {@return the first match of a pattern in the child's stderr, waiting for it while the child runs} */
    Matcher await(Pattern line) throws IOException, InterruptedException
    {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(SECONDS);
        while (System.nanoTime() - deadline < 0) {
            Matcher matcher = line.matcher(err());
            if (matcher.find()) {
                return matcher;
            }
            if (!process.isAlive()) {
                break;
            }
            Thread.sleep(20);
        }
        throw new AssertionError("no line " + line + " from " + describe());
    }

    /** {@return the exit code, failing the test when the child does not end in time} */
    int waitFor() throws IOException, InterruptedException
    {
        if (!process.waitFor(SECONDS, TimeUnit.SECONDS)) {
            throw new AssertionError("did not end within " + SECONDS + " s: " + describe());
        }
        return process.exitValue();
    }

    String out() throws IOException
    {
        return Files.readString(out, StandardCharsets.UTF_8);
    }

    String err() throws IOException
    {
        return Files.readString(err, StandardCharsets.UTF_8);
    }

    String describe() throws IOException
    {
        return "kvbridge " + String.join(" ", args) + "\nstdout: " + out() + "\nstderr: " + err();
    }

    @Override
    public void close() throws InterruptedException
    {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
    }
}
