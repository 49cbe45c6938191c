package io.kvbridge.netlab;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The user-space delay and loss of one cable, for kernels without netem: {@code frame_relay.c}
 * (packaged next to this class, compiled with {@code gcc} once per JVM) run in the switch
 * namespace, relaying frames between the switch's end of the cable and a TAP device it creates.
 * It ends when {@link #close() closed}, when its TAP or port is deleted, and when this JVM is gone
 * (its stdin ends); a killed JVM's relays die with it, and {@link #removeLeftoverDirectories()}
 * deletes the binaries such JVMs left.
 */
final class FrameRelay implements AutoCloseable
{
    static final String SOURCE = "frame_relay.c";
    private static final String DIRECTORY_PREFIX = "kvbridge-relay-";
    private static final String COMPILER = "gcc";
    private static final Duration COMPILE_DEADLINE = Duration.ofSeconds(120);
    private static final Duration READY_DEADLINE = Duration.ofSeconds(10);
    private static final Duration REPORT_DEADLINE = Duration.ofSeconds(5);
    private static final Duration STOP_DEADLINE = Duration.ofSeconds(5);
    private static final Pattern READY = Pattern.compile("(?m)^frame_relay ready .*$");
    private static final String DIRECTION = " received=(\\d+) forwarded=(\\d+) forwarded_bytes=(\\d+) lost=(\\d+) overflowed=(\\d+) failed=(\\d+) truncated=(\\d+) queued=(\\d+)";
    private static final AtomicInteger RELAYS = new AtomicInteger();
    private static Path binary;
    private static RuntimeException compileFailure;

    private final List<String> command;
    private final Process process;
    private final OutputStream commands;
    private final Path log;
    private int reports;

    private FrameRelay(List<String> command, Process process, Path log)
    {
        this.command = command;
        this.process = process;
        this.commands = process.getOutputStream();
        this.log = log;
    }

    /**
     * Starts a relay and waits until its TAP exists.
     *
     * @param launcher the command prefix that enters the switch namespace.
     * @param port the switch's end of the cable.
     * @param tap the TAP device to create.
     * @param delayMillis each direction's delay.
     * @param lossPercent each direction's loss, 0 to 100.
     * @return the running relay.
     * @throws HostCommandException when it cannot be compiled, or it exits or stays silent before it is ready.
     */
    static FrameRelay start(List<String> launcher, String port, String tap, int delayMillis, double lossPercent)
    {
        List<String> command = new ArrayList<>(launcher);
        Path program = binary();
        command.addAll(List.of(program.toString(), port, tap, Integer.toString(delayMillis), String.format(Locale.ROOT, "%.6f", lossPercent), "--watch-stdin"));
        Path log = program.resolveSibling("relay-" + tap + "-" + RELAYS.incrementAndGet() + ".log");
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        }
        catch (IOException e) {
            throw new HostCommandException(command, HostCommandException.NO_EXIT_CODE, "cannot start it: " + e.getMessage());
        }
        FrameRelay relay = new FrameRelay(List.copyOf(command), process, log);
        if (relay.await(READY, READY_DEADLINE) == null) {
            HostCommandException failure = relay.failure(process.isAlive()
                    ? "did not say it was ready within " + READY_DEADLINE.toMillis() + " ms: " + relay.output() : relay.output());
            relay.close();
            throw failure;
        }
        return relay;
    }

    /**
     * {@return what the relay counted until now}
     *
     * @throws HostCommandException when it has ended or does not answer in time.
     */
    RelayCounters counters()
    {
        int number = ++reports;
        try {
            commands.write(("report " + number + "\n").getBytes(StandardCharsets.US_ASCII));
            commands.flush();
        }
        catch (IOException e) {
            throw failure("cannot be asked for its counters: " + e.getMessage() + "; it printed: " + output());
        }
        Matcher report = await(reportLine(Integer.toString(number)), REPORT_DEADLINE);
        if (report == null) {
            throw failure("did not report its counters within " + REPORT_DEADLINE.toMillis() + " ms: " + output());
        }
        return counters(report);
    }

    /** Stops the relay (SIGTERM, then SIGKILL after a deadline); its TAP goes with it. Calling it again does nothing. */
    @Override
    public void close()
    {
        try {
            commands.close();
        }
        catch (IOException e) {
            // the relay is gone already
        }
        process.destroy();
        try {
            if (!process.waitFor(STOP_DEADLINE.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly();
                process.waitFor(STOP_DEADLINE.toMillis(), TimeUnit.MILLISECONDS);
            }
        }
        catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
        try {
            Files.deleteIfExists(log);
        }
        catch (IOException e) {
            // removed with the directory at exit
        }
    }

    /**
     * Runs the relay for a moment on a veth pair in a namespace made for the check: it compiles,
     * and the kernel lets it create a TAP device and relay through an AF_PACKET socket.
     *
     * @param namespace the check's namespace.
     * @throws HostCommandException naming the command that failed.
     */
    static void probe(String namespace)
    {
        List<String> launcher = List.of("ip", "netns", "exec", namespace);
        List<String> veth = new ArrayList<>(launcher);
        veth.addAll(List.of("ip", "link", "add", "probe0", "up", "type", "veth", "peer", "name", "probe1"));
        HostCommands.run(HostCommands.DEFAULT_DEADLINE, veth);
        try (FrameRelay relay = start(launcher, "probe0", "probetap0", 1, 1)) {
            relay.counters();
        }
    }

    private HostCommandException failure(String why)
    {
        return new HostCommandException(command, process.isAlive() ? HostCommandException.NO_EXIT_CODE : process.exitValue(), why);
    }

    private static Pattern reportLine(String number)
    {
        return Pattern.compile("(?m)^frame_relay report=" + Pattern.quote(number) + " to_bridge" + DIRECTION + " to_host" + DIRECTION + "$");
    }

    private static RelayCounters counters(Matcher report)
    {
        return new RelayCounters(direction(report, 1), direction(report, 9));
    }

    private static RelayCounters.Direction direction(Matcher report, int first)
    {
        long[] values = new long[8];
        for (int i = 0; i < values.length; i++) {
            values[i] = Long.parseLong(report.group(first + i));
        }
        return new RelayCounters.Direction(values[0], values[1], values[2], values[3], values[4], values[5], values[6], values[7]);
    }

    /** The first match of a line in the relay's output, or null once it ended or the deadline passed without one. */
    private Matcher await(Pattern line, Duration deadline)
    {
        long end = System.nanoTime() + deadline.toNanos();
        while (true) {
            boolean ended = !process.isAlive();
            Matcher matcher = line.matcher(output());
            if (matcher.find()) {
                return matcher;
            }
            if (ended || System.nanoTime() - end > 0) {
                return null;
            }
            LockSupport.parkNanos(5_000_000L);
        }
    }

    private String output()
    {
        try {
            return Files.readString(log, StandardCharsets.UTF_8).strip();
        }
        catch (IOException e) {
            return "(its output " + log + " cannot be read: " + e.getMessage() + ")";
        }
    }

    /**
     * Compiles the relay on first use; later calls return the same binary.
     *
     * @return the binary, in a directory of this JVM's that is deleted when it exits.
     * @throws HostCommandException when {@code gcc} is missing or fails, naming the command; later
     *     calls throw the same without trying again.
     */
    static synchronized Path binary()
    {
        if (binary != null) {
            return binary;
        }
        if (compileFailure != null) {
            throw compileFailure;
        }
        try {
            binary = compile();
            return binary;
        }
        catch (RuntimeException e) {
            compileFailure = e;
            throw e;
        }
    }

    private static Path compile()
    {
        try {
            Path directory = Files.createTempDirectory(DIRECTORY_PREFIX + ProcessHandle.current().pid() + "-");
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(directory), "frame-relay-cleanup"));
            Path source = directory.resolve(SOURCE);
            try (InputStream in = FrameRelay.class.getResourceAsStream(SOURCE)) {
                if (in == null) {
                    throw new IllegalStateException(SOURCE + " is not packaged next to " + FrameRelay.class.getName() + "; rebuild the netlab module");
                }
                Files.copy(in, source);
            }
            Path program = directory.resolve(SOURCE.replaceFirst("\\.c$", ""));
            List<String> compile = List.of(COMPILER, "-O2", "-o", program.toString(), source.toString());
            try {
                HostCommands.run(COMPILE_DEADLINE, compile);
            }
            catch (HostCommandException e) {
                if (e.exitCode() == HostCommandException.NO_EXIT_CODE && e.stderr().startsWith("cannot start it")) {
                    throw new HostCommandException(compile, e.exitCode(), e.stderr() + "; install gcc (apt-get install gcc)");
                }
                throw e;
            }
            return program;
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot prepare " + SOURCE + " in " + System.getProperty("java.io.tmpdir") + ": " + e.getMessage(), e);
        }
    }

    /**
     * Deletes the relay directories ({@code kvbridge-relay-<pid>-...} in the temporary directory)
     * of JVMs that no longer run: what killed runs left.
     */
    static void removeLeftoverDirectories()
    {
        Pattern ours = Pattern.compile(Pattern.quote(DIRECTORY_PREFIX) + "(\\d{1,9})-.*");
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(Path.of(System.getProperty("java.io.tmpdir")), DIRECTORY_PREFIX + "*")) {
            for (Path entry : entries) {
                Matcher matcher = ours.matcher(entry.getFileName().toString());
                if (matcher.matches() && !ProcessHandle.of(Long.parseLong(matcher.group(1))).map(ProcessHandle::isAlive).orElse(false)) {
                    deleteTree(entry);
                }
            }
        }
        catch (IOException e) {
            // a leftover directory of a few kilobytes is harmless
        }
    }

    private static void deleteTree(Path directory)
    {
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (IOException | UncheckedIOException e) {
            // a leftover temporary directory is harmless
        }
    }
}
