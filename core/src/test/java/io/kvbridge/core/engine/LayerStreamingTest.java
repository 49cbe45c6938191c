package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.stepUntil;
import static io.kvbridge.core.engine.TestCache.ids;
import static io.kvbridge.core.engine.TestCache.layerName;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.kvbridge.api.FreeReason;
import io.kvbridge.api.FreedRequest;
import io.kvbridge.api.Integrity;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.RequestState;
import io.kvbridge.api.RequestView;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Rank;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.slf4j.LoggerFactory;

/** Push streamed layer by layer: each layer moves once it is announced, the request completes only with all of them. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class LayerStreamingTest
{
    private static final int[] PRODUCER_BLOCKS = {0, 1};
    private static final int[] CONSUMER_BLOCKS = {5, 6};

    /** A producer stepped by hand and a running consumer, with four layers each. */
    private record Pair(TestCache producerCache, TestCache consumerCache, ProducerRank producer, ConsumerRank consumer)
    {
        static Pair create(EngineHarness harness)
        {
            TestCache.Shape shape = TestCache.Shape.of(4, 16, false);
            TestCache producerCache = harness.cache(shape, Rank.single());
            TestCache consumerCache = harness.cache(shape, Rank.single());
            producerCache.fill(3, PRODUCER_BLOCKS);
            // every request streams, however small
            return new Pair(producerCache, consumerCache, harness.producer("p", producerCache, false, b -> b.streamMinTokens(0)),
                    harness.consumer("d", consumerCache, true, b -> b));
        }

        void step(int times)
        {
            for (int i = 0; i < times; i++) {
                producer.runtime().step();
            }
        }
    }

    private static long writes(EngineHarness harness)
    {
        var timer = harness.registry.find("kvbridge.transfer.time").timer();
        return timer == null ? 0 : timer.count();
    }

    @Test
    void eachLayerMovesOnceAnnouncedAndTheRequestCompletesOnlyAfterAllLayers()
    {
        Logger runtimeLog = (Logger) LoggerFactory.getLogger(RankRuntime.class);
        ListAppender<ILoggingEvent> errors = new ListAppender<>();
        errors.start();
        runtimeLog.addAppender(errors);
        try (EngineHarness harness = new EngineHarness()) {
            Pair pair = Pair.create(harness);
            TransferParams params = pair.producer().prefillStarted("s-1", ids(PRODUCER_BLOCKS));
            assertEquals(EnumSet.of(TransferMode.PUSH, TransferMode.PULL), params.modes(), "a streamed request is pushed or pulled");
            pair.consumer().blocksAllocated("d-1", params, TransferMode.PUSH, ids(CONSUMER_BLOCKS));
            pair.producer().layerComputed("s-1", layerName(0));
            stepUntil(() -> pair.consumerCache().layerHolds(0, 3, CONSUMER_BLOCKS, 2), "layer 0 landed", pair.producer());
            stepUntil(() -> pair.consumer().layerLoaded("d-1", layerName(0)), "layer 0 reported loaded", pair.producer());
            pair.step(50);
            assertTrue(!pair.consumer().layerLoaded("d-1", layerName(1)), "layer 1 is not loaded before it was announced");
            // a peer that was not asked to write cannot make a layer look loaded
            harness.rawPeerTo(pair.consumer()).send(Messages.layersLanded("d-1", "s-1", List.of(layerName(1)), pair.consumer().epoch));
            pair.step(50);
            assertTrue(!pair.consumer().layerLoaded("d-1", layerName(1)), "a stranger's word changed the readiness");
            for (int layer = 1; layer < 4; layer++) {
                assertTrue(pair.consumerCache().layerZero(layer, CONSUMER_BLOCKS), "layer " + layer + " moved before it was announced");
            }
            assertEquals(1, writes(harness));
            for (int layer = 1; layer < 4; layer++) {
                pair.producer().layerComputed("s-1", layerName(layer));
            }
            stepUntil(() -> pair.consumerCache().layerHolds(3, 3, CONSUMER_BLOCKS, 2), "layers 1-3 landed", pair.producer());
            stepUntil(() -> pair.consumer().layerLoaded("d-1", layerName(3)), "layer 3 reported loaded", pair.producer());
            for (int layer = 0; layer < 4; layer++) {
                assertTrue(pair.consumer().layerLoaded("d-1", layerName(layer)), "layer " + layer);
            }
            refused(() -> pair.consumer().layerLoaded("d-1", "model.layers.9.self_attn"), "d-1", "model.layers.9.self_attn");
            refused(() -> pair.consumer().layerLoaded("d-unknown", layerName(0)), "d-unknown", "not being received");
            pair.step(50);
            assertTrue(pair.consumer().poll().received().isEmpty(), "received before all layers were said computed");
            assertEquals(List.of(), pair.producer().poll());

            pair.producer().allLayersComputed("s-1");
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(pair.consumer(), received, failed) != null && received.size() == 1, "received", pair.producer());
            assertEquals(List.of(), failed);
            pair.consumerCache().check(3, CONSUMER_BLOCKS, 2);
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(pair.producer(), freed).size() == 1, "acknowledged", pair.producer());
            assertEquals(new FreedRequest("s-1", FreeReason.COMPLETED), freed.getFirst());
            assertEquals(2, writes(harness), "layer 0, then layers 1-3 together; each entry written once");
            assertTrue(pair.producer().audit().idle(), pair.producer().audit().toString());
            EngineHarness.await(() -> pair.consumer().audit().idle(), "consumer idle");
            assertEquals(List.of(), errors.list.stream().filter(event -> event.getLevel() == Level.ERROR).map(ILoggingEvent::getFormattedMessage).toList(),
                    "a worker step failed");
        }
        finally {
            runtimeLog.detachAppender(errors);
        }
    }

    @Test
    void layersComputedBeforeTheRegistrationMoveInItsFirstWrite()
    {
        try (EngineHarness harness = new EngineHarness()) {
            Pair pair = Pair.create(harness);
            TransferParams params = pair.producer().prefillStarted("s-2", ids(PRODUCER_BLOCKS));
            pair.producer().layerComputed("s-2", layerName(2));
            pair.producer().layerComputed("s-2", layerName(0));
            pair.step(5);
            pair.consumer().blocksAllocated("d-2", params, TransferMode.PUSH, ids(CONSUMER_BLOCKS));
            stepUntil(() -> pair.consumerCache().layerHolds(0, 3, CONSUMER_BLOCKS, 2) && pair.consumerCache().layerHolds(2, 3, CONSUMER_BLOCKS, 2),
                    "layers 0 and 2 landed", pair.producer());
            assertTrue(pair.consumerCache().layerZero(1, CONSUMER_BLOCKS) && pair.consumerCache().layerZero(3, CONSUMER_BLOCKS));
            pair.producer().layerComputed("s-2", layerName(1));
            pair.producer().layerComputed("s-2", layerName(3));
            pair.producer().allLayersComputed("s-2");
            List<String> received = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(pair.consumer(), received, new ArrayList<>()) != null && received.size() == 1, "received",
                    pair.producer());
            pair.consumerCache().check(3, CONSUMER_BLOCKS, 2);
        }
    }

    @Test
    void aRequestBelowTheThresholdMovesWholeOnceAllLayersAreComputed()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(4, 16, false);
            TestCache producerCache = harness.cache(shape, Rank.single());
            TestCache consumerCache = harness.cache(shape, Rank.single());
            producerCache.fill(3, PRODUCER_BLOCKS);
            // two blocks of 16 tokens: 32 tokens, below 33
            ProducerRank producer = harness.producer("p", producerCache, false, b -> b.streamMinTokens(33));
            ConsumerRank consumer = harness.consumer("d", consumerCache, true, b -> b);
            consumer.blocksAllocated("d-w", producer.prefillStarted("s-w", ids(PRODUCER_BLOCKS)), TransferMode.PUSH, ids(CONSUMER_BLOCKS));
            RequestView view = new RequestView();
            stepUntil(() -> consumer.inspect("d-w", view) && view.state() == RequestState.REGISTERED, "registered", producer);
            for (int layer = 0; layer < 4; layer++) {
                producer.layerComputed("s-w", layerName(layer));
            }
            for (int i = 0; i < 100; i++) {
                producer.runtime().step();
            }
            assertTrue(consumerCache.untouched(), "a request below the threshold moved before all its layers were said computed");
            assertEquals(0, writes(harness));
            producer.allLayersComputed("s-w");
            List<String> received = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(consumer, received, new ArrayList<>()) != null && received.size() == 1, "received", producer);
            consumerCache.check(3, CONSUMER_BLOCKS, 2);
            // the decoder may report the request before the producer's worker took the write's completion, which records it
            stepUntil(() -> writes(harness) >= 1, "the write's completion recorded", producer);
            for (int i = 0; i < 100; i++) {
                producer.runtime().step();
            }
            assertEquals(1, writes(harness), "one write");
        }
    }

    @Test
    void badAnnouncementsAreRefusedNamingRequestAndLayerAndMoveNothing()
    {
        try (EngineHarness harness = new EngineHarness()) {
            Pair pair = Pair.create(harness);
            ProducerRank producer = pair.producer();
            producer.prefillStarted("s-3", ids(PRODUCER_BLOCKS));
            refused(() -> producer.layerComputed("s-3", "model.layers.9.self_attn"), "s-3", "model.layers.9.self_attn");
            refused(() -> producer.layerComputed("never-started", layerName(0)), "never-started", layerName(0));
            producer.layerComputed("s-3", layerName(0));
            refused(() -> producer.layerComputed("s-3", layerName(0)), "s-3", layerName(0));
            refused(() -> producer.allLayersComputed("s-3"), "s-3", layerName(1));
            for (int layer = 1; layer < 4; layer++) {
                producer.layerComputed("s-3", layerName(layer));
            }
            producer.allLayersComputed("s-3");
            refused(() -> producer.layerComputed("s-3", layerName(1)), "s-3", layerName(1));
            refused(() -> producer.allLayersComputed("s-3"), "s-3", "before");
            pair.step(20);
            assertEquals(0, writes(harness), "no consumer registered: nothing moved");
            producer.abort("s-3");
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "aborted", producer);
            assertEquals(new FreedRequest("s-3", FreeReason.ABORTED), freed.getFirst());
            assertTrue(producer.audit().idle(), producer.audit().toString());
            refused(() -> producer.layerComputed("s-3", layerName(0)), "s-3", "not streamed");
            assertTrue(pair.consumerCache().untouched());
        }
    }

    @Test
    void integrityRefusesStreamingWithATypedError()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache cache = harness.cache(TestCache.Shape.of(4, 16, false), Rank.single());
            ProducerRank checked = harness.producer("p-digests", cache, false, b -> b.integrity(Integrity.CRC32C));
            KvBridgeException digests = assertThrows(KvBridgeException.class, () -> checked.prefillStarted("s-5", ids(0)));
            assertEquals(ErrorCode.UNSUPPORTED, digests.code());
            assertTrue(digests.getMessage().contains("s-5") && digests.getMessage().contains("prefillFinished"), digests.getMessage());
            assertEquals(0, checked.audit().requests(), "nothing held");
        }
    }

    private static void refused(Runnable call, String requestId, String named)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, call::run);
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code(), e.getMessage());
        assertTrue(e.getMessage().contains(requestId) && e.getMessage().contains(named), e.getMessage());
    }
}
