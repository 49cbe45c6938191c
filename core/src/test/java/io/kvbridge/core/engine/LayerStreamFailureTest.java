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
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.ManualClock;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.testkit.FaultInjectingBackendFactory;
import io.kvbridge.testkit.FaultPlan;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A streamed request that loses a layer, pushed or pulled layer by layer, fails on the decoder with its
 * blocks invalid; it is never reported received.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class LayerStreamFailureTest
{
    private static final int[] PRODUCER_BLOCKS = {0, 1};
    private static final int[] CONSUMER_BLOCKS = {5, 6};

    @ParameterizedTest
    @EnumSource(names = {"PUSH", "PULL"})
    void aLayerThatNeverComesFailsTheRequestAtTheRegistrationTimeout(TransferMode mode)
    {
        ManualClock clock = new ManualClock();
        try (EngineHarness harness = new EngineHarness(new LocalBackendFactory(), clock)) {
            TestCache.Shape shape = TestCache.Shape.of(4, 16, false);
            TestCache producerCache = harness.cache(shape, Rank.single());
            producerCache.fill(3, PRODUCER_BLOCKS);
            ProducerRank producer = harness.producer("p", producerCache, false, b -> b.leaseDuration(Duration.ofSeconds(30)).streamMinTokens(0));
            ConsumerRank consumer = harness.consumer("d", harness.cache(shape, Rank.single()), false,
                    b -> b.registrationTimeout(Duration.ofSeconds(5)));
            TransferParams params = producer.prefillStarted("s-1", ids(PRODUCER_BLOCKS));
            consumer.blocksAllocated("d-1", params, mode, ids(CONSUMER_BLOCKS));
            producer.layerComputed("s-1", layerName(0));
            stepUntil(() -> consumer.layerLoaded("d-1", layerName(0)), "layer 0 loaded", producer, consumer);
            // layers 1 to 3 never come: the decoder's registration timeout passes
            clock.advance(Duration.ofSeconds(6));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(consumer, received, failed) != null && failed.size() == 1, "failed", producer, consumer);
            assertEquals(List.of(), received);
            ReceiveFailure failure = failed.getFirst();
            assertEquals("d-1", failure.requestId());
            assertEquals(ErrorCode.DEADLINE_EXCEEDED, failure.code());
            if (mode == TransferMode.PULL) {
                assertTrue(failure.message().contains("announced"), failure.message());
            }
            assertEquals(ids(CONSUMER_BLOCKS), failure.invalidBlocks(), "the unfinished producer rank's groups are undefined");
            assertEquals(0, failure.firstInvalidBlock());
            // the producer frees the blocks when its lease passes
            clock.advance(Duration.ofSeconds(30));
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "expired", producer, consumer);
            assertEquals(new FreedRequest("s-1", FreeReason.EXPIRED), freed.getFirst());
            assertTrue(producer.audit().idle(), producer.audit().toString());
            stepUntil(() -> consumer.audit().idle(), "consumer idle", producer, consumer);
        }
    }

    @ParameterizedTest
    @EnumSource(names = {"PUSH", "PULL"})
    void aLayerWhoseTransferFailsFailsTheRequestAndNothingLaterMoves(TransferMode mode)
    {
        FaultPlan plan = new FaultPlan(7L, 0, 0, 0, 1, 0, 1.0, 0);
        try (EngineHarness harness = new EngineHarness(new FaultInjectingBackendFactory(new LocalBackendFactory(), plan), new ManualClock())) {
            TestCache.Shape shape = TestCache.Shape.of(4, 16, false);
            TestCache producerCache = harness.cache(shape, Rank.single());
            producerCache.fill(3, PRODUCER_BLOCKS);
            ProducerRank producer = harness.producer("p", producerCache, false, b -> b.streamMinTokens(0));
            ConsumerRank consumer = harness.consumer("d", harness.cache(shape, Rank.single()), false, b -> b);
            TransferParams params = producer.prefillStarted("s-2", ids(PRODUCER_BLOCKS));
            consumer.blocksAllocated("d-2", params, mode, ids(CONSUMER_BLOCKS));
            producer.layerComputed("s-2", layerName(0));
            List<String> received = new ArrayList<>();
            List<ReceiveFailure> failed = new ArrayList<>();
            stepUntil(() -> EngineHarness.collect(consumer, received, failed) != null && failed.size() == 1, "failed", producer, consumer);
            assertEquals(List.of(), received);
            assertEquals(ErrorCode.TRANSFER_FAILED, failed.getFirst().code(), failed.getFirst().message());
            assertEquals(ids(CONSUMER_BLOCKS), failed.getFirst().invalidBlocks());
            assertEquals(0, failed.getFirst().firstInvalidBlock());
            long transfers = ended(harness);
            for (int layer = 1; layer < 4; layer++) {
                producer.layerComputed("s-2", layerName(layer));
            }
            producer.allLayersComputed("s-2");
            for (int i = 0; i < 50; i++) {
                producer.runtime().step();
                consumer.runtime().step();
            }
            assertEquals(transfers, ended(harness), "no " + mode + " transfer after the failed one");
            assertTrue(consumer.poll().received().isEmpty(), "never received with a layer missing");
            producer.abort("s-2");
            List<FreedRequest> freed = new ArrayList<>();
            stepUntil(() -> EngineHarness.drain(producer, freed).size() == 1, "aborted", producer, consumer);
            assertEquals(new FreedRequest("s-2", FreeReason.ABORTED), freed.getFirst());
            assertTrue(producer.audit().idle(), producer.audit().toString());
            if (mode == TransferMode.PUSH) {
                assertFalse(consumer.audit().requests() > 0, consumer.audit().toString());
            }
            else {
                stepUntil(() -> consumer.audit().idle(), "consumer idle", producer, consumer);
            }
        }
    }

    /** Transfers that ended, well or not. */
    private static long ended(EngineHarness harness)
    {
        var failed = harness.registry.find("kvbridge.transfer.failed").counter();
        var timer = harness.registry.find("kvbridge.transfer.time").timer();
        return (timer == null ? 0 : timer.count()) + (failed == null ? 0 : (long) failed.count());
    }
}
