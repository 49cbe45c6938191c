package io.kvbridge.core.discovery;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.Health;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.SideChannelAddress;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.plugin.PluginRegistry;
import io.kvbridge.core.wire.WireLimits;
import io.kvbridge.spi.discovery.DirectoryConfig;
import io.kvbridge.spi.discovery.DirectoryEntry;
import io.kvbridge.spi.discovery.EngineDirectory;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.testkit.EtcdServer;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A prefill and a decode engine configured with {@code discovery}, over the local transport in one
 * JVM: the producer's ranks publish themselves in a real etcd, and the consumer reaches the
 * producer's side channel through etcd alone, the address in the transfer parameters being one
 * where nothing listens.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class EtcdDiscoveryEndToEndTest
{
    private static final byte[] SECRET = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    Path work;

    private static CacheGeometry geometry(MemorySegment memory)
    {
        ModelIdentity identity = new ModelIdentity("test/discovery", "bfloat16", "bfloat16", 2, 64, 1, false);
        Region region = new Region("model.layers.0.self_attn", memory.address(), 256, 256, 8, 0, MemoryKind.HOST, 0, SplitClass.SPLIT,
                List.of("model.layers.0.self_attn"), List.of());
        return new CacheGeometry("per-layer", Rank.single(), identity, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 64)),
                List.of(new Allocation(memory.address(), memory.byteSize(), MemoryKind.HOST, 0)), List.of(region));
    }

    private static String config(EtcdServer etcd)
    {
        return "{\"kv_connector\": \"kvbridge\", \"kv_connector_extra_config\": {\"transport\": \"local\", \"discovery\": \"" + etcd.location()
                + "\", \"discovery_lease_ttl\": \"2s\"}}";
    }

    @Test
    void aConsumerFindsTheProducerThroughEtcdAlone()
            throws InterruptedException
    {
        try (EtcdServer etcd = EtcdServer.start(work); Arena arena = Arena.ofShared();
                EngineDirectory observer = openDirectory(etcd.location())) {
            MemorySegment producerMemory = arena.allocate(2048, 64);
            MemorySegment consumerMemory = arena.allocate(2048, 64);
            producerMemory.fill((byte) 42);
            try (KvBridge prefill = bridge(etcd, SECRET); KvBridge decode = bridge(etcd, SECRET)) {
                ProducerConnector producer = prefill.producer(ConnectorSettings.builder("prefill-etcd", geometry(producerMemory)).build());
                ConsumerConnector consumer = decode.consumer(ConnectorSettings.builder("decode-etcd", geometry(consumerMemory)).build());
                List<DirectoryEntry> published = observer.resolve("prefill-etcd");
                assertEquals(1, published.size(), "the producer's one rank is in etcd: " + published);

                TransferParams params = producer.prefillFinished("r", BlockIds.of(new int[] {1}));
                // nothing listens on port 1: only the address etcd holds reaches the producer
                TransferParams elsewhere = new TransferParams(params.engineId(), params.requestId(), List.of(new SideChannelAddress("127.0.0.1", 1)),
                        params.tpSize(), params.ppSize(), params.blockIds(), params.modes(), params.leaseMillis(), params.finishedNanos(),
                        params.epochs(), params.pullKeys());
                consumer.blocksAllocated("d", elsewhere, TransferMode.PULL, BlockIds.of(new int[] {3}));
                List<String> received = new ArrayList<>();
                List<ReceiveFailure> failed = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (received.isEmpty() && failed.isEmpty() && System.nanoTime() < deadline) {
                    ReceiveBatch batch = consumer.poll();
                    received.addAll(batch.received());
                    failed.addAll(batch.failed());
                    producer.poll();
                    Thread.sleep(1);
                }
                assertEquals(List.of(), failed);
                assertEquals(List.of("d"), received);
                assertEquals((byte) 42, consumerMemory.get(ValueLayout.JAVA_BYTE, 3 * 256));
                assertEquals((byte) 0, consumerMemory.get(ValueLayout.JAVA_BYTE, 2 * 256));

                Health health = decode.health();
                Health.Check discovery = health.checks().stream().filter(check -> check.name().equals("discovery")).findFirst().orElseThrow();
                assertTrue(discovery.ok() && discovery.detail().contains(etcd.location() + " reachable"), discovery.toString());
            }
            // the closed producer withdrew its entry (and revoked its lease)
            assertEquals(List.of(), observer.resolve("prefill-etcd"));
        }
    }

    private static KvBridge bridge(EtcdServer etcd, byte[] secret)
    {
        return KvBridge.builder().config(config(etcd)).sideChannelSecret(secret).build();
    }

    /**
     * Puts an entry as whoever can write etcd does: straight into the key the etcd plugin documents
     * ({@code /kvbridge/engines/<engineId>/<ppRank>/<tpRank>}), bound to no lease, so it never expires.
     */
    private static void putLeaseless(EtcdServer etcd, DirectoryEntry entry)
            throws Exception
    {
        try (Client raw = Client.builder().endpoints("http://" + etcd.endpoint()).build()) {
            ByteSequence key = ByteSequence.from("/kvbridge/engines/" + entry.engineId() + "/" + entry.ppRank() + "/" + entry.tpRank(), StandardCharsets.UTF_8);
            raw.getKVClient().put(key, ByteSequence.from(entry.value())).get(5, TimeUnit.SECONDS);
        }
    }

    /** Pulls one block as the router's parameters say and returns the consumer's failures: empty when it received the block. */
    private static List<ReceiveFailure> pull(ProducerConnector producer, ConsumerConnector consumer, MemorySegment consumerMemory, String requestId)
            throws InterruptedException
    {
        TransferParams params = producer.prefillFinished(requestId, BlockIds.of(new int[] {1}));
        consumer.blocksAllocated("d-" + requestId, params, TransferMode.PULL, BlockIds.of(new int[] {3}));
        List<String> received = new ArrayList<>();
        List<ReceiveFailure> failed = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (received.isEmpty() && failed.isEmpty() && System.nanoTime() < deadline) {
            ReceiveBatch batch = consumer.poll();
            received.addAll(batch.received());
            failed.addAll(batch.failed());
            producer.poll();
            Thread.sleep(1);
        }
        if (failed.isEmpty()) {
            assertEquals(List.of("d-" + requestId), received);
            assertEquals((byte) 42, consumerMemory.get(ValueLayout.JAVA_BYTE, 3 * 256));
        }
        return failed;
    }

    private static long refusedEntriesOf(KvBridge bridge)
    {
        Health.Check check = bridge.health().checks().stream().filter(c -> c.name().equals("discovery")).findFirst().orElseThrow();
        Matcher refused = Pattern.compile("; (\\d+) entries or located addresses refused").matcher(check.detail());
        return refused.find() ? Long.parseLong(refused.group(1)) : 0;
    }

    @Test
    void aForgedEntryDoesNotRedirectADecoderWhoseEnginesShareASecret()
            throws Exception
    {
        // whoever can write etcd, without the secret: the producer's own metadata, epoch included, at an address of its choosing
        assertEntryFailsNoRequest(SECRET, real -> PublishedRank.entry("127.0.0.1", 1, real.metadata()), 2, "a forged entry failed the request");
    }

    @Test
    void aDeadLeaselessEntryFallsBackToTheRoutersAddress()
            throws Exception
    {
        // what an earlier incarnation signed and left behind without a lease: genuine, and naming a port where nothing listens
        assertEntryFailsNoRequest(SECRET, real -> PublishedRank.entry("127.0.0.1", 1, real.metadata(), EntrySigner.of(SECRET)), 2,
                "a dead entry failed a request whose parameters name the producer");
    }

    @Test
    void withoutASecretAnUnverifiableEntryThatDisagreesWithTheRoutersParametersIsNotUsed()
            throws Exception
    {
        // the real epoch, another address: nothing can tell it from the producer's own entry
        assertEntryFailsNoRequest(new byte[0], real -> PublishedRank.entry("127.0.0.1", 1, real.metadata()), 1,
                "an unverifiable entry redirected the handshake");
    }

    /**
     * Puts, beside the producer's own entry, one made from it by {@code entry} (lease-less, so it
     * stays), then pulls {@code requests} requests with parameters that name the producer's real
     * address: each must arrive, and the entry must be refused and counted once, not per request.
     */
    private void assertEntryFailsNoRequest(byte[] secret, java.util.function.Function<PublishedRank, DirectoryEntry> entry, int requests, String failed)
            throws Exception
    {
        try (EtcdServer etcd = EtcdServer.start(work); Arena arena = Arena.ofShared();
                EngineDirectory observer = openDirectory(etcd.location());
                KvBridge prefill = bridge(etcd, secret); KvBridge decode = bridge(etcd, secret)) {
            MemorySegment producerMemory = arena.allocate(2048, 64);
            MemorySegment consumerMemory = arena.allocate(2048, 64);
            producerMemory.fill((byte) 42);
            ProducerConnector producer = prefill.producer(ConnectorSettings.builder("prefill-etcd", geometry(producerMemory)).build());
            ConsumerConnector consumer = decode.consumer(ConnectorSettings.builder("decode-etcd", geometry(consumerMemory)).build());
            PublishedRank real = PublishedRank.decode(observer.resolve("prefill-etcd").getFirst(), WireLimits.DEFAULT);
            putLeaseless(etcd, entry.apply(real));
            for (int r = 1; r <= requests; r++) {
                assertEquals(List.of(), pull(producer, consumer, consumerMemory, "r" + r), failed);
            }
            assertEquals(1, refusedEntriesOf(decode), "the entry is counted once, not per request");
        }
    }

    @Test
    void anEngineStartsAndServesWhileEtcdIsDownAndPublishesOnceItIsBack()
            throws InterruptedException
    {
        try (EtcdServer etcd = EtcdServer.start(work); Arena arena = Arena.ofShared()) {
            etcd.stop();
            try (KvBridge prefill = KvBridge.builder().config(config(etcd)).build()) {
                prefill.producer(ConnectorSettings.builder("prefill-late", geometry(arena.allocate(2048, 64))).build());
                Health.Check down = prefill.health().checks().stream().filter(check -> check.name().equals("discovery")).findFirst().orElseThrow();
                assertTrue(!down.ok() && down.detail().contains("unreachable since"), down.toString());
                etcd.start();
                try (EngineDirectory observer = openDirectory(etcd.location())) {
                    long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
                    List<DirectoryEntry> entries = observer.resolve("prefill-late");
                    while (entries.isEmpty() && System.nanoTime() < deadline) {
                        Thread.sleep(50);
                        entries = observer.resolve("prefill-late");
                    }
                    assertEquals(1, entries.size(), "published once etcd answered");
                }
            }
        }
    }

    /** Opens the directory as the bridge does: through the plugin registry, which found the etcd plugin on the class path. */
    private static EngineDirectory openDirectory(String location)
    {
        return PluginRegistry.discover(EtcdDiscoveryEndToEndTest.class.getClassLoader()).directory("etcd").open(DirectoryConfig.parse(location));
    }
}
