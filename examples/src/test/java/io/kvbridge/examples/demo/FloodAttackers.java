package io.kvbridge.examples.demo;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * A flood of connections from {@link FloodProcess} child JVMs, as many as the test's own limit on
 * open files requires: each attacker holds at most {@value #MOST_PER_PROCESS} connections (or what
 * that limit leaves, less a margin), so that a flood of any size runs without raising a limit the
 * test does not own. Every target gets its connections from every attacker, interleaved, from the
 * start.
 */
final class FloodAttackers implements AutoCloseable
{
    private static final int MOST_PER_PROCESS = 10_000;
    // descriptors an attacker JVM keeps for everything but its connections: its jars, pipes and selector
    private static final int DESCRIPTOR_MARGIN = 400;
    private static final int THREADS_PER_PROCESS = 2;
    // more JVMs than this would cost the test more than the flood itself
    private static final int MOST_PROCESSES = 8;
    private static final long OPEN_SECONDS = 180;
    private static final String ENDED = "\0ended";

    private final List<String> targets;
    private final List<Process> processes = new ArrayList<>();
    // per attacker, the lines it printed, read by a thread of its own
    private final List<BlockingQueue<String>> outputs = new ArrayList<>();
    private final boolean[] opened;
    private final long[] connected;
    private final long[] failed;
    private final long[] shed;
    private final long[] closedByEngine;

    /**
     * Starts the attackers; {@link #opened} says when every connection is open or failed.
     *
     * @param targets {@code tcp:PORT} or {@code unix:NAME} each.
     * @param counts connections per target.
     * @param sources loopback source addresses TCP connections come from.
     */
    FloodAttackers(List<String> targets, int[] counts, int sources) throws IOException
    {
        this.targets = List.copyOf(targets);
        this.connected = new long[targets.size()];
        this.failed = new long[targets.size()];
        this.shed = new long[targets.size()];
        this.closedByEngine = new long[targets.size()];
        long total = 0;
        for (int count : counts) {
            total += count;
        }
        int perProcess = (int) Math.min(MOST_PER_PROCESS, hardOpenFilesLimit() - DESCRIPTOR_MARGIN);
        assertTrue(perProcess > 0, "the hard limit on open files leaves no room for a flood");
        int attackers = (int) ((total + perProcess - 1) / perProcess);
        assertTrue(attackers <= MOST_PROCESSES, "a flood of " + total + " connections would take " + attackers + " attacker JVMs of " + perProcess
                + " connections each under this JVM's hard limit on open files (" + hardOpenFilesLimit() + "); raise it (ulimit -Hn) to at least "
                + (MOST_PER_PROCESS + DESCRIPTOR_MARGIN));
        this.opened = new boolean[attackers];
        for (int a = 0; a < attackers; a++) {
            List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx160m",
                    "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "--enable-native-access=ALL-UNNAMED", "-cp",
                    System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")), FloodProcess.class.getName(),
                    Integer.toString(THREADS_PER_PROCESS), Integer.toString(sources)));
            for (int t = 0; t < counts.length; t++) {
                // the a-th attacker's share of the target's connections
                int share = counts[t] / attackers + (a < counts[t] % attackers ? 1 : 0);
                command.add(targets.get(t) + "=" + share);
            }
            Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.INHERIT).start();
            processes.add(process);
            BlockingQueue<String> lines = new LinkedBlockingQueue<>();
            outputs.add(lines);
            BufferedReader output = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
            Thread.ofPlatform().daemon().name("flood-attacker-" + a).start(() -> {
                try {
                    for (String line = output.readLine(); line != null; line = output.readLine()) {
                        lines.add(line);
                    }
                }
                catch (IOException e) {
                    // the attacker ended
                }
                lines.add(ENDED);
            });
        }
        System.out.printf(Locale.ROOT, "engine flood: %d connections from %d attacker processes of at most %d each%n", total, attackers, perProcess);
    }

    /** {@return whether every attacker opened its connections (adding up what each reports); waits for nothing} */
    boolean opened()
    {
        boolean all = true;
        for (int a = 0; a < processes.size(); a++) {
            for (String line = outputs.get(a).poll(); !opened[a] && line != null; line = outputs.get(a).poll()) {
                assertTrue(!line.equals(ENDED), "attacker " + a + " ended before its flood was open: " + exit(a));
                String[] fields = line.split(" ");
                if (fields[0].equals("TARGET")) {
                    int t = Integer.parseInt(fields[1]);
                    connected[t] += Long.parseLong(fields[2]);
                    failed[t] += Long.parseLong(fields[3]);
                    shed[t] += Long.parseLong(fields[4]);
                }
                opened[a] = fields[0].equals("OPENED");
            }
            all &= opened[a];
        }
        return all;
    }

    /** Asks every attacker, once all opened, how many of the connections it holds the engines have closed by now. */
    void census() throws InterruptedException
    {
        Arrays.fill(closedByEngine, 0);
        for (Process process : processes) {
            PrintWriter command = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
            command.println("census");
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(OPEN_SECONDS);
        for (int a = 0; a < processes.size(); a++) {
            while (true) {
                String line = outputs.get(a).poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                assertTrue(line != null && !line.equals(ENDED), "attacker " + a + " ended or timed out during its census: " + exit(a));
                if (line.equals("CENSUS")) {
                    break;
                }
                String[] fields = line.split(" ");
                closedByEngine[Integer.parseInt(fields[1])] += Long.parseLong(fields[2]);
            }
        }
    }

    private String exit(int attacker)
    {
        Process process = processes.get(attacker);
        return process.isAlive() ? "still running" : "exit " + process.exitValue();
    }

    long connected()
    {
        long sum = 0;
        for (long count : connected) {
            sum += count;
        }
        return sum;
    }

    long connectedTo(int target)
    {
        return connected[target];
    }

    /** {@return connections to a target the engine closed while they were held, as of the last census} */
    long refusedBy(int target)
    {
        return closedByEngine[target];
    }

    String report(List<String> owners)
    {
        List<String> lines = new ArrayList<>();
        for (int t = 0; t < targets.size(); t++) {
            lines.add(String.format(Locale.ROOT, "%s %s: %d connected, %d failed, %d shed before their garbage, %d closed by the engine while held",
                    owners.get(t), targets.get(t), connected[t], failed[t], shed[t], closedByEngine[t]));
        }
        return String.join("; ", lines);
    }

    /** Closes the attackers' standard input, which resets their connections, and waits for them to end. */
    @Override
    public void close() throws InterruptedException
    {
        for (Process process : processes) {
            try {
                process.getOutputStream().close();
            }
            catch (IOException e) {
                // it ended already
            }
        }
        for (Process process : processes) {
            if (!process.waitFor(OPEN_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        }
    }

    /** {@return this JVM's hard limit on open files, which the attackers it starts inherit} */
    static long hardOpenFilesLimit() throws IOException
    {
        for (String line : Files.readAllLines(Path.of("/proc/self/limits"))) {
            if (line.startsWith("Max open files")) {
                String value = line.substring("Max open files".length()).trim().split("\\s+")[1];
                return value.equals("unlimited") ? Integer.MAX_VALUE : Long.parseLong(value);
            }
        }
        return Integer.MAX_VALUE;
    }
}
