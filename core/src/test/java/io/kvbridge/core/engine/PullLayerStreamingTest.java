package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.stepUntil;
import static io.kvbridge.core.engine.TestCache.ids;
import static io.kvbridge.core.engine.TestCache.layerName;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.RequestState;
import io.kvbridge.api.RequestView;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.geometry.Rank;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Pull streamed layer by layer: the decoder reads each layer once the producer announced it, and has the request only with all of them. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class PullLayerStreamingTest
{
    private static final int[] PRODUCER_BLOCKS = {0, 1};
    private static final int[] CONSUMER_BLOCKS = {5, 6};

    /** A producer stepped by hand and a running consumer, with four layers each. */
    private record Pair(TestCache producerCache, TestCache consumerCache, ProducerRank producer, ConsumerRank consumer)
    {
        static Pair create(EngineHarness harness, int minTokens)
        {
            TestCache.Shape shape = TestCache.Shape.of(4, 16, false);
            TestCache producerCache = harness.cache(shape, Rank.single());
            TestCache consumerCache = harness.cache(shape, Rank.single());
            producerCache.fill(3, PRODUCER_BLOCKS);
            return new Pair(producerCache, consumerCache, harness.producer("p", producerCache, false, b -> b.streamMinTokens(minTokens)),
                    harness.consumer("d", consumerCache, true, b -> b));
        }

        void step(int times)
        {
            for (int i = 0; i < times; i++) {
                producer.runtime().step();
            }
        }

        void received(String requestId)
        {
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(consumer, received, failed) != null && !received.isEmpty() || !failed.isEmpty(), "received", producer);
            assertEquals(List.of(), failed);
            assertEquals(List.of(requestId), received);
            consumerCache.check(3, CONSUMER_BLOCKS, 2);
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "completed", producer);
            assertEquals(FreeReason.COMPLETED, freed.getFirst().reason());
            assertTrue(producer.audit().idle(), producer.audit().toString());
            EngineHarness.await(() -> consumer.audit().idle(), "consumer idle");
        }
    }

    /** READs that ended well. */
    static long reads(EngineHarness harness)
    {
        var timer = harness.registry.find("kvbridge.transfer.time").timer();
        return timer == null ? 0 : timer.count();
    }

    static double dropped(EngineHarness harness)
    {
        return harness.registry.find("kvbridge.stream.announcements.dropped").counter().count();
    }

    @Test
    void eachLayerIsReadOnceAnnouncedAndTheRequestIsReceivedOnlyAfterAllLayers()
    {
        try (EngineHarness harness = new EngineHarness()) {
            Pair pair = Pair.create(harness, 0);
            TransferParams params = pair.producer().prefillStarted("s-1", ids(PRODUCER_BLOCKS));
            assertTrue(params.modes().contains(TransferMode.PULL), "a streamed request may be pulled: " + params.modes());
            assertEquals(TransferParams.UNKNOWN_TIME, params.finishedNanos(), "handed over before the prefill finished");
            pair.consumer().blocksAllocated("d-1", params, TransferMode.PULL, ids(CONSUMER_BLOCKS));
            RequestView view = new RequestView();
            stepUntil(() -> pair.consumer().inspect("d-1", view) && view.state() == RequestState.REGISTERED, "watching", pair.producer());
            pair.step(20);
            assertTrue(pair.consumerCache().untouched(), "read before any layer was announced");
            pair.producer().layerComputed("s-1", layerName(0));
            stepUntil(() -> pair.consumer().layerLoaded("d-1", layerName(0)), "layer 0 read", pair.producer());
            assertTrue(pair.consumerCache().layerHolds(0, 3, CONSUMER_BLOCKS, 2), "layer 0 is in place once said loaded");
            // a peer that does not serve the request cannot make a layer readable
            harness.rawPeerTo(pair.consumer()).send(PullMessages.layersComputed("d-1", "s-1", List.of(layerName(1)), false, pair.consumer().epoch));
            EngineHarness.await(() -> dropped(harness) == 1, "the stranger's announcement dropped and counted");
            pair.step(50);
            assertFalse(pair.consumer().layerLoaded("d-1", layerName(1)), "layer 1 read before it was announced");
            for (int layer = 1; layer < 4; layer++) {
                assertTrue(pair.consumerCache().layerZero(layer, CONSUMER_BLOCKS), "layer " + layer + " read before it was announced");
            }
            assertEquals(1, reads(harness));
            for (int layer = 1; layer < 4; layer++) {
                pair.producer().layerComputed("s-1", layerName(layer));
            }
            stepUntil(() -> pair.consumer().layerLoaded("d-1", layerName(3)), "layers 1-3 read", pair.producer());
            for (int layer = 0; layer < 4; layer++) {
                assertTrue(pair.consumerCache().layerHolds(layer, 3, CONSUMER_BLOCKS, 2), "layer " + layer);
            }
            pair.step(50);
            assertTrue(pair.consumer().poll().received().isEmpty(), "received before all layers were said computed");
            assertEquals(List.of(), pair.producer().poll(), "freed before all layers were said computed");
            pair.producer().allLayersComputed("s-1");
            pair.received("d-1");
            assertEquals(2, reads(harness), "layer 0, then layers 1-3 together; each entry read once, and all-done reads nothing more");
            assertEquals(1, dropped(harness));
        }
    }

    @Test
    void layersAnnouncedBeforeTheConsumerStartsAreReadInItsFirstRead()
    {
        try (EngineHarness harness = new EngineHarness()) {
            Pair pair = Pair.create(harness, 0);
            TransferParams params = pair.producer().prefillStarted("s-2", ids(PRODUCER_BLOCKS));
            pair.producer().layerComputed("s-2", layerName(2));
            pair.producer().layerComputed("s-2", layerName(0));
            pair.step(5);
            pair.consumer().blocksAllocated("d-2", params, TransferMode.PULL, ids(CONSUMER_BLOCKS));
            stepUntil(() -> pair.consumer().layerLoaded("d-2", layerName(0)) && pair.consumer().layerLoaded("d-2", layerName(2)), "layers 0 and 2 read",
                    pair.producer());
            assertTrue(pair.consumerCache().layerZero(1, CONSUMER_BLOCKS) && pair.consumerCache().layerZero(3, CONSUMER_BLOCKS));
            assertFalse(pair.consumer().layerLoaded("d-2", layerName(1)));
            assertEquals(1, reads(harness), "what was announced before the consumer asked comes in one answer, read at once");
            pair.producer().layerComputed("s-2", layerName(1));
            pair.producer().layerComputed("s-2", layerName(3));
            pair.producer().allLayersComputed("s-2");
            pair.received("d-2");
        }
    }

    @Test
    void aConsumerThatStartsAfterAllLayersReadsTheWholeRequestAtOnce()
    {
        try (EngineHarness harness = new EngineHarness()) {
            Pair pair = Pair.create(harness, 0);
            TransferParams params = pair.producer().prefillStarted("s-3", ids(PRODUCER_BLOCKS));
            for (int layer = 0; layer < 4; layer++) {
                pair.producer().layerComputed("s-3", layerName(layer));
            }
            pair.producer().allLayersComputed("s-3");
            pair.step(5);
            pair.consumer().blocksAllocated("d-3", params, TransferMode.PULL, ids(CONSUMER_BLOCKS));
            pair.received("d-3");
            assertEquals(1, reads(harness), "one read, carrying the completion");
        }
    }

    @Test
    void aRequestBelowTheThresholdIsReadWholeOnceAllLayersAreComputed()
    {
        try (EngineHarness harness = new EngineHarness()) {
            // two blocks of 16 tokens: 32 tokens, below 33
            Pair pair = Pair.create(harness, 33);
            pair.consumer().blocksAllocated("d-w", pair.producer().prefillStarted("s-w", ids(PRODUCER_BLOCKS)), TransferMode.PULL, ids(CONSUMER_BLOCKS));
            RequestView view = new RequestView();
            stepUntil(() -> pair.consumer().inspect("d-w", view) && view.state() == RequestState.REGISTERED, "watching", pair.producer());
            for (int layer = 0; layer < 4; layer++) {
                pair.producer().layerComputed("s-w", layerName(layer));
            }
            pair.step(100);
            assertTrue(pair.consumerCache().untouched(), "a request below the threshold was read before all its layers were said computed");
            assertEquals(0, reads(harness));
            pair.producer().allLayersComputed("s-w");
            pair.received("d-w");
            assertEquals(1, reads(harness), "one read");
        }
    }

    @Test
    void announcementsForUnknownRequestsOrOfAnotherEpochAreDroppedAndCounted()
    {
        try (EngineHarness harness = new EngineHarness()) {
            Pair pair = Pair.create(harness, 0);
            EngineHarness.RawPeer peer = harness.rawPeerTo(pair.consumer());
            peer.send(PullMessages.layersComputed("d-none", "s-none", List.of(layerName(0)), true, pair.consumer().epoch));
            EngineHarness.await(() -> dropped(harness) == 1, "unknown request dropped and counted");
            // a pushed request is not read on anyone's word
            pair.consumer().blocksAllocated("d-p", pair.producer().prefillStarted("s-p", ids(PRODUCER_BLOCKS)), TransferMode.PUSH, ids(CONSUMER_BLOCKS));
            RequestView view = new RequestView();
            stepUntil(() -> pair.consumer().inspect("d-p", view) && view.state() == RequestState.REGISTERED, "registered", pair.producer());
            peer.send(PullMessages.layersComputed("d-p", "s-p", List.of(layerName(0)), false, pair.consumer().epoch));
            EngineHarness.await(() -> dropped(harness) == 2, "announcement for a pushed request dropped and counted");
            assertTrue(pair.consumerCache().untouched());
            pair.producer().abort("s-p");
            stepUntil(() -> EngineHarness.drain(pair.producer(), new ArrayList<>()).size() == 1, "aborted", pair.producer());
        }
    }

    @Test
    void aWatchForARequestTheProducerDoesNotHoldIsDroppedAndCounted()
    {
        try (EngineHarness harness = new EngineHarness()) {
            Pair pair = Pair.create(harness, 0);
            Messages.Registration watch = new Messages.Registration("d-x", "s-none", "d", "127.0.0.1", 1, 0, 0, 1, false, io.kvbridge.api.BlockIds.empty(),
                    pair.producer().epoch, pair.consumer().epoch, new byte[0]);
            harness.rawPeerTo(pair.producer()).send(PullMessages.watch(watch));
            stepUntil(() -> dropped(harness) == 1, "the watch dropped and counted", pair.producer());
            assertTrue(pair.producer().audit().idle(), pair.producer().audit().toString());
        }
    }
}
