package io.kvbridge.core.planner;

import io.kvbridge.transport.DescriptorPairs;
import static io.kvbridge.core.planner.Errors.assertError;
import static io.kvbridge.core.planner.Geometries.geometry;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

final class DescriptorPairsTest
{
    @Test
    void consecutiveBlocksOfContiguousRegionsMergeIntoOneCopyPerRegion()
    {
        // 80 layers x 64 consecutive blocks, homogeneous TP: 5,120 pairs become 80 copies
        CacheGeometry side = geometry(8, 0, 1).uniformRegions(80, 0x100000, 4096, 128, -1, SplitClass.SPLIT).build();
        TransferPlan plan = TransferPlan.pair(side, side);
        BlockSelection blocks = BlockSelection.of(IntStream.range(10, 74).toArray());
        int[][] pairs = PlanRequests.indices(plan, blocks, blocks);
        assertEquals(5120, pairs[0].length);
        DescriptorPairs copies = new DescriptorPairs(0);
        DescriptorList local = plan.localDescriptors(0);
        DescriptorList remote = plan.remoteDescriptors(side);
        assertEquals(5120, copies.resolve(local, pairs[0], remote, pairs[1], 5120, false));
        long bytes = copies.totalBytes();
        assertEquals(80, copies.resolve(local, pairs[0], remote, pairs[1], 5120, true));
        assertEquals(bytes, copies.totalBytes());
        assertEquals(64 * 4096, copies.length(0));
    }

    @Test
    void headSlicesOnOneSideDoNotMerge()
    {
        // consumer TP 2 reads half of each producer block, so the producer side is strided: 80 x 64 pairs stay 5,120 copies
        CacheGeometry consumer = geometry(8, 1, 2).uniformRegions(80, 0x300000, 32_768, 128, -1, SplitClass.SPLIT).build();
        CacheGeometry producer = geometry(8, 0, 1).uniformRegions(80, 0x10000000, 65_536, 256, -1, SplitClass.SPLIT).build();
        TransferPlan plan = TransferPlan.pair(consumer, producer);
        BlockSelection local = BlockSelection.of(IntStream.range(10, 74).toArray());
        BlockSelection remote = BlockSelection.of(IntStream.range(100, 164).toArray());
        int[][] pairs = PlanRequests.indices(plan, local, remote);
        DescriptorPairs copies = new DescriptorPairs(0);
        assertEquals(5120, copies.resolve(plan.localDescriptors(0), pairs[0], plan.remoteDescriptors(producer), pairs[1], 5120, true));
        assertEquals(5120L * 32_768, copies.totalBytes());
    }

    @Test
    void mergingNeedsContiguityOnBothSides()
    {
        DescriptorList local = DescriptorList.wrap(MemoryKind.HOST, 0, new long[] {100, 116, 132, 200}, new long[] {16, 16, 16, 16}, 4);
        DescriptorList remote = DescriptorList.wrap(MemoryKind.HOST, 0, new long[] {1000, 1016, 1040, 1056}, new long[] {16, 16, 16, 16}, 4);
        DescriptorPairs copies = new DescriptorPairs(1);
        // pairs 0-1 contiguous on both sides; 1-2 only locally; 2-3 only remotely
        assertEquals(3, copies.resolve(local, new int[] {0, 1, 2, 3}, remote, new int[] {0, 1, 2, 3}, 4, true));
        assertEquals(32, copies.length(0));
        assertEquals(100, copies.localAddress(0));
        assertEquals(1000, copies.remoteAddress(0));
        // reversed order is never merged backwards
        assertEquals(2, copies.resolve(local, new int[] {1, 0}, remote, new int[] {1, 0}, 2, true));
    }

    @Test
    void pairsAddedOneByOneMergeOnlyWithinTheSameRegions()
    {
        DescriptorPairs copies = new DescriptorPairs(0);
        copies.clear(6);
        copies.add(100, 0, 1000, 0, 16, true);
        copies.add(116, 0, 1016, 0, 16, true);
        // contiguous, but the local range lies in the next region (a registration right after the first)
        copies.add(132, 1, 1032, 0, 16, true);
        // contiguous, but the remote range crosses into another region
        copies.add(148, 1, 1048, 7, 16, true);
        copies.add(164, 1, 1064, 7, 16, true);
        // contiguous and in the same regions, but not asked to coalesce
        copies.add(180, 1, 1080, 7, 16, false);
        assertEquals(4, copies.size());
        assertEquals(32, copies.length(0));
        assertEquals(132, copies.localAddress(1));
        assertEquals(148, copies.localAddress(2));
        assertEquals(1048, copies.remoteAddress(2));
        assertEquals(32, copies.length(2));
        assertEquals(96, copies.totalBytes());
        copies.clear(0);
        assertEquals(0, copies.size());
        // no region carries over from the last fill: the first pair starts a copy
        copies.add(196, 1, 1096, 7, 16, true);
        assertEquals(1, copies.size());
        assertError(ErrorCode.INVALID_ARGUMENT, () -> copies.clear(-1), "expectedPairs=-1");
    }

    @Test
    void untrustedIndicesAndLengthsAreChecked()
    {
        DescriptorList local = DescriptorList.wrap(MemoryKind.HOST, 0, new long[] {100, 116}, new long[] {16, 32}, 2);
        DescriptorList remote = DescriptorList.wrap(MemoryKind.HOST, 0, new long[] {1000, 1016}, new long[] {16, 16}, 2);
        DescriptorPairs copies = new DescriptorPairs(2);
        assertError(ErrorCode.INDEX_OUT_OF_RANGE, () -> copies.resolve(local, new int[] {2}, remote, new int[] {0}, 1, true), "local index=2");
        assertError(ErrorCode.INDEX_OUT_OF_RANGE, () -> copies.resolve(local, new int[] {0}, remote, new int[] {-1}, 1, true), "remote index=-1");
        assertError(ErrorCode.LENGTH_MISMATCH, () -> copies.resolve(local, new int[] {1}, remote, new int[] {1}, 1, false), "length=32", "length=16");
        assertError(ErrorCode.INVALID_ARGUMENT, () -> copies.resolve(local, new int[] {0}, remote, new int[] {0}, 2, false), "count=2");
    }

    @Test
    void sharedRegionsOfSeveralGroupsMergeRunsWithinEachGroup()
    {
        CacheGeometry side = geometry(8, 0, 1).group(GroupKind.FULL_ATTENTION).group(GroupKind.SLIDING_WINDOW)
                .uniformRegions(3, 0x100000, 256, 10, -1, SplitClass.SPLIT).build();
        TransferPlan plan = TransferPlan.pair(side, side);
        BlockSelection blocks = BlockSelection.of(new int[] {1, 2}, new int[] {3});
        int[][] pairs = PlanRequests.indices(plan, blocks, blocks);
        DescriptorPairs copies = new DescriptorPairs(0);
        // per region: ids 1, 2 (group 0) and 3 (group 1) are consecutive, so each region is one copy
        assertEquals(3, copies.resolve(plan.localDescriptors(0), pairs[0], plan.remoteDescriptors(side), pairs[1], pairs[0].length, true));
    }
}
