package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static io.kvbridge.core.engine.TestCache.ids;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.ConnectorAudit;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.transfer.TransferOp;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Whole requests through real connectors, real loopback side channels and the real local transport, with every byte checked. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class TransferLifecycleTest
{
    private static final Rank SINGLE = Rank.single();

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void bothModesMoveEveryByteAndFreeTheProducerOnce(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache producerCache = harness.cache(TestCache.Shape.of(3, 64, false), SINGLE);
            TestCache consumerCache = harness.cache(TestCache.Shape.of(3, 64, false), SINGLE);
            ProducerRank producer = harness.producer("prefill", producerCache, true, b -> b);
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b);
            List<FreedRequest> freed = new ArrayList<>();
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            for (int request = 0; request < 8; request++) {
                int[] producerBlocks = {request * 4, request * 4 + 1, request * 4 + 2, request * 4 + 3};
                producerCache.fill(request, producerBlocks);
                TransferParams params = producer.prefillFinished("req-" + request, ids(producerBlocks));
                // a partial prefix hit on odd requests: the consumer needs only the last blocks
                int[] consumerBlocks = request % 2 == 0 ? new int[] {40 + request, 50 + request, 30 + request, 20 + request}
                        : new int[] {40 + request, 50 + request};
                consumer.blocksAllocated("d-" + request, params, mode, ids(consumerBlocks));
                int expected = request + 1;
                await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == expected, "request received");
                assertEquals(List.of(), failed);
                consumerCache.check(request, consumerBlocks, producerBlocks.length);
            }
            await(() -> EngineHarness.drain(producer, freed).size() == 8, "producer frees");
            for (FreedRequest request : freed) {
                assertEquals(FreeReason.COMPLETED, request.reason(), request.toString());
            }
            assertEquals(8, freed.stream().map(FreedRequest::requestId).distinct().count());
            await(() -> producer.audit().idle() && consumer.audit().idle(), "idle audits");
            assertEquals(8, harness.registry.get("kvbridge.transfer.time").timer().count());
            assertEquals(0, harness.registry.get("kvbridge.transfer.failed").counter().count());
        }
    }

    @Test
    void mlaProducerTp2ConsumerTp1EachProducerRankReceivesOneCompletion()
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, true);
            List<TestCache> producerCaches = List.of(harness.cache(shape, new Rank(0, 1, 0, 2)), harness.cache(shape, new Rank(0, 1, 1, 2)));
            List<ProducerRank> producers = new ArrayList<>();
            for (TestCache cache : producerCaches) {
                producers.add(harness.producer("mla-prefill", cache, true, b -> b));
                cache.fill(5, new int[] {3, 4});
            }
            TestCache consumerCache = harness.cache(shape, SINGLE);
            ConsumerRank consumer = harness.consumer("mla-decode", consumerCache, true, b -> b);
            TransferParams params = producers.get(0).prefillFinished("req", ids(3, 4));
            assertEquals(params.sideChannels(), producers.get(1).prefillFinished("req", ids(3, 4)).sideChannels(), "one side channel per engine");
            consumer.blocksAllocated("d-req", params, TransferMode.PULL, ids(9, 10));
            List<String> received = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, received, new ArrayList<>()) != null && received.size() == 1, "received");
            consumerCache.check(5, new int[] {9, 10}, 2);
            for (ProducerRank producer : producers) {
                List<FreedRequest> freed = new ArrayList<>();
                await(() -> EngineHarness.drain(producer, freed).size() == 1, "freed");
                assertEquals(List.of(new FreedRequest("req", FreeReason.COMPLETED)), freed);
                assertEquals(List.of("req:1:" + TransferParams.formatEpoch(producer.epoch)), recording.receivedBy(producer.runtime().transport().agentName()));
                await(() -> {
                    ConnectorAudit audit = producer.audit();
                    return audit.leasesHeld() == 0 && audit.inFlightTransfers() == 0 && audit.requests() == 0;
                }, "empty lease and in-flight state");
                assertEquals(List.of(), producer.poll(), "reported once");
            }
            assertEquals(List.of(TransferOp.READ), recording.postsBy(consumer.runtime().transport().agentName()), "one replica read");
        }
    }

    @Test
    void mlaConsumerTp1ProducerTp4ReadsRankZeroAndReleasesTheOtherReplicas()
    {
        RecordingBackendFactory recording = new RecordingBackendFactory(new LocalBackendFactory());
        try (EngineHarness harness = new EngineHarness(recording, SideChannelClock.system())) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, true);
            List<ProducerRank> producers = new ArrayList<>();
            for (int rank = 0; rank < 4; rank++) {
                TestCache cache = harness.cache(shape, new Rank(0, 1, rank, 4));
                cache.fill(rank == 0 ? 7 : 99, new int[] {1, 2, 3});
                producers.add(harness.producer("p4", cache, true, b -> b));
            }
            TestCache consumerCache = harness.cache(shape, SINGLE);
            ConsumerRank consumer = harness.consumer("d1", consumerCache, true, b -> b);
            TransferParams params = null;
            for (ProducerRank producer : producers) {
                params = producer.prefillFinished("prefill-42", ids(1, 2, 3));
            }
            consumer.blocksAllocated("decode-42", params, TransferMode.PULL, ids(5, 6, 7));
            List<String> received = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, received, new ArrayList<>()) != null && received.size() == 1, "received");
            // rank 0's replica was read (ranks 1..3 were filled with other bytes and must not be)
            consumerCache.check(7, new int[] {5, 6, 7}, 3);
            assertEquals(List.of(TransferOp.READ), recording.postsBy(consumer.runtime().transport().agentName()));
            for (ProducerRank producer : producers) {
                List<FreedRequest> freed = new ArrayList<>();
                await(() -> EngineHarness.drain(producer, freed).size() == 1, "freed");
                assertEquals(FreeReason.COMPLETED, freed.getFirst().reason());
                assertEquals(List.of("prefill-42:1:" + TransferParams.formatEpoch(producer.epoch)), recording.receivedBy(producer.runtime().transport().agentName()));
            }
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void producerTp2HeadSlicesAssembleInAConsumerTp1(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            List<ProducerRank> producers = new ArrayList<>();
            for (int rank = 0; rank < 2; rank++) {
                TestCache cache = harness.cache(shape, new Rank(0, 1, rank, 2));
                cache.fill(3, new int[] {2, 3});
                producers.add(harness.producer("gqa", cache, true, b -> b));
            }
            TestCache consumerCache = harness.cache(shape, SINGLE);
            ConsumerRank consumer = harness.consumer("gqa-d", consumerCache, true, b -> b);
            TransferParams params = producers.get(0).prefillFinished("r", ids(2, 3));
            producers.get(1).prefillFinished("r", ids(2, 3));
            consumer.blocksAllocated("d", params, mode, ids(11, 12));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "done");
            assertEquals(List.of(), failed);
            consumerCache.check(3, new int[] {11, 12}, 2);
            for (ProducerRank producer : producers) {
                List<FreedRequest> freed = new ArrayList<>();
                await(() -> EngineHarness.drain(producer, freed).size() == 1, "freed");
                assertEquals(FreeReason.COMPLETED, freed.getFirst().reason());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(TransferMode.class)
    void consumerTp2RanksEachTakeTheirHeadsFromAProducerTp1(TransferMode mode)
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false);
            TestCache producerCache = harness.cache(shape, SINGLE);
            producerCache.fill(4, new int[] {5, 6, 7});
            ProducerRank producer = harness.producer("tp1", producerCache, true, b -> b);
            List<TestCache> consumerCaches = List.of(harness.cache(shape, new Rank(0, 1, 0, 2)), harness.cache(shape, new Rank(0, 1, 1, 2)));
            List<ConsumerRank> consumers = new ArrayList<>();
            for (TestCache cache : consumerCaches) {
                consumers.add(harness.consumer("tp2", cache, true, b -> b));
            }
            TransferParams params = producer.prefillFinished("r", ids(5, 6, 7));
            for (ConsumerRank consumer : consumers) {
                consumer.blocksAllocated("d", params, mode, ids(0, 1, 2));
            }
            for (int c = 0; c < 2; c++) {
                ConsumerRank consumer = consumers.get(c);
                List<String> received = new ArrayList<>();
                List<ReceiveFailure> failed = new ArrayList<>();
                await(() -> EngineHarness.collect(consumer, received, failed) != null && received.size() + failed.size() == 1, "received");
                assertEquals(List.of(), failed);
                consumerCaches.get(c).check(4, new int[] {0, 1, 2}, 3);
            }
            // the producer rank is freed only when both consumer ranks are done
            List<FreedRequest> freed = new ArrayList<>();
            await(() -> EngineHarness.drain(producer, freed).size() == 1, "freed");
            assertEquals(new FreedRequest("r", FreeReason.COMPLETED), freed.getFirst());
        }
    }

    @Test
    void fullPrefixHitOnlyTellsTheProducerToFree()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(1, 8, false);
            ProducerRank producer = harness.producer("p", harness.cache(shape, SINGLE), true, b -> b);
            ConsumerRank consumer = harness.consumer("d", harness.cache(shape, SINGLE), true, b -> b);
            for (TransferMode mode : TransferMode.values()) {
                TransferParams params = producer.prefillFinished("hit-" + mode, ids(1, 2));
                consumer.blocksAllocated("d-" + mode, params, mode, ids());
                List<String> received = new ArrayList<>();
                await(() -> EngineHarness.collect(consumer, received, new ArrayList<>()) != null && received.size() == 1, "received");
                List<FreedRequest> freed = new ArrayList<>();
                await(() -> EngineHarness.drain(producer, freed).size() == 1, "freed");
                assertEquals(new FreedRequest("hit-" + mode, FreeReason.COMPLETED), freed.getFirst());
            }
            assertTrue(harness.registry.find("kvbridge.transfer.time").timer() == null
                    || harness.registry.get("kvbridge.transfer.time").timer().count() == 0, "no transfer for a full prefix hit");
        }
    }
}
