package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.sidechannel.TestCertificates;
import io.kvbridge.spi.ErrorCode;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** A whole producer/consumer transfer over the local transport whose side channels run mutual TLS. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class KvBridgeTlsTest
{
    @Test
    void bridgesWithMutualTlsSideChannelsTransferAndAPlainBridgeIsRefused()
            throws InterruptedException
    {
        TestCertificates certificates = TestCertificates.get();
        byte[] secret = "0123456789abcdef0123456789abcdef".getBytes(StandardCharsets.US_ASCII);
        KvBridge.Builder.TlsFiles prefillTls = new KvBridge.Builder.TlsFiles(certificates.server.chainPem(), certificates.server.keyPem(),
                certificates.caPem, true);
        KvBridge.Builder.TlsFiles decodeTls = new KvBridge.Builder.TlsFiles(certificates.client.chainPem(), certificates.client.keyPem(),
                certificates.caPem, true);
        try (Arena arena = Arena.ofShared();
                KvBridge prefill = KvBridge.builder().transport("local").sideChannelSecret(secret).sideChannelTls(prefillTls).build();
                KvBridge decode = KvBridge.builder().transport("local").sideChannelSecret(secret).sideChannelTls(decodeTls).build();
                KvBridge plain = KvBridge.builder().transport("local").sideChannelSecret(secret).build()) {
            MemorySegment producerMemory = arena.allocate(2048, 64);
            MemorySegment consumerMemory = arena.allocate(2048, 64);
            producerMemory.fill((byte) 9);
            ProducerConnector producer = prefill.producer(ConnectorSettings.builder("prefill", KvBridgeConnectorsTest.geometry(producerMemory)).build());
            ConsumerConnector consumer = decode.consumer(ConnectorSettings.builder("decode", KvBridgeConnectorsTest.geometry(consumerMemory)).build());
            ConsumerConnector stranger = plain.consumer(ConnectorSettings.builder("plain", KvBridgeConnectorsTest.geometry(arena.allocate(2048, 64)))
                    .build());
            TransferParams params = producer.prefillFinished("r", BlockIds.of(new int[] {1}));
            stranger.blocksAllocated("x", params, TransferMode.PULL, BlockIds.of(new int[] {2}));
            consumer.blocksAllocated("d", params, TransferMode.PULL, BlockIds.of(new int[] {3}));
            KvBridgeConnectorsTest.awaitReceivedAndCompleted(consumer, "d", producer, "r");
            assertEquals((byte) 9, consumerMemory.get(ValueLayout.JAVA_BYTE, 3 * 256));
            List<ReceiveFailure> refused = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (refused.isEmpty() && System.nanoTime() < deadline) {
                refused.addAll(stranger.poll().failed());
                Thread.sleep(1);
            }
            assertEquals(1, refused.size(), refused.toString());
            assertEquals(ErrorCode.HANDSHAKE_FAILED, refused.getFirst().code(), refused.toString());
            assertTrue(refused.getFirst().message().contains("TLS"), refused.toString());
        }
    }
}
