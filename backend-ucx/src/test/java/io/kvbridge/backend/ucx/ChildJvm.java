package io.kvbridge.backend.ucx;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A JVM started for a test with the test's class path and native access enabled, driven through
 * {@code KVB} lines on stdin and stdout. Other output is kept for failure messages.
 */
final class ChildJvm implements AutoCloseable
{
    private static final String EOF = "\u0000eof";

    private final String name;
    private final Process process;
    private final PrintStream stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> transcript = java.util.Collections.synchronizedList(new ArrayList<>());

    private ChildJvm(String name, Process process)
    {
        this.name = name;
        this.process = process;
        this.stdin = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("child-stdout-" + name).start(() -> pump(new BufferedReader(
                new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8)), true));
        Thread.ofPlatform().daemon().name("child-stderr-" + name).start(() -> pump(new BufferedReader(
                new InputStreamReader(process.getErrorStream(), StandardCharsets.UTF_8)), false));
    }

    /** The JVM options a child gets by default: the transport binds UCX through the FFM API. */
    static final List<String> NATIVE_ACCESS = List.of("--enable-native-access=ALL-UNNAMED");

    /**
     * Starts {@code mainClass} with arguments in a new JVM with native access enabled.
     *
     * @param name label for messages.
     * @param mainClass class with a main method on the test class path.
     * @param args program arguments.
     * @return the running child.
     * @throws IOException when the JVM cannot be started.
     */
    static ChildJvm start(String name, Class<?> mainClass, String... args) throws IOException
    {
        return start(name, NATIVE_ACCESS, mainClass, args);
    }

    /**
     * Starts {@code mainClass} with arguments in a new JVM with the given JVM options.
     *
     * @param name label for messages.
     * @param jvmOptions options placed before the class path.
     * @param mainClass class with a main method on the test class path.
     * @param args program arguments.
     * @return the running child.
     * @throws IOException when the JVM cannot be started.
     */
    static ChildJvm start(String name, List<String> jvmOptions, Class<?> mainClass, String... args) throws IOException
    {
        return start(name, jvmOptions, Map.of(), mainClass, args);
    }

    /**
     * Starts {@code mainClass} in a new JVM with the given JVM options and environment additions.
     *
     * @param name label for messages.
     * @param jvmOptions options placed before the class path.
     * @param environment added to this process's environment, e.g. {@code UCX_LOG_LEVEL}.
     * @param mainClass class with a main method on the test class path.
     * @param args program arguments.
     * @return the running child.
     * @throws IOException when the JVM cannot be started.
     */
    static ChildJvm start(String name, List<String> jvmOptions, Map<String, String> environment, Class<?> mainClass, String... args)
            throws IOException
    {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.add("-cp");
        // surefire runs tests from a manifest-only jar; it publishes the real class path separately
        command.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
        command.add(mainClass.getName());
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().putAll(environment);
        return new ChildJvm(name, builder.start());
    }

    private void pump(BufferedReader reader, boolean stdout)
    {
        try (reader) {
            String line;
            while ((line = reader.readLine()) != null) {
                transcript.add((stdout ? "out: " : "err: ") + line);
                if (stdout && line.startsWith(TransferProcess.PREFIX)) {
                    lines.add(line.substring(TransferProcess.PREFIX.length()));
                }
            }
        }
        catch (IOException e) {
            transcript.add("read failed: " + e);
        }
        finally {
            if (stdout) {
                lines.add(EOF);
            }
        }
    }

    /**
     * Waits for the next protocol line starting with {@code keyword}, skipping others.
     *
     * @param keyword first word expected.
     * @param timeout how long to wait.
     * @return the whole line (without the prefix).
     */
    String expect(String keyword, Duration timeout)
    {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            long left = deadline - System.nanoTime();
            String line;
            try {
                line = left <= 0 ? null : lines.poll(left, TimeUnit.NANOSECONDS);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                line = null;
            }
            if (line == null) {
                return fail(name + ": no '" + keyword + "' line within " + timeout + "; transcript:\n" + transcript());
            }
            if (line.equals(EOF)) {
                return fail(name + ": exited before printing '" + keyword + "'; transcript:\n" + transcript());
            }
            if (line.startsWith(keyword)) {
                return line;
            }
            if (line.startsWith("ERROR")) {
                return fail(name + ": " + line + "; transcript:\n" + transcript());
            }
        }
    }

    /**
     * Sends a protocol line.
     *
     * @param line without the prefix.
     */
    void send(String line)
    {
        stdin.println(TransferProcess.PREFIX + line);
    }

    /**
     * Waits for the process to exit.
     *
     * @param timeout how long to wait.
     * @return the exit code.
     */
    int awaitExit(Duration timeout) throws InterruptedException
    {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            return fail(name + ": still running after " + timeout + "; transcript:\n" + transcript());
        }
        return process.exitValue();
    }

    /** Stops the process, like {@code kill -STOP}: it keeps its sockets and memory but answers nothing. */
    void pause() throws IOException, InterruptedException
    {
        signal("STOP");
    }

    /** Lets a paused process run again. */
    void resume() throws IOException, InterruptedException
    {
        signal("CONT");
    }

    private void signal(String name) throws IOException, InterruptedException
    {
        Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid())).inheritIO().start();
        if (kill.waitFor() != 0) {
            fail("kill -" + name + " " + process.pid() + " failed with exit code " + kill.exitValue());
        }
    }

    /** Kills the process at once, like {@code kill -9}. */
    void kill() throws InterruptedException
    {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    /** @return whether the process still runs. */
    boolean isAlive()
    {
        return process.isAlive();
    }

    /** @return the process id, for reading the child's threads from {@code /proc}. */
    long pid()
    {
        return process.pid();
    }

    String transcript()
    {
        synchronized (transcript) {
            return String.join("\n", transcript);
        }
    }

    @Override
    public void close() throws InterruptedException
    {
        if (process.isAlive()) {
            kill();
        }
    }
}
