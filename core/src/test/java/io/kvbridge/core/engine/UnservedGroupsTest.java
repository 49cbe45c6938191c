package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.TransferMode;
import io.kvbridge.api.TransferParams;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.Rank;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Block ids given for a cache group that no region of the whole engine serves would silently not
 * move: both roles refuse them when the request is handed over, before anything is posted. A
 * pipeline stage that owns none of a group's layers leaves the group to another stage and accepts them.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
final class UnservedGroupsTest
{
    // two groups, every layer in group 0: nothing of the engine serves group 1
    private static final TestCache.Shape WHOLE = TestCache.Shape.of(2, 16, false).groups(2, 0, 0);

    @Test
    void aWholeEngineRefusesBlocksOfAGroupNoRegionServes()
    {
        try (EngineHarness harness = new EngineHarness()) {
            ProducerRank producer = harness.producer("prefill", harness.cache(WHOLE, Rank.single()), false, b -> b);
            KvBridgeException refused = assertThrows(KvBridgeException.class,
                    () -> producer.prefillFinished("r", BlockIds.of(new int[] {1}, new int[] {2})));
            assertEquals(ErrorCode.BLOCK_OUT_OF_RANGE, refused.code());
            assertTrue(refused.getMessage().contains("cache group 1") && refused.getMessage().contains("give group 1 an empty list"),
                    refused.getMessage());
            assertEquals(0, producer.audit().requests(), "nothing is held");

            ConsumerRank consumer = harness.consumer("decode", harness.cache(WHOLE, Rank.single()), false, b -> b);
            TransferParams params = producer.prefillFinished("ok", BlockIds.of(new int[] {1}, new int[0]));
            KvBridgeException refusedToo = assertThrows(KvBridgeException.class,
                    () -> consumer.blocksAllocated("d", params, TransferMode.PULL, BlockIds.of(new int[] {3}, new int[] {4})));
            assertEquals(ErrorCode.BLOCK_OUT_OF_RANGE, refusedToo.code());
            assertEquals(0, consumer.audit().requests(), "nothing was started");
            consumer.runtime().step();
            assertEquals(0, consumer.runtime().inFlightTransfers(), "nothing was posted");
        }
    }

    @Test
    void aStageOwningNoneOfAGroupsLayersAcceptsItsBlocks()
    {
        try (EngineHarness harness = new EngineHarness()) {
            // stage 0 holds layers 0, 1 (group 0); group 1's layers 2, 3 are on stage 1
            TestCache.Shape shape = TestCache.Shape.of(4, 16, false).stages(2, 2).groups(2, 0, 0, 1, 1);
            TestCache stage0 = harness.cache(shape, new Rank(0, 2, 0, 1));
            ProducerRank producer = harness.producer("prefill", stage0, false, b -> b.cacheSpec(stage0.spec));
            TransferParams params = producer.prefillFinished("r", BlockIds.of(new int[] {1}, new int[] {2}));
            assertEquals(1, producer.audit().requests());
            assertEquals(BlockIds.of(new int[] {1}, new int[] {2}), params.blockIds());
        }
    }

    @Test
    void aStageWhoseCacheSpecGivesTheGroupNoLayerAnywhereRefusesIt()
    {
        try (EngineHarness harness = new EngineHarness()) {
            TestCache.Shape shape = TestCache.Shape.of(4, 16, false).stages(2, 2).groups(2, 0, 0, 0, 0);
            TestCache stage0 = harness.cache(shape, new Rank(0, 2, 0, 1));
            ProducerRank producer = harness.producer("prefill", stage0, false, b -> b.cacheSpec(stage0.spec));
            KvBridgeException refused = assertThrows(KvBridgeException.class,
                    () -> producer.prefillFinished("r", BlockIds.of(new int[] {1}, new int[] {2})));
            assertEquals(ErrorCode.BLOCK_OUT_OF_RANGE, refused.code());
        }
    }
}
