package io.kvbridge.testkit;

import static java.util.Objects.requireNonNull;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A real etcd server for tests: the {@code etcd} binary (Debian's {@code etcd-server} package,
 * {@code /usr/bin/etcd}, or the path in {@code -Dkvbridge.etcd.binary}) on free loopback ports with
 * a data directory of its own. It can be stopped (SIGTERM), killed (SIGKILL) and started again on
 * the same ports and data, which is what outage tests need.
 */
public final class EtcdServer
        implements AutoCloseable
{
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(20);

    private final Path binary;
    private final Path dataDir;
    private final Path log;
    private final int clientPort;
    private final int peerPort;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();
    private Process process;

    private EtcdServer(Path binary, Path dataDir, int clientPort, int peerPort)
    {
        this.binary = binary;
        this.dataDir = dataDir;
        this.log = dataDir.resolveSibling(dataDir.getFileName() + ".log");
        this.clientPort = clientPort;
        this.peerPort = peerPort;
    }

    /** {@return the etcd binary tests use: {@code -Dkvbridge.etcd.binary}, else {@code /usr/bin/etcd}} */
    public static Path binary()
    {
        return Path.of(System.getProperty("kvbridge.etcd.binary", "/usr/bin/etcd"));
    }

    /** Skips the calling test, with the reason, when the etcd binary is not installed. */
    public static void assumeInstalled()
    {
        Assumptions.assumeTrue(Files.isExecutable(binary()), () -> "no etcd binary at " + binary()
                + ": install Debian's etcd-server package (apt-get install -y etcd-server) or set -Dkvbridge.etcd.binary");
    }

    /**
     * Starts etcd on free loopback ports and waits until it reports healthy.
     *
     * @param workDir a directory of the test's; the data directory and log are made in it.
     * @return the running server.
     */
    public static EtcdServer start(Path workDir)
    {
        assumeInstalled();
        EtcdServer server = new EtcdServer(binary(), requireNonNull(workDir, "workDir is null").resolve("etcd-data"), freePort(), freePort());
        server.start();
        return server;
    }

    /** Starts the server again on the same ports and data directory, after {@link #stop()} or {@link #kill()}. */
    public synchronized void start()
    {
        if (process != null && process.isAlive()) {
            return;
        }
        String client = "http://127.0.0.1:" + clientPort;
        String peer = "http://127.0.0.1:" + peerPort;
        List<String> command = List.of(binary.toString(), "--name", "kvbridge-test", "--data-dir", dataDir.toString(),
                "--listen-client-urls", client, "--advertise-client-urls", client,
                "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
                "--initial-cluster", "kvbridge-test=" + peer, "--initial-cluster-state", "new",
                "--log-level", "warn");
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        }
        catch (IOException e) {
            throw new UncheckedIOException("cannot start " + binary, e);
        }
        long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
        while (!healthy()) {
            if (!process.isAlive() || System.nanoTime() - deadline > 0) {
                String output = tail();
                process.destroyForcibly();
                throw new IllegalStateException("etcd did not become healthy on 127.0.0.1:" + clientPort + " within " + READY_TIMEOUT + ": " + output);
            }
            sleep(20);
        }
    }

    private boolean healthy()
    {
        try {
            HttpResponse<String> response = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + clientPort + "/health"))
                    .timeout(Duration.ofMillis(500)).build(), HttpResponse.BodyHandlers.ofString());
            return response.statusCode() == 200 && response.body().contains("true");
        }
        catch (IOException e) {
            return false;
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Stops the server with SIGTERM and waits for it (SIGKILL after 10 s). */
    public synchronized void stop()
    {
        if (process != null && process.isAlive()) {
            process.destroy();
            waitFor();
        }
    }

    /** Kills the server with SIGKILL, as a crash would. */
    public synchronized void kill()
    {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            waitFor();
        }
    }

    private void waitFor()
    {
        try {
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** {@return the client endpoint, {@code 127.0.0.1:port}} */
    public String endpoint()
    {
        return "127.0.0.1:" + clientPort;
    }

    /** {@return the discovery location of this server, {@code etcd://127.0.0.1:port}} */
    public String location()
    {
        return "etcd://" + endpoint();
    }

    /** Stops the server. */
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
            return "(log unreadable: " + e + ")";
        }
    }

    private static int freePort()
    {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress("127.0.0.1", 0));
            return socket.getLocalPort();
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void sleep(long millis)
    {
        try {
            Thread.sleep(millis);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for etcd", e);
        }
    }
}
