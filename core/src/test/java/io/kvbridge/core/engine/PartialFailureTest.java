package io.kvbridge.core.engine;

import static io.kvbridge.core.engine.EngineHarness.await;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.FailurePolicy;
import io.kvbridge.api.KeptTokens;
import io.kvbridge.api.ReceiveFailure;
import io.kvbridge.api.RequestState;
import io.kvbridge.api.RequestView;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.core.local.LocalBackendFactory;
import io.kvbridge.core.sidechannel.SideChannelClock;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.testkit.FaultInjectingBackendFactory;
import io.kvbridge.testkit.FaultPlan;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A failed receive reports the blocks that actually failed: a decoder reading a two-stage producer
 * whose stages hold different cache groups keeps the group whose READ succeeded, and a failure the
 * connector cannot attribute reports every block.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class PartialFailureTest
{
    // layers 0, 1 in group 0 on producer stage 0; layers 2, 3 in group 1 on producer stage 1
    private static final TestCache.Shape PRODUCER = TestCache.Shape.of(4, 16, false).stages(2, 2).groups(2, 0, 0, 1, 1);
    private static final TestCache.Shape CONSUMER = TestCache.Shape.of(4, 16, false).groups(2, 0, 0, 1, 1);

    @Test
    void aFailedReadFromOneStageInvalidatesOnlyTheGroupItWrites()
    {
        CountingBackendFactory counting = new CountingBackendFactory(new LocalBackendFactory());
        // the READ from producer stage 1 is held in progress, then fails
        counting.failingPeer = agent -> agent.contains("-pp1-");
        try (EngineHarness harness = new EngineHarness(counting, SideChannelClock.system())) {
            List<ProducerRank> stages = new ArrayList<>();
            for (int stage = 0; stage < 2; stage++) {
                TestCache cache = harness.cache(PRODUCER, new Rank(stage, 2, 0, 1));
                cache.fill(3, new int[] {4, 5, 6});
                stages.add(harness.producer("prefill", cache, true, b -> b.cacheSpec(cache.spec)));
            }
            TestCache consumerCache = harness.cache(CONSUMER, Rank.single());
            ConsumerRank consumer = harness.consumer("decode", consumerCache, true, b -> b.failurePolicy(FailurePolicy.RECOMPUTE));
            TransferParams params = stages.getFirst().prefillFinished("r", BlockIds.of(new int[] {4, 5, 6}, new int[] {4, 5, 6}));
            stages.getLast().prefillFinished("r", BlockIds.of(new int[] {4, 5, 6}, new int[] {4, 5, 6}));
            BlockIds requested = BlockIds.of(new int[] {1, 2, 3}, new int[] {7, 8, 9});
            consumer.blocksAllocated("d", params, TransferMode.PULL, requested);

            RequestView view = new RequestView();
            await(() -> consumer.inspect("d", view) && view.notificationsSeen() == 1 && view.notificationsExpected() == 2,
                    "the READ from stage 0 done, the one from stage 1 still in progress");
            assertEquals(RequestState.IN_FLIGHT, view.state());
            counting.holding = false;
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, new ArrayList<>(), failed) != null && !failed.isEmpty(), "failed");

            ReceiveFailure failure = failed.getFirst();
            assertEquals(ErrorCode.TRANSFER_FAILED, failure.code(), failure.message());
            assertEquals(BlockIds.of(new int[0], new int[] {7, 8, 9}), failure.invalidBlocks(), "group 0 arrived from stage 0 and stays valid");
            assertEquals(0, failure.firstInvalidBlock(), "group 1 is invalid from its first block on");
            assertArrayEquals(new long[] {48, 0}, KeptTokens.perGroup(failure, requested, 16));
            assertEquals(0, KeptTokens.kept(failure, requested, 16));
            // group 0's layers hold the producer's bytes
            for (int layer = 0; layer < 2; layer++) {
                for (int position = 0; position < 3; position++) {
                    long base = (long) (position + 1) * consumerCache.rankBlockBytes;
                    assertEquals(TestCache.expected(3, layer, position, 0), consumerCache.layers.get(layer).get(java.lang.foreign.ValueLayout.JAVA_BYTE,
                            base), "layer " + layer + " position " + position);
                }
            }
        }
    }

    @Test
    void aFailureTheConnectorCannotAttributeReportsEveryBlock()
    {
        FaultInjectingBackendFactory faults = new FaultInjectingBackendFactory(new LocalBackendFactory(), FaultPlan.none(1).withFailedPosts(1));
        try (EngineHarness harness = new EngineHarness(faults, SideChannelClock.system())) {
            TestCache.Shape shape = TestCache.Shape.of(2, 16, false).groups(2, 0, 1);
            ProducerRank producer = harness.producer("prefill", harness.cache(shape, Rank.single()), true, b -> b);
            ConsumerRank consumer = harness.consumer("decode", harness.cache(shape, Rank.single()), true, b -> b);
            TransferParams params = producer.prefillFinished("r", BlockIds.of(new int[] {1, 2}, new int[] {3}));
            BlockIds requested = BlockIds.of(new int[] {5, 6}, new int[] {7});
            consumer.blocksAllocated("d", params, TransferMode.PULL, requested);
            List<ReceiveFailure> failed = new ArrayList<>();
            await(() -> EngineHarness.collect(consumer, new ArrayList<>(), failed) != null && !failed.isEmpty(), "failed");
            // one READ writes both groups' regions: its failed post leaves all of them undefined
            assertEquals(requested, failed.getFirst().invalidBlocks(), failed.getFirst().message());
            assertEquals(0, failed.getFirst().firstInvalidBlock());
            assertTrue(failed.getFirst().message().contains("posting the READ"), failed.getFirst().message());
        }
    }
}
