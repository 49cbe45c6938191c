package io.kvbridge.core.benchmarks;

import io.kvbridge.core.config.TlsFiles;
import io.kvbridge.core.config.TlsLoader;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelServer;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.tls.SideChannelTls;
import io.kvbridge.core.wire.CompatibilityMode;
import io.kvbridge.core.wire.HandshakePayload;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.MetadataCodec;
import io.kvbridge.core.wire.PeerCapability;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * One complete handshake with one rank of a remote engine over loopback TCP: connect, send the
 * request, receive the payload, check version and compatibility hash, decode the metadata of a
 * 93-layer geometry and re-validate every record and the untrusted-geometry rules. Sampled, so the
 * report gives percentiles; with and without HMAC authentication. {@link #verifyOnly()} runs the
 * same checks and decoding on the payload bytes alone.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class HandshakeBenchmark
{
    private static final String ENGINE = "prefill-0";
    private static final byte[] SECRET = "benchmark-shared-secret-32-bytes".getBytes(StandardCharsets.US_ASCII);

    @Param("93")
    public int layers;

    @Param({"false", "true"})
    public boolean authenticated;

    /** TLS 1.3 below the framing, with a self-signed EC certificate for 127.0.0.1 made at setup; a new TLS session per handshake. */
    @Param({"false", "true"})
    public boolean tls;

    private SideChannelServer server;
    private SideChannelClient client;
    private InetSocketAddress address;
    private HandshakeVerifier verifier;
    private List<RankKey> ranks;
    private byte[] servedPayload;

    @Setup(Level.Trial)
    public void start()
    {
        RankMetadata metadata = metadata(layers);
        SideChannelSettings settings = SideChannelSettings.builder().secret(authenticated ? SECRET : new byte[0]).tls(tls ? selfSignedTls() : null)
                .build();
        server = SideChannelServer.start(ENGINE, List.of(metadata), settings, SideChannelClock.system());
        client = new SideChannelClient(settings, SideChannelClock.system());
        // by IP address, as peers advertise it: what the certificate's IP SAN names
        address = new InetSocketAddress(server.address().getAddress().getHostAddress(), server.address().getPort());
        verifier = new HandshakeVerifier(metadata.geometry().model(), CompatibilityMode.STRICT, settings.limits());
        ranks = List.of(RankKey.of(metadata.rank()));
        servedPayload = HandshakePayload.of(metadata).encode();
        System.out.printf("%nlayers=%d regions=%d metadata=%d bytes payload=%d bytes authenticated=%s tls=%s%n", layers,
                metadata.geometry().regions().size(), MetadataCodec.encode(metadata).length, HandshakePayload.of(metadata).encode().length,
                authenticated, tls);
    }

    @TearDown(Level.Trial)
    public void stop()
    {
        server.close();
    }

    /** A keystore holding a self-signed certificate for 127.0.0.1, which serves as the server's key and the client's trust. */
    private static SideChannelTls selfSignedTls()
    {
        try {
            Path directory = Files.createTempDirectory("kvbridge-bench-tls-");
            Path store = directory.resolve("side-channel.p12");
            Path password = directory.resolve("password");
            Files.writeString(password, "benchmark-store-password");
            Files.setPosixFilePermissions(password, PosixFilePermissions.fromString("rw-------"));
            Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(), "-genkeypair", "-alias",
                    "side-channel", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=kvbridge benchmark", "-ext", "san=ip:127.0.0.1",
                    "-validity", "2", "-storetype", "PKCS12", "-keystore", store.toString(), "-storepass", "benchmark-store-password")
                    .redirectErrorStream(true).start();
            String output = new String(keytool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!keytool.waitFor(60, TimeUnit.SECONDS) || keytool.exitValue() != 0) {
                throw new IllegalStateException("keytool failed: " + output);
            }
            Files.setPosixFilePermissions(store, PosixFilePermissions.fromString("rw-------"));
            List<String> problems = new ArrayList<>();
            SideChannelTls loaded = TlsLoader.load(new TlsFiles(null, null, store, password, null, store, password, null, null), problems);
            if (!problems.isEmpty()) {
                throw new IllegalStateException(problems.toString());
            }
            return loaded;
        }
        catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Connects, fetches, verifies and decodes.
     *
     * @return the decoded metadata.
     */
    @Benchmark
    public RankMetadata handshake()
    {
        byte[] payload = client.fetch(address, ranks).getFirst().payload();
        RankMetadata metadata = verifier.verify(payload).metadata();
        if (!metadata.engineId().equals(ENGINE)) {
            throw new IllegalStateException("engine id mismatch: " + metadata.engineId());
        }
        return metadata;
    }

    /**
     * The same checks and decoding without the network, to tell the two costs apart.
     *
     * @return the decoded metadata.
     */
    @Benchmark
    public RankMetadata verifyOnly()
    {
        return verifier.verify(servedPayload).metadata();
    }

    /**
     * A rank of a 93-layer dense model on tensor-parallel rank 1 of 4: one device region per layer
     * (K and V of a block together), 8 KV heads of 128 elements, 16-token blocks, 4096 blocks per
     * layer, and a transport blob the size of a UCX worker address.
     */
    static RankMetadata metadata(int layers)
    {
        Rank rank = new Rank(0, 1, 1, 4);
        int blockTokens = 16;
        long blockBytes = 2L * (8 / rank.tpSize()) * 128 * blockTokens * 2;
        int capacity = 4_096;
        long base = 0x7a00_0000_0000L;
        long regionBytes = blockBytes * capacity;
        List<Region> regions = new ArrayList<>();
        for (int i = 0; i < layers; i++) {
            String layer = "model.layers." + i + ".self_attn.attn";
            regions.add(new Region(layer, base + i * regionBytes, blockBytes, blockBytes, capacity, 0, MemoryKind.DEVICE, 1, SplitClass.SPLIT,
                    List.of(layer), List.of()));
        }
        ModelIdentity model = new ModelIdentity("example-org/dense-" + layers + "-layers", "bfloat16", "bfloat16", 8, 128, layers, false);
        CacheGeometry geometry = new CacheGeometry("per-layer", rank, model, blockTokens, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128)),
                List.of(new Allocation(base, regionBytes * layers, MemoryKind.DEVICE, 1)), regions);
        byte[] transport = new byte[512];
        new Random(42).nextBytes(transport);
        return new RankMetadata(ENGINE, RankMetadata.newEpoch(), "ucx", transport, EnumSet.of(PeerCapability.PUSH, PeerCapability.PULL), geometry);
    }
}
