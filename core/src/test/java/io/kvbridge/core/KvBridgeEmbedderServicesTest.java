package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveBatch;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The clock and registry an engine hands the bridge through {@link KvBridge#builder()}. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class KvBridgeEmbedderServicesTest
{
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(20);

    @Test
    void aLeaseExpiresWhenTheEmbeddersClockPassesItNotTheWallClock()
            throws InterruptedException
    {
        AtomicLong engineNanos = new AtomicLong(5_000_000_000L);
        try (Arena arena = Arena.ofConfined(); KvBridge bridge = KvBridge.builder().transport("local").monotonicClock(engineNanos::get).build()) {
            ProducerConnector producer = bridge.producer(ConnectorSettings.builder("prefill", KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64)))
                    .leaseDuration(Duration.ofMillis(100)).build());
            producer.prefillFinished("r", BlockIds.of(new int[] {1}));
            long deadline = System.nanoTime() + WAIT_NANOS;
            while (producer.audit().leasesHeld() == 0 && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertEquals(1, producer.audit().leasesHeld());
            // three leases of wall-clock time: the worker runs hundreds of rounds, but the engine's clock stands still
            Thread.sleep(300);
            assertEquals(List.of(), producer.poll());
            assertEquals(1, producer.audit().leasesHeld());
            engineNanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(99));
            Thread.sleep(50);
            assertEquals(List.of(), producer.poll(), "1 ms of the lease is left on the engine's clock");
            engineNanos.addAndGet(TimeUnit.MILLISECONDS.toNanos(2));
            List<FreedRequest> freed = new ArrayList<>();
            while (freed.isEmpty() && System.nanoTime() < deadline) {
                freed.addAll(producer.poll());
                Thread.sleep(1);
            }
            assertEquals(List.of(new FreedRequest("r", FreeReason.EXPIRED)), freed);
            assertEquals(1.0, bridge.metricsRegistry(MeterRegistry.class).get("kvbridge.lease.expired").counter().count());
        }
    }

    @Test
    void theEmbeddersRegistryHoldsTheTransferMetersFromTheStartAndOutlivesTheBridge()
            throws InterruptedException
    {
        SimpleMeterRegistry engineRegistry = new SimpleMeterRegistry();
        KvBridge bridge = KvBridge.builder().transport("local").meterRegistry(engineRegistry).build();
        try (Arena arena = Arena.ofConfined()) {
            assertSame(engineRegistry, bridge.metricsRegistry(MeterRegistry.class));
            assertSame(engineRegistry, bridge.metricsRegistry(SimpleMeterRegistry.class));
            // recorded in the engine's registry itself, not in one attached to it later
            assertThrows(KvBridgeException.class, () -> bridge.metricsRegistry(CompositeMeterRegistry.class));
            assertNotNull(engineRegistry.find("kvbridge.transfer.time").timer(), "registered when the bridge was built");
            assertEquals(1.0, engineRegistry.get("kvbridge.health").gauge().value());

            MemorySegment producerMemory = arena.allocate(2048, 64);
            MemorySegment consumerMemory = arena.allocate(2048, 64);
            producerMemory.fill((byte) 9);
            ProducerConnector producer = bridge.producer(ConnectorSettings.builder("prefill", KvBridgeConnectorsTest.geometry(producerMemory)).build());
            ConsumerConnector consumer = bridge.consumer(ConnectorSettings.builder("decode", KvBridgeConnectorsTest.geometry(consumerMemory)).build());
            TransferParams params = producer.prefillFinished("r", BlockIds.of(new int[] {1, 2}));
            consumer.blocksAllocated("d", params, TransferMode.PULL, BlockIds.of(new int[] {4, 5}));
            List<String> received = new ArrayList<>();
            long deadline = System.nanoTime() + WAIT_NANOS;
            while (received.isEmpty() && System.nanoTime() < deadline) {
                ReceiveBatch batch = consumer.poll();
                assertEquals(List.of(), batch.failed());
                received.addAll(batch.received());
                Thread.sleep(1);
            }
            assertEquals(List.of("d"), received);
            assertEquals(1, engineRegistry.get("kvbridge.transfer.time").timer().count());
            assertEquals(512.0, engineRegistry.get("kvbridge.transfer.bytes").summary().totalAmount());
            assertEquals(2.0, engineRegistry.get("kvbridge.transfer.descriptors").summary().totalAmount());
            assertEquals(1.0, engineRegistry.get("kvbridge.transfer.operations").summary().totalAmount(), "two adjacent blocks, one copy");
            assertEquals(0.0, engineRegistry.get("kvbridge.transfer.failed").counter().count());
        }
        finally {
            bridge.close();
        }
        assertFalse(engineRegistry.isClosed(), "the engine's registry is the engine's to close");
        assertEquals(1, engineRegistry.get("kvbridge.transfer.time").timer().count(), "what was recorded stays");
        assertNull(engineRegistry.find("kvbridge.health").gauge(), "a closed bridge leaves no gauge holding it");

        // a second bridge on the same registry reports its own health, not the closed one's
        try (KvBridge second = KvBridge.builder().transport("local").meterRegistry(engineRegistry).build()) {
            assertEquals(1.0, engineRegistry.get("kvbridge.health").gauge().value());
            assertSame(engineRegistry, second.metricsRegistry(MeterRegistry.class));
        }
    }

    @Test
    void withoutAnEmbedderRegistryTheBridgeKeepsItsOwnComposite()
    {
        try (KvBridge bridge = KvBridge.builder().transport("local").build()) {
            CompositeMeterRegistry own = bridge.metricsRegistry(CompositeMeterRegistry.class);
            assertEquals(1, own.getRegistries().size());
            assertTrue(own.getRegistries().iterator().next() instanceof SimpleMeterRegistry);
            assertNotNull(own.find("kvbridge.transfer.time").timer());
        }
    }

    @Test
    void aRegistryThatIsNotMicrometersIsRefusedNamingBothTypes()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class,
                () -> KvBridge.builder().transport("local").meterRegistry(new StringBuilder("registry")).build().close());
        assertEquals(ErrorCode.CONFIG_INVALID, e.code());
        assertTrue(e.getMessage().contains("meterRegistry is a java.lang.StringBuilder, not a io.micrometer.core.instrument.MeterRegistry"),
                e.getMessage());
        assertThrows(NullPointerException.class, () -> KvBridge.builder().meterRegistry(null));
        assertThrows(NullPointerException.class, () -> KvBridge.builder().monotonicClock(null));
    }
}
