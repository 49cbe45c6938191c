package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.testkit.NativeFakes;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code kvbridge bench --role target|initiator} as two real processes on loopback: the target in
 * one child JVM, the initiator in another, over {@code ucx}; and what is refused before anything
 * starts.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
final class TwoProcessBenchTest
{
    @TempDir
    Path directory;

    @ParameterizedTest(name = "UCX_TLS={0}")
    @ValueSource(strings = {"tcp", "default"})
    void initiatorReadsAndWritesTheTargetAndReportsPrepareAndPostAndTransferApart(String tls) throws Exception
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        Map<String, String> environment = tls.equals("default") ? Map.of() : Map.of("UCX_TLS", tls);
        // the baselines' C programs once, over TCP, where the stream between the processes is the wire UCX fills
        Path compiler = tls.equals("default") ? directory.resolve("no-such-gcc") : Path.of("gcc");
        // both JVMs start at once: the initiator keeps trying to connect until the target listens, within its --timeout
        int port = freePort();
        // UCX's tcp transport, chosen through UCX_TLS, is opened only with the opt-in
        String lane = "ucx.allow-unchecked-tcp-lane=" + environment.containsKey("UCX_TLS");
        try (BenchChild target = BenchChild.start(directory.resolve("target"), environment, "bench", "--role", "target", "--listen", "127.0.0.1:" + port,
                "--total-bytes", "2MiB", "--timeout", "60s", "--cc", compiler.toString(), "--transport-option", lane)) {
            try (BenchChild initiator = BenchChild.start(directory.resolve("initiator"), environment, "bench", "--role", "initiator", "--peer", "127.0.0.1:" + port,
                    "--total-bytes", "2MiB", "--block-sizes", "256KiB", "--batch", "2", "--json", "--timeout", "20s", "--cc", compiler.toString(),
                    "--transport-option", lane)) {
                assertEquals(0, initiator.waitFor(), initiator.describe());
                assertEquals(0, target.waitFor(), target.describe());
                JsonNode result = new ObjectMapper().readTree(initiator.out());
                assertEquals("initiator", result.get("role").asText());
                assertEquals(2, result.get("batch").asInt());
                Set<String> measured = new HashSet<>();
                for (JsonNode row : result.get("rows")) {
                    long block = row.get("blockBytes").asLong();
                    measured.add(row.get("op").asText() + " " + block);
                    assertEquals((2L << 20) / block / 2, row.get("transfers").asLong(), row.toString());
                    assertTrue(row.get("gbPerSecond").asDouble() > 0, row.toString());
                    assertTrue(row.get("prepareMicros").asDouble() > 0, row.toString());
                    assertTrue(row.get("postP50Micros").asDouble() > 0 && row.get("postP99Micros").asDouble() >= row.get("postP50Micros").asDouble(),
                            row.toString());
                    assertTrue(row.get("transferP50Micros").asDouble() >= row.get("postP50Micros").asDouble()
                            && row.get("transferP99Micros").asDouble() >= row.get("transferP50Micros").asDouble(), row.toString());
                }
                assertEquals(Set.of("READ 262144", "WRITE 262144"), measured, initiator.out());
                JsonNode tcp = result.get("tcpStream");
                JsonNode memcpy = result.get("baseline");
                if (tcp.get("available").asBoolean()) {
                    assertEquals(1, tcp.get("rows").size(), tcp.toString());
                    assertTrue(memcpy.get("available").asBoolean(), memcpy.toString());
                    for (JsonNode row : result.get("rows")) {
                        assertTrue(row.get("ratioToTcp").asDouble() > 0 && row.get("ratioToMemcpy").asDouble() > 0, row.toString());
                    }
                }
                else {
                    // no compiler: each baseline says so, on the side that would have run it
                    assertTrue(tcp.get("reason").asText().contains("the target started no TCP stream receiver: C compiler"), tcp.toString());
                    assertTrue(memcpy.get("reason").asText().contains("C compiler"), memcpy.toString());
                    assertTrue(tls.equals("default") || !NativeFakes.gccRuns(), tcp.toString());
                }
                assertTrue(target.err().contains("granted READ and WRITE of 2 MiB"), target.err());
                assertTrue(target.err().contains("finished; done"), target.err());
            }
        }
    }

    @Test
    void aKilledTargetFailsTheInitiatorWithinItsDeadlineWithATypedError() throws Exception
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        try (BenchChild target = BenchChild.start(directory.resolve("target"), Map.of(), "bench", "--role", "target", "--listen", "127.0.0.1:0",
                "--total-bytes", "16MiB", "--timeout", "60s")) {
            int port = target.port();
            // 4,096 transfers of 4 KiB: the passes run for seconds, so the target dies in the middle of them
            try (BenchChild initiator = BenchChild.start(directory.resolve("initiator"), Map.of(), "bench", "--role", "initiator", "--peer", "127.0.0.1:" + port,
                    "--total-bytes", "16MiB", "--block-sizes", "4KiB", "--timeout", "3s", "--cc", directory.resolve("no-such-gcc").toString())) {
                initiator.await(Pattern.compile("ucx READ 4 KiB"));
                target.process.destroyForcibly();
                long killed = System.nanoTime();
                assertEquals(KvBridgeCli.FAILED, initiator.waitFor(), initiator.describe());
                double seconds = (System.nanoTime() - killed) / 1e9;
                // the deadline of one step, plus the JVM's exit
                assertTrue(seconds < 3 + 5, "the initiator took " + seconds + " s after the target was killed: " + initiator.describe());
                assertTrue(Pattern.compile("kvbridge bench: KVB/(TransferFailed|DeadlineExceeded|HandshakeFailed|PeerUnknown|NativeError): ")
                        .matcher(initiator.err()).find(), initiator.describe());
            }
        }
    }

    @Test
    void anInitiatorWithAnotherSecretIsRefusedWithTheReasonAndTheTargetWaitsOn() throws Exception
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        Path targetSecret = secretFile("target.secret", "the target's secret, 32 bytes..");
        Path initiatorSecret = secretFile("initiator.secret", "another secret of the same size.");
        try (BenchChild target = BenchChild.start(directory.resolve("target"), Map.of(), "bench", "--role", "target", "--listen", "127.0.0.1:0",
                "--total-bytes", "1MiB", "--timeout", "60s", "--secret-file", targetSecret.toString())) {
            int port = target.port();
            CliRun run = CliRun.of("bench", "--role", "initiator", "--peer", "127.0.0.1:" + port, "--total-bytes", "1MiB", "--block-sizes", "64KiB",
                    "--timeout", "10s", "--secret-file", initiatorSecret.toString());
            assertEquals(KvBridgeCli.FAILED, run.exitCode(), run.err());
            assertTrue(run.err().contains("kvbridge bench: KVB/AuthenticationFailed: the bench target at 127.0.0.1:" + port
                    + " could not authenticate this initiator"), run.err());
            assertTrue(run.err().contains("(give both hosts the same --secret-file)"), run.err());
            target.await(Pattern.compile("initiator session 1 ended without finishing: KVB/AuthenticationFailed"));
            assertTrue(target.process.isAlive(), target.describe());
        }
    }

    private Path secretFile(String name, String content) throws IOException
    {
        Path file = directory.resolve(name);
        Files.writeString(file, content, StandardCharsets.US_ASCII);
        Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        return file;
    }

    @Test
    void localCannotCrossProcessesAndIsRefusedWithTheReason()
    {
        CliRun run = CliRun.of("bench", "--role", "initiator", "--peer", "127.0.0.1:5600", "--transport", "local");
        assertEquals(KvBridgeCli.USAGE, run.exitCode(), run.err());
        assertTrue(run.err().contains("--transport=local cannot cross processes (its peers live in one JVM)"), run.err());
    }

    @Test
    void rolesWithoutTheirAddressOrOptionsWithoutARoleAreRefusedInOneLine()
    {
        assertRefused("--role target needs --listen HOST:PORT", "bench", "--role", "target");
        assertRefused("--role initiator needs --peer HOST:PORT", "bench", "--role", "initiator");
        assertRefused("--peer apply only with --role", "bench", "--peer", "127.0.0.1:5600");
        assertRefused("--peer 127.0.0.1 is not HOST:PORT", "bench", "--role", "initiator", "--peer", "127.0.0.1");
        assertRefused("--batch=3 does not divide the 64 blocks", "bench", "--role", "initiator", "--peer", "127.0.0.1:5600", "--total-bytes", "256KiB",
                "--block-sizes", "4KiB", "--batch", "3");
        assertRefused("--batch is the initiator's", "bench", "--role", "target", "--listen", "127.0.0.1:0", "--batch", "2");
    }

    @Test
    void anUnreachableTargetFailsWithinTheDeadline() throws IOException
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        int closed = freePort();
        long start = System.nanoTime();
        CliRun run = CliRun.of("bench", "--role", "initiator", "--peer", "127.0.0.1:" + closed, "--timeout", "500ms");
        assertEquals(KvBridgeCli.FAILED, run.exitCode(), run.err());
        assertTrue(run.err().contains("kvbridge bench: KVB/PeerUnknown: no bench target answered at 127.0.0.1:" + closed + " within timeout=500 ms"),
                run.err());
        assertTrue((System.nanoTime() - start) / 1e9 < 10, run.err());
    }

    @Test
    void aTargetThatNoInitiatorFinishesWithEndsAtItsTimeout()
    {
        assumeTrue(ucxAvailable(), "the ucx transport is not available here");
        CliRun run = CliRun.of("bench", "--role", "target", "--listen", "127.0.0.1:0", "--total-bytes", "1MiB", "--timeout", "1s");
        assertEquals(KvBridgeCli.FAILED, run.exitCode(), run.err());
        assertTrue(run.err().contains("kvbridge bench: KVB/DeadlineExceeded: no initiator finished within --timeout=1s"), run.err());
    }

    private static int freePort() throws IOException
    {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private static void assertRefused(String expected, String... args)
    {
        CliRun run = CliRun.of(args);
        assertEquals(KvBridgeCli.USAGE, run.exitCode(), run.err());
        assertTrue(run.err().lines().findFirst().orElse("").contains(expected), run.err());
    }

    private static boolean ucxAvailable()
    {
        return PluginRegistry.discover(TwoProcessBenchTest.class.getClassLoader()).describe().stream()
                .anyMatch(plugin -> plugin.name().equals("ucx") && plugin.available());
    }
}
