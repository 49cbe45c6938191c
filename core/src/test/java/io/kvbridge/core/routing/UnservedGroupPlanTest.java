package io.kvbridge.core.routing;

import static io.kvbridge.core.routing.Stage.stage;
import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.TransferMode;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Ids of a cache group no region serves would silently not move. A plan between whole engines
 * refuses them; a stage pair's plan skips them on purpose, and the request's plans together must
 * serve every group it names.
 */
final class UnservedGroupPlanTest
{
    // L0 in group 0 (full attention), L1 in group 1 (sliding window)
    private static final List<LayerSpec> TWO_GROUPS = List.of(new LayerSpec("L0", 0), new LayerSpec("L1", 1));

    @Test
    void aPlanBetweenWholeEnginesRefusesIdsOfAGroupNoEntryAddresses()
    {
        // every layer in group 0: group 1 has no region on either side
        List<LayerSpec> layers = List.of(new LayerSpec("L0", 0), new LayerSpec("L1", 0));
        CacheGeometry local = stage(0, 1, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .region(0x1000, 128, 4, 0, "L0").region(0x2000, 128, 4, 0, "L1").build();
        CacheGeometry remote = stage(0, 1, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .region(0x9000, 128, 4, 0, "L0").region(0xA000, 128, 4, 0, "L1").build();
        TransferPlan plan = Routing.plan(layers, local, remote, TransferMode.PULL);
        assertTrue(plan.serves(0));
        assertFalse(plan.serves(1));
        BlockSelection mine = BlockSelection.of(new int[] {1}, new int[] {2, 3});
        BlockSelection theirs = BlockSelection.of(new int[] {0}, new int[] {1, 2});
        int[] out = new int[8];
        assertCode(ErrorCode.BLOCK_OUT_OF_RANGE, () -> plan.indexCount(0, mine), "2 block ids for cache group 1 (SLIDING_WINDOW)", "addresses group 1",
                "give group 1 an empty list");
        assertCode(ErrorCode.BLOCK_OUT_OF_RANGE, () -> plan.indices(0, mine, out, theirs, new int[8]), "cache group 1");
        // the same request without ids for group 1 moves
        assertEquals(2, plan.indices(0, BlockSelection.of(new int[] {1}, new int[0]), out, BlockSelection.of(new int[] {0}, new int[0]), new int[8]));
        assertCode(ErrorCode.BLOCK_OUT_OF_RANGE, () -> TransferPlan.checkServed(List.of(plan), mine), "cache group 1");
    }

    @Test
    void stagePlansSkipWhatTheirStageLacksAndTogetherServeTheRequest()
    {
        CacheGeometry decoder = stage(0, 1, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .region(0x1000, 128, 4, 0, "L0").region(0x2000, 128, 4, 1, "L1").build();
        CacheGeometry producer0 = stage(0, 2, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW).region(0x9000, 128, 4, 0, "L0").build();
        CacheGeometry producer1 = stage(1, 2, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW).region(0xA000, 128, 4, 1, "L1").build();
        TransferPlan plan0 = TransferPlan.pair(decoder, producer0, Routing.sharedLayers(TWO_GROUPS, decoder, producer0));
        TransferPlan plan1 = TransferPlan.pair(decoder, producer1, Routing.sharedLayers(TWO_GROUPS, decoder, producer1));
        BlockSelection mine = BlockSelection.of(new int[] {1}, new int[] {2});
        BlockSelection theirs = BlockSelection.of(new int[] {0}, new int[] {3});
        // stage 0's plan moves group 0 and skips group 1, which stage 1's plan moves
        assertEquals(1, plan0.indices(0, mine, new int[4], theirs, new int[4]));
        assertEquals(1, plan1.indices(0, mine, new int[4], theirs, new int[4]));
        TransferPlan.checkServed(List.of(plan0, plan1), mine);
        // without stage 1 nothing moves group 1: the request is refused, naming the group
        assertCode(ErrorCode.BLOCK_OUT_OF_RANGE, () -> TransferPlan.checkServed(List.of(plan0), mine), "1 block ids for cache group 1 (SLIDING_WINDOW)",
                "1 plans");
        assertCode(ErrorCode.BLOCK_OUT_OF_RANGE, () -> TransferPlan.checkServed(List.of(), mine), "cache group 0", "no transfer plan");
        TransferPlan.checkServed(List.of(plan0), BlockSelection.of(new int[] {1}, new int[0]));
    }

    @Test
    void aDecoderStageLeavesTheGroupsItDoesNotHoldToItsOtherStages()
    {
        CacheGeometry decoderStage0 = stage(0, 2, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW).region(0x1000, 128, 4, 0, "L0").build();
        CacheGeometry producer = stage(0, 1, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .region(0x9000, 128, 4, 0, "L0").region(0xA000, 128, 4, 1, "L1").build();
        TransferPlan plan = TransferPlan.pair(decoderStage0, producer, Routing.sharedLayers(TWO_GROUPS, decoderStage0, producer));
        BlockSelection mine = BlockSelection.of(new int[] {1}, new int[] {2});
        assertFalse(plan.serves(1));
        assertEquals(1, plan.indexCount(0, mine), "group 1 is decoder stage 1's");
        TransferPlan.checkServed(List.of(plan), mine);
    }
}
