package io.kvbridge.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.ConsumerConnector;
import io.kvbridge.api.KvBridge;
import io.kvbridge.api.ProducerConnector;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * The meters of a prefill bridge and a decode bridge, each recording into its engine's own
 * registry, after a real transfer over {@code local}: what each side can observe, in both modes.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class KvBridgeMetricsTest
{
    private static final long WAIT_NANOS = TimeUnit.SECONDS.toNanos(20);

    @Test
    void everyMeterExistsBeforeTheFirstTransfer()
    {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (KvBridge bridge = KvBridge.builder().transport("local").meterRegistry(registry).build()) {
            for (String side : List.of("producer", "consumer")) {
                for (String mode : List.of("push", "pull")) {
                    assertEquals(0, registry.get("kvbridge.request.time").tags("side", side, "mode", mode).timer().count());
                    assertEquals(0, registry.get("kvbridge.handover.time").tags("mode", mode).timer().count());
                }
            }
            assertEquals(0, registry.get("kvbridge.handshake.time").tags("outcome", "ok").timer().count());
            assertEquals(0, registry.get("kvbridge.handshake.time").tags("outcome", "failed").timer().count());
            for (String gauge : List.of("kvbridge.transfers.in.flight", "kvbridge.leases.held", "kvbridge.peers", "kvbridge.registrations")) {
                assertEquals(0.0, registry.get(gauge).gauge().value(), gauge);
            }
        }
        assertNull(registry.find("kvbridge.leases.held").gauge(), "a closed bridge leaves no gauge holding it");
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void bothSidesRecordTheirRequestsHandshakesAndTheHandOver(TransferMode mode)
            throws InterruptedException
    {
        String tag = mode.name().toLowerCase(Locale.ROOT);
        SimpleMeterRegistry prefillMeters = new SimpleMeterRegistry();
        SimpleMeterRegistry decodeMeters = new SimpleMeterRegistry();
        try (Arena arena = Arena.ofShared();
                KvBridge prefill = KvBridge.builder().transport("local").meterRegistry(prefillMeters).build();
                KvBridge decode = KvBridge.builder().transport("local").meterRegistry(decodeMeters).build()) {
            MemorySegment producerMemory = arena.allocate(2048, 64);
            producerMemory.fill((byte) 7);
            MemorySegment consumerMemory = arena.allocate(2048, 64);
            ProducerConnector producer = prefill.producer(ConnectorSettings.builder("prefill", KvBridgeConnectorsTest.geometry(producerMemory)).build());
            ConsumerConnector consumer = decode.consumer(ConnectorSettings.builder("decode", KvBridgeConnectorsTest.geometry(consumerMemory)).build());
            assertEquals(1.0, prefillMeters.get("kvbridge.registrations").gauge().value(), "the producer's one allocation");
            assertEquals(1.0, decodeMeters.get("kvbridge.registrations").gauge().value());

            long handedOver = System.nanoTime();
            TransferParams params = producer.prefillFinished("r", BlockIds.of(new int[] {1, 2}));
            assertTrue(params.finishedNanos() != TransferParams.UNKNOWN_TIME, "the parameters say when the prefill finished");
            awaitLease(prefillMeters);
            consumer.blocksAllocated("d", params, mode, BlockIds.of(new int[] {4, 5}));
            KvBridgeConnectorsTest.awaitReceivedAndCompleted(consumer, "d", producer, "r");
            long elapsed = System.nanoTime() - handedOver;
            assertEquals(-1L, consumerMemory.asSlice(4 * 256, 512).mismatch(producerMemory.asSlice(256, 512)), "blocks 1 and 2 arrived as 4 and 5");

            // each side in its own registry, in this mode only
            assertEquals(1, prefillMeters.get("kvbridge.request.time").tags("side", "producer", "mode", tag).timer().count());
            assertEquals(1, decodeMeters.get("kvbridge.request.time").tags("side", "consumer", "mode", tag).timer().count());
            assertEquals(0, decodeMeters.get("kvbridge.request.time").tags("side", "producer", "mode", tag).timer().count());
            String other = mode == TransferMode.PUSH ? "pull" : "push";
            assertEquals(0, decodeMeters.get("kvbridge.request.time").tags("side", "consumer", "mode", other).timer().count());
            // the decoder measured the hand-over from the producer's prefillFinished, moved to its clock
            Timer handover = decodeMeters.get("kvbridge.handover.time").tags("mode", tag).timer();
            assertEquals(1, handover.count());
            assertEquals(0, prefillMeters.get("kvbridge.handover.time").tags("mode", tag).timer().count(), "only a consumer sees data arrive");
            // the decoder shook hands with the producer; in push the producer also with the decoder
            Timer handshake = decodeMeters.get("kvbridge.handshake.time").tags("outcome", "ok").timer();
            assertEquals(1, handshake.count());
            // the clock offset errs by at most half the round trip of one request of that handshake
            double bound = elapsed + handshake.totalTime(TimeUnit.NANOSECONDS) / 2;
            assertTrue(handover.totalTime(TimeUnit.NANOSECONDS) <= bound, handover.totalTime(TimeUnit.NANOSECONDS) + " ns within " + bound);
            assertEquals(mode == TransferMode.PUSH ? 1 : 0, prefillMeters.get("kvbridge.handshake.time").tags("outcome", "ok").timer().count());
            // who posted the transfer records it: the producer's WRITE in push, the consumer's READ in pull
            SimpleMeterRegistry poster = mode == TransferMode.PUSH ? prefillMeters : decodeMeters;
            assertEquals(1, poster.get("kvbridge.transfer.time").timer().count());
            assertEquals(512.0, poster.get("kvbridge.transfer.bytes").summary().totalAmount());

            assertEquals(0.0, prefillMeters.get("kvbridge.leases.held").gauge().value(), "the lease ended with the acknowledgement");
            assertEquals(0.0, decodeMeters.get("kvbridge.transfers.in.flight").gauge().value());
            SimpleMeterRegistry connected = mode == TransferMode.PUSH ? prefillMeters : decodeMeters;
            assertTrue(connected.get("kvbridge.peers").gauge().value() >= 1, "the poster's transport is connected to the other side");
        }
    }

    private static void awaitLease(SimpleMeterRegistry meters)
            throws InterruptedException
    {
        long deadline = System.nanoTime() + WAIT_NANOS;
        while (meters.get("kvbridge.leases.held").gauge().value() < 1 && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertEquals(1.0, meters.get("kvbridge.leases.held").gauge().value(), "the lease is held until the consumer acknowledges");
        assertNotNull(meters.find("kvbridge.transfers.in.flight").gauge());
    }
}
