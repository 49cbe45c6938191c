package io.kvbridge.core.benchmarks;

import io.kvbridge.core.discovery.PublishedRank;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.core.sidechannel.RankKey;
import io.kvbridge.core.sidechannel.SideChannelClient;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelServer;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.core.wire.CompatibilityMode;
import io.kvbridge.core.wire.HandshakeVerifier;
import io.kvbridge.core.wire.RankMetadata;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.discovery.DirectoryConfig;
import io.kvbridge.spi.discovery.DirectoryEntry;
import io.kvbridge.spi.discovery.EngineDirectory;
import io.kvbridge.testkit.EtcdServer;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Stream;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * {@link HandshakeBenchmark}'s handshake with the producer found through etcd discovery, against a
 * real etcd on loopback ({@code /usr/bin/etcd}, started for the trial): the producer's rank
 * published its entry (side-channel address and handshake payload of the 93-layer geometry), and a
 * consumer that has not met the engine before reads the entry from etcd (no cache), decodes and
 * checks it, then shakes hands with the side channel it names. {@link #resolveOnly()} is the etcd
 * part alone: one read and the entry's checks.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsPrepend = {"--enable-native-access=ALL-UNNAMED"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class EtcdHandshakeBenchmark
{
    private static final String ENGINE = "prefill-0";

    private Path work;
    private EtcdServer etcd;
    private SideChannelServer server;
    private EngineDirectory producer;
    private EngineDirectory consumer;
    private SideChannelClient client;
    private HandshakeVerifier verifier;
    private RankKey rank;

    @Setup(Level.Trial)
    public void start()
            throws IOException
    {
        work = Files.createTempDirectory("kvbridge-etcd-bench");
        etcd = EtcdServer.start(work);
        try {
            startEngines();
        }
        catch (RuntimeException e) {
            // JMH runs no tear-down after a failed set-up: the etcd process must not outlive the fork
            stop();
            throw e;
        }
    }

    private void startEngines()
    {
        RankMetadata metadata = HandshakeBenchmark.metadata(93);
        SideChannelSettings settings = SideChannelSettings.builder().build();
        server = SideChannelServer.start(ENGINE, List.of(metadata), settings, SideChannelClock.system());
        client = new SideChannelClient(settings, SideChannelClock.system());
        verifier = new HandshakeVerifier(metadata.geometry().model(), CompatibilityMode.STRICT, settings.limits());
        rank = RankKey.of(metadata.rank());
        // opened as the bridge opens its directory: the plugin registry's discovery plugin for the scheme
        PluginRegistry plugins = PluginRegistry.discover(EtcdHandshakeBenchmark.class.getClassLoader());
        producer = plugins.directory("etcd").open(DirectoryConfig.parse(etcd.location()));
        producer.publish(PublishedRank.entry("127.0.0.1", server.address().getPort(), metadata));
        consumer = plugins.directory("etcd").open(DirectoryConfig.parse(etcd.location()));
        // a publication etcd could not take at once is put by the directory's own retries
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (consumer.resolve(ENGINE).isEmpty()) {
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("the producer's entry did not reach etcd within 30 s: " + producer.health().describe());
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(50));
        }
        System.out.printf("%netcd %s, entry %d bytes%n", etcd.location(), consumer.resolve(ENGINE).getFirst().value().length);
    }

    @TearDown(Level.Trial)
    public void stop()
            throws IOException
    {
        for (AutoCloseable closeable : new AutoCloseable[] {consumer, producer, server, etcd}) {
            if (closeable != null) {
                try {
                    closeable.close();
                }
                catch (Exception e) {
                    System.err.println("closing " + closeable + " failed: " + e);
                }
            }
        }
        try (Stream<Path> files = Files.walk(work)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        }
        catch (UncheckedIOException e) {
            // a temporary directory left behind is harmless
        }
    }

    /**
     * Reads the engine's entry from etcd, checks it, and shakes hands with the side channel it names.
     *
     * @return the metadata the side channel served.
     */
    @Benchmark
    public RankMetadata handshakeThroughEtcd()
    {
        PublishedRank published = resolveOnly();
        InetSocketAddress address = new InetSocketAddress(published.sideChannel().getHostString(), published.sideChannel().getPort());
        RankMetadata metadata = verifier.verify(client.fetch(address, List.of(rank)).getFirst().payload()).metadata();
        if (!metadata.engineId().equals(ENGINE)) {
            throw new IllegalStateException("engine id mismatch: " + metadata.engineId());
        }
        return metadata;
    }

    /**
     * Reads the engine's entry from etcd (an engine not watched is read at every call) and checks it.
     *
     * @return the entry, decoded.
     */
    @Benchmark
    public PublishedRank resolveOnly()
    {
        List<DirectoryEntry> entries = consumer.resolve(ENGINE);
        return PublishedRank.decode(entries.getFirst(), WireLimits.DEFAULT);
    }
}
