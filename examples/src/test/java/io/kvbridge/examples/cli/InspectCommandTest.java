package io.kvbridge.examples.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
final class InspectCommandTest
{
    @TempDir
    Path directory;

    /**
     * A prefill engine {@code producer-a} of a two-layer model split into two pipeline stages, started
     * through the public API over the {@code local} transport: it serves the stages given (not
     * necessarily all) on one loopback side channel, as any engine does.
     */
    private record Engine(Arena arena, KvBridge bridge, String address) implements AutoCloseable
    {
        static Engine serving(byte[] secret, int... stages)
        {
            ModelIdentity model = new ModelIdentity("demo-model", "bfloat16", "bfloat16", 8, 128, 2, false);
            ModelCacheSpec spec = new ModelCacheSpec(model, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128)),
                    List.of(new LayerSpec("model.layers.0.self_attn", 0), new LayerSpec("model.layers.1.self_attn", 0)), List.of(1, 1));
            Arena arena = Arena.ofShared();
            KvBridge bridge = KvBridge.builder().transport("local").agentName("producer-a").sideChannelSecret(secret).build();
            List<ProducerConnector> producers = new ArrayList<>();
            try {
                for (int stage : stages) {
                    // one layer per stage, 16 blocks of 8 heads x 16 tokens x (K, V) x 128 x bf16
                    Allocation layer = Allocation.host(arena.allocate(16L * 8 * 16 * 2 * 128 * 2, 4096));
                    ConnectorSettings settings = ConnectorSettings.builder("producer-a", bridge.layout("per-layer", Map.of())
                                    .describe(spec, CacheMemory.of(List.of(layer)), new Rank(stage, 2, 0, 1)))
                            .cacheSpec(spec).sideChannel("127.0.0.1", 0).build();
                    producers.add(bridge.producer(settings));
                }
                // the side channel took a free port: a producer's parameters name it, as they tell a router
                ProducerConnector first = producers.getFirst();
                SideChannelAddress served = first.prefillFinished("find-the-port", BlockIds.of(new int[] {0})).sideChannels().get(stages[0]);
                first.abort("find-the-port");
                return new Engine(arena, bridge, served.host() + ":" + served.port());
            }
            catch (RuntimeException e) {
                bridge.close();
                arena.close();
                throw e;
            }
        }

        @Override
        public void close()
        {
            // closing the bridge closes its connectors first, then the memory they registered may go
            bridge.close();
            arena.close();
        }
    }

    private static String[] run(String... args)
    {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = KvBridgeCli.execute(new PrintWriter(out, true), new PrintWriter(err, true), args);
        return new String[] {Integer.toString(code), out.toString(), err.toString()};
    }

    @Test
    void printsEveryRankTheServerAdvertises() throws Exception
    {
        try (Engine engine = Engine.serving(new byte[0], 0, 1)) {
            String address = engine.address();
            String[] json = run("inspect", address, "--pp", "2", "--json");
            assertEquals("0", json[0], json[2]);
            JsonNode ranks = new ObjectMapper().readTree(json[1]);
            assertEquals(2, ranks.size());
            assertTrue(json[1].contains("model.layers.1.self_attn"), json[1]);
            assertTrue(json[1].contains("producer-a"), json[1]);

            String[] table = run("inspect", address, "--pp", "2");
            assertEquals("0", table[0], table[2]);
            assertTrue(table[1].contains("rank pp1:tp0"), table[1]);
            assertTrue(table[1].contains("model.layers.0.self_attn"), table[1]);
        }
    }

    @Test
    void missingRankAndBadAddressAreClearErrors()
    {
        String[] bad = run("inspect", "no-port-here");
        assertEquals("2", bad[0]);
        assertTrue(bad[2].contains("is not HOST:PORT"), bad[2]);
        try (Engine engine = Engine.serving(new byte[0], 0)) {
            String[] missing = run("inspect", engine.address(), "--pp", "2");
            // the command line was right; the peer has no such rank: a runtime failure, in one line
            assertEquals("1", missing[0]);
            assertTrue(missing[2].startsWith("kvbridge inspect: KVB/"), missing[2]);
            assertEquals(1, missing[2].lines().count(), missing[2]);
        }
    }

    @Test
    void tlsOptionsWithProblemsAreRefusedNamingEachFile() throws Exception
    {
        Path key = Files.writeString(directory.resolve("key.pem"), "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----\n");
        Files.setPosixFilePermissions(key, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        String[] refused = run("inspect", "127.0.0.1:1", "--tls-ca", directory.resolve("absent-ca.pem").toString(), "--tls-cert",
                directory.resolve("absent-cert.pem").toString(), "--tls-key", key.toString());
        assertEquals("2", refused[0], refused[2]);
        assertTrue(refused[2].contains("tls.ca_file=" + directory.resolve("absent-ca.pem") + " does not exist"), refused[2]);
        assertTrue(refused[2].contains("tls.cert_file=" + directory.resolve("absent-cert.pem") + " does not exist"), refused[2]);
        assertTrue(refused[2].contains("a SEC1 EC key") && refused[2].contains("openssl pkcs8 -topk8"), refused[2]);
    }

    @Test
    void plainInspectOfATlsPeerFailsNamingTls()
    {
        // a peer whose TLS alert is all it answers: the first bytes of a TLS record where a frame header should be
        try (java.net.ServerSocket peer = new java.net.ServerSocket(0, 4, java.net.InetAddress.getLoopbackAddress())) {
            Thread.ofVirtual().start(() -> {
                try (java.net.Socket socket = peer.accept()) {
                    socket.getOutputStream().write(new byte[] {0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x0a});
                    socket.getOutputStream().flush();
                    socket.getInputStream().readNBytes(4);
                }
                catch (java.io.IOException ignored) {
                    // the client closed first
                }
            });
            String[] failed = run("inspect", "127.0.0.1:" + peer.getLocalPort(), "--timeout", "2s");
            assertEquals("1", failed[0], failed[2]);
            assertTrue(failed[2].contains("KVB/HandshakeFailed") && failed[2].contains("answered with TLS"), failed[2]);
        }
        catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void secretFileAndShortDurationsReachAnAuthenticatedPeer() throws Exception
    {
        byte[] secret = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
        Path file = directory.resolve("secret");
        Files.write(file, secret);
        // as the configuration's secret_file: others may neither read nor write it
        Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        try (Engine engine = Engine.serving(secret, 0)) {
            String address = engine.address();
            String[] ok = run("inspect", address, "--secret-file", file.toString(), "--timeout", "2s", "--json");
            assertEquals("0", ok[0], ok[2]);
            assertTrue(ok[1].contains("producer-a"), ok[1]);

            Path other = directory.resolve("other-secret");
            Files.write(other, "fedcba9876543210fedcba9876543210".getBytes(StandardCharsets.US_ASCII));
            Files.setPosixFilePermissions(other, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            String[] wrong = run("inspect", address, "--secret-file", other.toString(), "--timeout", "500ms");
            assertEquals("1", wrong[0], wrong[1]);
            assertTrue(wrong[2].startsWith("kvbridge inspect: KVB/"), wrong[2]);
        }
    }
}
