package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import io.micrometer.core.instrument.MeterRegistry;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Connectors built the way an engine builds them: through the api's builder, Guice staying inside. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class KvBridgeConnectorsTest
{
    /** One layer of eight 256-byte blocks in host memory, as an engine of the test model describes it. */
    static CacheGeometry geometry(MemorySegment memory)
    {
        ModelIdentity identity = new ModelIdentity("test/wiring", "bfloat16", "bfloat16", 2, 64, 1, false);
        Region region = new Region("model.layers.0.self_attn", memory.address(), 256, 256, 8, 0, MemoryKind.HOST, 0, SplitClass.SPLIT,
                List.of("model.layers.0.self_attn"), List.of());
        return new CacheGeometry("per-layer", Rank.single(), identity, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 64)),
                List.of(new Allocation(memory.address(), memory.byteSize(), MemoryKind.HOST, 0)), List.of(region));
    }

    /** Polls both connectors, as an engine's scheduler loop does, until one request was received and its blocks freed as completed. */
    static void awaitReceivedAndCompleted(ConsumerConnector consumer, String consumerId, ProducerConnector producer, String producerId)
            throws InterruptedException
    {
        List<String> received = new ArrayList<>();
        List<FreedRequest> freed = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while ((received.isEmpty() || freed.isEmpty()) && System.nanoTime() < deadline) {
            ReceiveBatch batch = consumer.poll();
            assertEquals(List.of(), batch.failed());
            received.addAll(batch.received());
            freed.addAll(producer.poll());
            Thread.sleep(1);
        }
        assertEquals(List.of(consumerId), received);
        assertEquals(List.of(new FreedRequest(producerId, FreeReason.COMPLETED)), freed);
    }

    @Test
    void aPullThroughTheBridgeIsCountedInItsMetricsAndLeavesItIdle()
            throws InterruptedException
    {
        try (Arena arena = Arena.ofConfined(); KvBridge bridge = KvBridge.builder().transport("local").build()) {
            MemorySegment producerMemory = arena.allocate(2048, 64);
            MemorySegment consumerMemory = arena.allocate(2048, 64);
            producerMemory.fill((byte) 42);
            ProducerConnector producer = bridge.producer(ConnectorSettings.builder("prefill", geometry(producerMemory)).build());
            ConsumerConnector consumer = bridge.consumer(ConnectorSettings.builder("decode", geometry(consumerMemory)).build());
            TransferParams params = producer.prefillFinished("r", BlockIds.of(new int[] {1}));
            consumer.blocksAllocated("d", params, TransferMode.PULL, BlockIds.of(new int[] {3}));
            awaitReceivedAndCompleted(consumer, "d", producer, "r");
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            assertEquals((byte) 42, consumerMemory.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 3 * 256));
            assertEquals((byte) 0, consumerMemory.get(java.lang.foreign.ValueLayout.JAVA_BYTE, 2 * 256));
            MeterRegistry registry = bridge.metricsRegistry(MeterRegistry.class);
            assertEquals(1, registry.get("kvbridge.transfer.time").timer().count());
            assertEquals(256.0, registry.get("kvbridge.transfer.bytes").summary().totalAmount());
            while (!bridge.audit().idle() && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertTrue(bridge.audit().idle(), bridge.audit().toString());
            assertEquals(ErrorCode.UNSUPPORTED, assertThrows(KvBridgeException.class, () -> bridge.metricsRegistry(String.class)).code());
        }
    }

    @Test
    void bridgesWithTheSameSideChannelSecretTalkAndAnotherSecretIsRefused()
            throws InterruptedException
    {
        byte[] secret = "0123456789abcdef0123456789abcdef".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        byte[] other = "fedcba9876543210fedcba9876543210".getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        try (Arena arena = Arena.ofShared();
                KvBridge prefill = KvBridge.builder().transport("local").sideChannelSecret(secret).build();
                KvBridge decode = KvBridge.builder().transport("local").sideChannelSecret(secret).build();
                KvBridge stranger = KvBridge.builder().transport("local").sideChannelSecret(other).build()) {
            MemorySegment producerMemory = arena.allocate(2048, 64);
            producerMemory.fill((byte) 7);
            ProducerConnector producer = prefill.producer(ConnectorSettings.builder("prefill", geometry(producerMemory)).build());
            ConsumerConnector consumer = decode.consumer(ConnectorSettings.builder("decode", geometry(arena.allocate(2048, 64))).build());
            ConsumerConnector impostor = stranger.consumer(ConnectorSettings.builder("stranger", geometry(arena.allocate(2048, 64))).build());
            TransferParams params = producer.prefillFinished("r", BlockIds.of(new int[] {1}));
            impostor.blocksAllocated("x", params, TransferMode.PULL, BlockIds.of(new int[] {2}));
            consumer.blocksAllocated("d", params, TransferMode.PULL, BlockIds.of(new int[] {3}));
            List<String> received = new ArrayList<>();
            List<io.kvbridge.api.ReceiveFailure> refused = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while ((received.isEmpty() || refused.isEmpty()) && System.nanoTime() < deadline) {
                received.addAll(consumer.poll().received());
                refused.addAll(impostor.poll().failed());
                Thread.sleep(1);
            }
            assertEquals(List.of("d"), received);
            assertEquals(1, refused.size(), refused.toString());
            assertEquals(ErrorCode.HANDSHAKE_FAILED, refused.getFirst().code(), refused.toString());
            assertTrue(refused.getFirst().message().contains(ErrorCode.AUTHENTICATION_FAILED.id()) && refused.getFirst().message().contains("different shared secrets"),
                    refused.toString());
        }
        KvBridgeException tooShort = assertThrows(KvBridgeException.class,
                () -> KvBridge.builder().transport("local").sideChannelSecret(new byte[8]).build().close());
        assertEquals(ErrorCode.CONFIG_INVALID, tooShort.code());
        assertTrue(tooShort.getMessage().contains("8 bytes is too short"), tooShort.getMessage());
    }
}
