package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static java.nio.charset.StandardCharsets.US_ASCII;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.Flood;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.core.sidechannel.SideChannelSettings;
import io.kvbridge.spi.geometry.Rank;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Requests in both modes while an attacker without the secret floods the producer's side channel
 * with silent connections, renewed continuously: consumers that come up during the flood shake
 * hands, every request is received and every lease is freed by its consumer, none expires.
 */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
final class FloodDuringTransferTest
{
    private static final byte[] SECRET = "a-shared-secret-of-32-bytes-long".getBytes(US_ASCII);

    @Test
    void everyRequestCompletesWhileTheProducersSideChannelIsFlooded()
            throws Exception
    {
        SideChannelSettings settings = SideChannelSettings.builder().secret(SECRET).build();
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), SideChannelClock.system(), settings)) {
            TestCache producerCache = harness.cache(TestCache.Shape.of(2, 64, false), Rank.single());
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b);
            List<FreedRequest> freed = new ArrayList<>();
            int requests = 0;
            try (Flood flood = new Flood(RankRuntime.socketAddress(producer.runtime().ownAddress()), 200, 500)) {
                // each consumer engine comes up during the flood, so each shakes hands through it
                for (int engine = 0; engine < 3; engine++) {
                    TestCache consumerCache = harness.cache(TestCache.Shape.of(2, 64, false), Rank.single());
                    ConsumerRank consumer = harness.consumer("decode-" + engine, consumerCache, true, b -> b);
                    List<String> received = new ArrayList<>();
                    List<ReceiveFailure> failed = new ArrayList<>();
                    for (int i = 0; i < 4; i++, requests++) {
                        int[] blocks = {requests * 2, requests * 2 + 1};
                        producerCache.fill(requests, blocks);
                        TransferParams params = producer.prefillFinished("req-" + requests, ids(blocks));
                        int[] consumerBlocks = {40 + i * 2, 41 + i * 2};
                        consumer.blocksAllocated("d-" + requests, params, i % 2 == 0 ? TransferMode.PULL : TransferMode.PUSH, ids(consumerBlocks));
                        int expected = i + 1;
                        await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == expected, "received");
                        assertEquals(List.of(), failed);
                        consumerCache.check(requests, consumerBlocks, 2);
                    }
                }
                int total = requests;
                await(() -> EngineHarness.drain(producer, freed).size() == total, "producer frees");
                assertTrue(flood.opened() > 200, "the flood renewed its sockets: " + flood.opened());
            }
            assertEquals(requests, freed.stream().filter(f -> f.reason() == FreeReason.COMPLETED).count(), freed.toString());
            assertEquals(0, harness.registry.get("kvbridge.lease.expired").counter().count());
            assertEquals(0, harness.registry.get("kvbridge.transfer.failed").counter().count());
            assertTrue(producer.runtime().services().sideChannel("prefill").connectionsAccepted() > 200, "the flood never reached the side channel");
        }
    }
}
