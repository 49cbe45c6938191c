package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.geometry.Rank;
import io.micrometer.core.instrument.DistributionSummary;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The engine records each transfer's descriptor pairs and the operations the transport issued for
 * them, through real connectors over the real {@code local} transport, which coalesces.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class TransferOperationsMetricTest
{
    // 3 layers, one allocation (and registration) each: a request of 4 blocks is 12 pairs
    private static final TestCache.Shape SHAPE = TestCache.Shape.of(3, 64, false);
    private static final int[] PRODUCER_BLOCKS = {0, 1, 2, 3};

    @Test
    void contiguousBlocksAreOneOperationPerLayerAndScatteredBlocksOnePerPair()
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            Requests requests = new Requests(harness);
            // consecutive on both sides: the 4 blocks of a layer are one copy, layers never merge
            requests.pull(0, new int[] {10, 11, 12, 13});
            assertEquals(12.0, summary(harness, "kvbridge.transfer.descriptors").totalAmount());
            assertEquals(3.0, summary(harness, "kvbridge.transfer.operations").totalAmount());
            // scattered on the consumer: nothing merges
            requests.pull(1, new int[] {40, 50, 30, 20});
            assertEquals(24.0, summary(harness, "kvbridge.transfer.descriptors").totalAmount());
            assertEquals(15.0, summary(harness, "kvbridge.transfer.operations").totalAmount());
            assertEquals(2, summary(harness, "kvbridge.transfer.operations").count());
        }
    }

    @Test
    void aTransportThatDoesNotCountOperationsIsRecordedAsOnePerPair()
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        recording.operationsUnreported = true;
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            new Requests(harness).pull(0, new int[] {10, 11, 12, 13});
            assertEquals(12.0, summary(harness, "kvbridge.transfer.descriptors").totalAmount());
            assertEquals(12.0, summary(harness, "kvbridge.transfer.operations").totalAmount());
        }
    }

    private static DistributionSummary summary(EngineHarness harness, String name)
    {
        return harness.registry.get(name).summary();
    }

    /** One producer and one consumer; each request is pulled, checked byte by byte, and its transfer recorded. */
    private static final class Requests
    {
        private final EngineHarness harness;
        private final TestCache producerCache;
        private final TestCache consumerCache;
        private final ProducerRank producer;
        private final ConsumerRank consumer;
        private final List<String> received = new ArrayList<>();
        private final List<ReceiveFailure> failed = new ArrayList<>();

        Requests(EngineHarness harness)
        {
            this.harness = harness;
            this.producerCache = harness.cache(SHAPE, Rank.single());
            this.consumerCache = harness.cache(SHAPE, Rank.single());
            this.producer = harness.producer("prefill", producerCache, true, b -> b);
            this.consumer = harness.consumer("decode", consumerCache, true, b -> b);
        }

        void pull(int request, int[] consumerBlocks)
        {
            producerCache.fill(request, PRODUCER_BLOCKS);
            TransferParams params = producer.prefillFinished("req-" + request, ids(PRODUCER_BLOCKS));
            consumer.blocksAllocated("d-" + request, params, TransferMode.PULL, ids(consumerBlocks));
            int expected = request + 1;
            await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == expected, "request received");
            assertEquals(List.of(), failed);
            consumerCache.check(request, consumerBlocks, PRODUCER_BLOCKS.length);
            await(() -> harness.registry.find("kvbridge.transfer.operations").summary() != null
                    && harness.registry.get("kvbridge.transfer.operations").summary().count() == expected, "transfer recorded");
        }
    }
}
