package io.kvbridge.testkit;

import static org.junit.jupiter.api.Assertions.fail;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A JVM started for a test with the test's class path, driven through lines that start with
 * {@link #PREFIX} on its standard input and output; its other output is kept in a transcript for
 * failure messages. A child can be stopped and continued with signals, for tests of a peer that
 * answers nothing, and killed. Children still alive when this JVM exits are killed by a shutdown
 * hook, so a test JVM that ends early leaves none behind.
 */
public final class ChildJvm
        implements AutoCloseable
{
    /** The start of every protocol line, both ways; the child prints and reads it too. */
    public static final String PREFIX = "KVB ";
    /** The JVM options a child gets by default: transports bind native libraries through the FFM API. */
    public static final List<String> NATIVE_ACCESS = List.of("--enable-native-access=ALL-UNNAMED");

    private static final String EOF = "\u0000eof";
    // a signal is delivered at once and SIGKILL cannot be caught: 30 s means something is wrong
    private static final long SIGNAL_SECONDS = 30;
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly), "kill-child-jvms"));
    }

    private final String name;
    private final Process process;
    private final PrintStream stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> transcript = Collections.synchronizedList(new ArrayList<>());

    private ChildJvm(String name, Process process)
    {
        this.name = name;
        this.process = process;
        this.stdin = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("child-stdout-" + name).start(() -> pump(process.getInputStream(), true));
        Thread.ofPlatform().daemon().name("child-stderr-" + name).start(() -> pump(process.getErrorStream(), false));
    }

    /**
     * Starts {@code mainClass} with arguments in a new JVM with the {@link #NATIVE_ACCESS} options.
     *
     * @param name label for messages.
     * @param mainClass class with a main method on the test class path.
     * @param args program arguments.
     * @return the running child.
     * @throws IOException when the JVM cannot be started.
     */
    public static ChildJvm start(String name, Class<?> mainClass, String... args) throws IOException
    {
        return start(name, NATIVE_ACCESS, mainClass, args);
    }

    /**
     * Starts {@code mainClass} with arguments in a new JVM with the given JVM options.
     *
     * @param name label for messages.
     * @param jvmOptions options placed before the class path; {@link #NATIVE_ACCESS} is not added.
     * @param mainClass class with a main method on the test class path.
     * @param args program arguments.
     * @return the running child.
     * @throws IOException when the JVM cannot be started.
     */
    public static ChildJvm start(String name, List<String> jvmOptions, Class<?> mainClass, String... args) throws IOException
    {
        return start(name, jvmOptions, Map.of(), mainClass, args);
    }

    /**
     * Starts {@code mainClass} in a new JVM with the given JVM options and environment additions.
     *
     * @param name label for messages.
     * @param jvmOptions options placed before the class path; {@link #NATIVE_ACCESS} is not added.
     * @param environment added to this process's environment, e.g. a native library's log level.
     * @param mainClass class with a main method on the test class path.
     * @param args program arguments.
     * @return the running child.
     * @throws IOException when the JVM cannot be started.
     */
    public static ChildJvm start(String name, List<String> jvmOptions, Map<String, String> environment, Class<?> mainClass, String... args)
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
        Process process = builder.start();
        LIVE.add(process);
        process.onExit().thenRun(() -> LIVE.remove(process));
        return new ChildJvm(name, process);
    }

    private void pump(InputStream stream, boolean stdout)
    {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                transcript.add((stdout ? "out: " : "err: ") + line);
                if (stdout && line.startsWith(PREFIX)) {
                    lines.add(line.substring(PREFIX.length()));
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
     * Waits for the next protocol line starting with {@code keyword}; lines before it are skipped.
     * Fails the test when the time runs out, the child exits first, or a line starting with
     * {@code ERROR} comes first.
     *
     * @param keyword first word expected.
     * @param timeout how long to wait.
     * @return the whole line, without the prefix.
     */
    public String expect(String keyword, Duration timeout)
    {
        return expect(keyword, timeout, new ArrayList<>());
    }

    /**
     * Waits for the next protocol line starting with {@code keyword}, collecting the lines skipped;
     * fails the test as {@link #expect(String, Duration)} does.
     *
     * @param keyword first word expected.
     * @param timeout how long to wait.
     * @param skipped receives the protocol lines that came before, without the prefix.
     * @return the whole line, without the prefix.
     */
    public String expect(String keyword, Duration timeout, List<String> skipped)
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
            skipped.add(line);
        }
    }

    /**
     * Sends a protocol line.
     *
     * @param line the line without the prefix.
     */
    public void send(String line)
    {
        stdin.println(PREFIX + line);
    }

    /**
     * Waits for the process to exit; fails the test when it still runs after the timeout.
     *
     * @param timeout how long to wait.
     * @return the exit code.
     * @throws InterruptedException when this thread is interrupted while waiting.
     */
    public int awaitExit(Duration timeout) throws InterruptedException
    {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            return fail(name + ": still running after " + timeout + "; transcript:\n" + transcript());
        }
        return process.exitValue();
    }

    /**
     * Stops the process, like {@code kill -STOP}: it keeps its sockets and memory but answers nothing.
     *
     * @throws IOException when the {@code kill} command cannot be started.
     * @throws InterruptedException when this thread is interrupted while waiting for it.
     */
    public void pause() throws IOException, InterruptedException
    {
        signal("STOP");
    }

    /**
     * Lets a paused process run again, like {@code kill -CONT}.
     *
     * @throws IOException when the {@code kill} command cannot be started.
     * @throws InterruptedException when this thread is interrupted while waiting for it.
     */
    public void resume() throws IOException, InterruptedException
    {
        signal("CONT");
    }

    private void signal(String signal) throws IOException, InterruptedException
    {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
        if (!kill.waitFor(SIGNAL_SECONDS, TimeUnit.SECONDS)) {
            kill.destroyForcibly();
            fail("kill -" + signal + " " + process.pid() + " still running after " + SIGNAL_SECONDS + " s");
        }
        if (kill.exitValue() != 0) {
            fail("kill -" + signal + " " + process.pid() + " failed with exit code " + kill.exitValue());
        }
    }

    /**
     * Kills the process at once with SIGKILL, which ends a stopped process too, and waits until it is
     * gone, its sockets closed by the kernel; fails the test when it is not gone in 30 seconds.
     *
     * @throws InterruptedException when this thread is interrupted while waiting.
     */
    public void kill() throws InterruptedException
    {
        process.destroyForcibly();
        if (!process.waitFor(SIGNAL_SECONDS, TimeUnit.SECONDS)) {
            fail(name + ": still running " + SIGNAL_SECONDS + " s after SIGKILL");
        }
    }

    /** {@return whether the process still runs} */
    public boolean isAlive()
    {
        return process.isAlive();
    }

    /** {@return the process id, e.g. for reading the child's threads from {@code /proc}} */
    public long pid()
    {
        return process.pid();
    }

    /** {@return every line the child printed so far, each marked {@code out:} or {@code err:}} */
    public String transcript()
    {
        synchronized (transcript) {
            return String.join("\n", transcript);
        }
    }

    /**
     * Kills the process if it still runs, and closes its standard input.
     *
     * @throws InterruptedException when this thread is interrupted while waiting for the process to go.
     */
    @Override
    public void close() throws InterruptedException
    {
        if (process.isAlive()) {
            kill();
        }
        stdin.close();
    }
}
