package io.kvbridge.netlab;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A real etcd (Debian's {@code etcd-server}, {@code /usr/bin/etcd}, or {@code -Dkvbridge.etcd.binary})
 * serving clients on one {@link VirtualHosts} host's address, with a data directory of its own. It
 * can be stopped (SIGTERM), killed and started again on the same address and data, as outage tests
 * need. It is ready when {@code /health} answers healthy, asked from inside its host (the root
 * namespace has no route there).
 */
public final class HostEtcd implements AutoCloseable
{
    /** The client port, the same in every host: each has a port space of its own. */
    public static final int CLIENT_PORT = 2379;
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(20);

    private final VirtualHosts.Host host;
    private final Path binary;
    private final Path dataDir;
    private final Path log;
    private Process process;

    private HostEtcd(VirtualHosts.Host host, Path binary, Path workDir)
    {
        this.host = host;
        this.binary = binary;
        this.dataDir = workDir.resolve("data");
        this.log = workDir.resolve("etcd.log");
    }

    /** {@return the etcd binary: {@code -Dkvbridge.etcd.binary}, else {@code /usr/bin/etcd}} */
    public static Path binary()
    {
        return Path.of(System.getProperty("kvbridge.etcd.binary", "/usr/bin/etcd"));
    }

    /** {@return why etcd cannot be started here, or empty when it can} */
    public static Optional<String> unavailability()
    {
        return Files.isExecutable(binary()) ? Optional.empty()
                : Optional.of("no etcd binary at " + binary() + ": install Debian's etcd-server package (apt-get install -y etcd-server) "
                        + "or set -Dkvbridge.etcd.binary");
    }

    /**
     * Starts etcd in a host and waits until it is healthy.
     *
     * @param host where it runs.
     * @param workDir an empty directory of the caller's, for the data directory and log; the caller removes it.
     * @return the running server.
     * @throws HostCommandException when it does not become healthy in time.
     */
    public static HostEtcd start(VirtualHosts.Host host, Path workDir)
    {
        HostEtcd etcd = new HostEtcd(requireNonNull(host, "host is null"), binary(), requireNonNull(workDir, "workDir is null"));
        etcd.start();
        return etcd;
    }

    /** {@return the discovery location, {@code etcd://ADDRESS:2379}} */
    public String location()
    {
        return "etcd://" + host.address() + ":" + CLIENT_PORT;
    }

    /** {@return the host etcd runs in} */
    public VirtualHosts.Host host()
    {
        return host;
    }

    /** {@return the etcd process, while it runs} */
    public synchronized Process process()
    {
        return process;
    }

    /**
     * Starts etcd again on the same address and data after {@link #stop} or {@link #kill}; does
     * nothing while it runs.
     *
     * @throws HostCommandException when it does not become healthy within 20 s.
     */
    public synchronized void start()
    {
        if (process != null && process.isAlive()) {
            return;
        }
        String client = "http://" + host.address() + ":" + CLIENT_PORT;
        // peers only on the host's loopback: a one-member cluster talks to no one
        String peer = "http://127.0.0.1:2380";
        List<String> command = new ArrayList<>(host.launcher());
        command.addAll(List.of(binary.toString(), "--name", "kvbridge-hosts", "--data-dir", dataDir.toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client, "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "kvbridge-hosts=" + peer, "--initial-cluster-state", "new", "--log-level", "warn"));
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        }
        catch (IOException e) {
            throw new HostCommandException(command, HostCommandException.NO_EXIT_CODE, "cannot start it: " + e.getMessage());
        }
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        while (!answersFrom(host)) {
            if (!process.isAlive() || System.nanoTime() - deadline > 0) {
                process.destroyForcibly();
                throw new HostCommandException(command, process.isAlive() ? HostCommandException.NO_EXIT_CODE : process.exitValue(),
                        "etcd did not become healthy at " + client + " within " + READY_TIMEOUT.toMillis() + " ms; its log ends: " + tail());
            }
            try {
                Thread.sleep(50);
            }
            catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                process.destroyForcibly();
                throw new HostCommandException(command, HostCommandException.NO_EXIT_CODE, "interrupted while waiting for etcd to become healthy");
            }
        }
    }

    /**
     * Asks etcd's {@code /health} from a host, through bash's {@code /dev/tcp} so that nothing but
     * bash is needed there; at most 3 s.
     *
     * @param client the host that asks, such as etcd's own.
     * @return whether etcd answered healthy.
     */
    public boolean answersFrom(VirtualHosts.Host client)
    {
        String request = "exec 3<>/dev/tcp/" + host.address() + "/" + CLIENT_PORT + " && printf 'GET /health HTTP/1.0\\r\\n\\r\\n' >&3 && timeout 2 cat <&3";
        List<String> command = new ArrayList<>(client.launcher());
        command.addAll(List.of("bash", "-c", request));
        try {
            String answer = HostCommands.run(Duration.ofSeconds(3), command);
            return answer.contains(" 200 ") && answer.contains("\"health\":\"true\"");
        }
        catch (HostCommandException e) {
            return false;
        }
    }

    /** Stops etcd with SIGTERM and waits for it (SIGKILL after 10 s). */
    public synchronized void stop()
    {
        if (process != null && process.isAlive()) {
            process.destroy();
            awaitExit();
        }
    }

    /** Kills etcd with SIGKILL, as a crash would. */
    public synchronized void kill()
    {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            awaitExit();
        }
    }

    private void awaitExit()
    {
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops etcd; its data directory and log stay in the caller's directory. */
    @Override
    public void close()
    {
        stop();
    }

    private String tail()
    {
        try {
            String text = Files.exists(log) ? Files.readString(log) : "";
            return text.length() <= 2_000 ? text : text.substring(text.length() - 2_000);
        }
        catch (IOException e) {
            return "(log unreadable: " + e.getMessage() + ")";
        }
    }
}
