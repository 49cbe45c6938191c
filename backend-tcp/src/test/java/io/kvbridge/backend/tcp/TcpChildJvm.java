package io.kvbridge.backend.tcp;

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
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A JVM started for a test with the test's class path, driven through {@code KVB} lines on stdin
 * and stdout; other output is kept for failure messages. Children still alive when this JVM exits
 * are killed by a shutdown hook, so a test JVM that ends early leaves none behind.
 */
final class TcpChildJvm implements AutoCloseable
{
    private static final String EOF = "\u0000eof";
    // light children: they share the machine with the test JVM, which measures its own CPU time
    private static final List<String> JVM_OPTIONS = List.of("--enable-native-access=ALL-UNNAMED", "-Xmx128m", "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1");
    private static final Set<Process> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(Process::destroyForcibly), "kill-child-jvms"));
    }

    private final String name;
    private final Process process;
    private final PrintStream stdin;
    private final BlockingQueue<String> lines = new LinkedBlockingQueue<>();
    private final List<String> transcript = Collections.synchronizedList(new ArrayList<>());

    private TcpChildJvm(String name, Process process)
    {
        this.name = name;
        this.process = process;
        this.stdin = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("child-stdout-" + name).start(() -> pump(process.getInputStream(), true));
        Thread.ofPlatform().daemon().name("child-stderr-" + name).start(() -> pump(process.getErrorStream(), false));
    }

    /**
     * Starts {@code mainClass} with arguments in a new JVM on this JVM's class path.
     *
     * @param name label for messages.
     * @param mainClass class with a main method on the test class path.
     * @param args program arguments.
     * @return the running child.
     * @throws IOException when the JVM cannot be started.
     */
    static TcpChildJvm start(String name, Class<?> mainClass, String... args) throws IOException
    {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(JVM_OPTIONS);
        command.add("-cp");
        // surefire runs tests from a manifest-only jar; it publishes the real class path separately
        command.add(System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")));
        command.add(mainClass.getName());
        command.addAll(List.of(args));
        Process process = new ProcessBuilder(command).start();
        LIVE.add(process);
        process.onExit().thenRun(() -> LIVE.remove(process));
        return new TcpChildJvm(name, process);
    }

    private void pump(InputStream stream, boolean stdout)
    {
        try (BufferedReader reader = new BufferedReader(new InputStreamReader(stream, StandardCharsets.UTF_8))) {
            String line;
            while ((line = reader.readLine()) != null) {
                transcript.add((stdout ? "out: " : "err: ") + line);
                if (stdout && line.startsWith(TcpPeerProcess.PREFIX)) {
                    lines.add(line.substring(TcpPeerProcess.PREFIX.length()));
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
     *
     * @param keyword first word expected.
     * @param timeout how long to wait.
     * @return the whole line (without the prefix).
     */
    String expect(String keyword, Duration timeout)
    {
        return expect(keyword, timeout, new ArrayList<>());
    }

    /**
     * Waits for the next protocol line starting with {@code keyword}, collecting the lines skipped.
     *
     * @param keyword first word expected.
     * @param timeout how long to wait.
     * @param skipped receives the protocol lines that came before.
     * @return the whole line (without the prefix).
     */
    String expect(String keyword, Duration timeout, List<String> skipped)
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
     * @param line without the prefix.
     */
    void send(String line)
    {
        stdin.println(TcpPeerProcess.PREFIX + line);
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

    /** Stops the process, like {@code kill -STOP}: its sockets stay open, it answers nothing. */
    void pause() throws IOException, InterruptedException
    {
        signal("STOP");
    }

    /** Lets a stopped process run again. */
    void resume() throws IOException, InterruptedException
    {
        signal("CONT");
    }

    private void signal(String signal) throws IOException, InterruptedException
    {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).inheritIO().start();
        if (!kill.waitFor(30, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            kill.destroyForcibly();
            fail("kill -" + signal + " " + process.pid() + " failed");
        }
    }

    /** Kills the process at once with SIGKILL and waits until it is gone (its sockets closed by the kernel). */
    void kill() throws InterruptedException
    {
        process.destroyForcibly();
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
            fail(name + ": still running 30 s after SIGKILL");
        }
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
            // SIGKILL ends a stopped process too
            kill();
        }
        stdin.close();
    }
}
