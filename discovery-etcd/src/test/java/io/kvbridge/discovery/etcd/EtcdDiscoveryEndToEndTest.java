package io.kvbridge.discovery.etcd;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

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
import io.kvbridge.spi.discovery.DirectoryConfig;
import io.kvbridge.spi.discovery.DirectoryEntry;
import io.kvbridge.spi.discovery.Directories;
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
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
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
                EngineDirectory observer = Directories.open(DirectoryConfig.parse(etcd.location()), null)) {
            MemorySegment producerMemory = arena.allocate(2048, 64);
            MemorySegment consumerMemory = arena.allocate(2048, 64);
            producerMemory.fill((byte) 42);
            try (KvBridge prefill = KvBridge.builder().config(config(etcd)).build(); KvBridge decode = KvBridge.builder().config(config(etcd)).build()) {
                ProducerConnector producer = prefill.producer(ConnectorSettings.builder("prefill-etcd", geometry(producerMemory)).build());
                ConsumerConnector consumer = decode.consumer(ConnectorSettings.builder("decode-etcd", geometry(consumerMemory)).build());
                List<DirectoryEntry> published = observer.resolve("prefill-etcd");
                assertEquals(1, published.size(), "the producer's one rank is in etcd: " + published);

                TransferParams params = producer.prefillFinished("r", BlockIds.of(new int[] {1}));
                // nothing listens on port 1: only the address etcd holds reaches the producer
                TransferParams elsewhere = new TransferParams(params.engineId(), params.requestId(), List.of(new SideChannelAddress("127.0.0.1", 1)),
                        params.tpSize(), params.ppSize(), params.blockIds(), params.modes(), params.leaseMillis(), params.finishedNanos());
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
                try (EngineDirectory observer = Directories.open(DirectoryConfig.parse(etcd.location()), null)) {
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
}
