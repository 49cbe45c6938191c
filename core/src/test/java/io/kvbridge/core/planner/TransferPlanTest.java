package io.kvbridge.core.planner;

import io.kvbridge.transport.DescriptorPairs;
import static io.kvbridge.core.planner.Errors.assertError;
import static io.kvbridge.core.planner.Geometries.geometry;
import static io.kvbridge.core.planner.PlanRequests.indices;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.transfer.DescriptorList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

final class TransferPlanTest
{
    @Test
    void localAddressesFollowEachRegionsOwnCapacity()
    {
        CacheGeometry local = geometry(8, 0, 1)
                .region(100, 16, 16, 2, -1, SplitClass.SPLIT)
                .region(1000, 16, 16, 3, -1, SplitClass.SPLIT)
                .build();
        TransferPlan plan = TransferPlan.pair(local, local);
        DescriptorList list = plan.localDescriptors(0);
        assertArrayEquals(new long[] {100, 116, 1000, 1016, 1032}, list.addresses());
        assertArrayEquals(new long[] {16, 16, 16, 16, 16}, list.lengths());
    }

    @Test
    void subBlocksStayInsideTheirBlockWhenStrideExceedsBlockBytes()
    {
        // two layers interleaved inside a block (stride = 2 pages), local blocks twice the remote
        // ones; tokens outermost, so a sub-block of tokens is one byte range
        CacheGeometry local = geometry(8, 0, 1).blockTokens(32)
                .region(0x10000, 64, 128, 3, -1, SplitClass.INTERLEAVED)
                .region(0x10040, 64, 128, 3, -1, SplitClass.INTERLEAVED)
                .build();
        CacheGeometry remote = geometry(8, 0, 1).blockTokens(16)
                .region(0x90000, 32, 32, 6, -1, SplitClass.INTERLEAVED)
                .region(0xa0000, 32, 32, 6, -1, SplitClass.INTERLEAVED)
                .build();
        TransferPlan plan = TransferPlan.pair(local, remote);
        assertEquals(2, plan.blockSizeRatio());
        DescriptorList list = plan.localDescriptors(0);
        assertArrayEquals(new long[] {
                0x10000, 0x10020, 0x10080, 0x100a0, 0x10100, 0x10120,
                0x10040, 0x10060, 0x100c0, 0x100e0, 0x10140, 0x10160}, list.addresses());
        for (int i = 0; i < list.size(); i++) {
            assertEquals(32, list.length(i));
        }
        // the reference formula base + s * stride / ratio would put sub-block 1 of block 0 at
        // 0x10040, inside the other layer's page
        assertEquals(0x10020, list.address(1));
    }

    @Test
    void sharedRegionsReceiveEveryGroupsBlockIds()
    {
        CacheGeometry side = geometry(8, 0, 1).group(GroupKind.FULL_ATTENTION).group(GroupKind.SLIDING_WINDOW)
                .uniformRegions(3, 0x100000, 256, 10, -1, SplitClass.SPLIT)
                .build();
        TransferPlan plan = TransferPlan.pair(side, side);
        int[][] local = indices(plan, BlockSelection.of(new int[] {1, 2}, new int[] {3}), BlockSelection.of(new int[] {1, 2}, new int[] {3}));
        assertArrayEquals(new int[] {1, 2, 3, 11, 12, 13, 21, 22, 23}, local[0]);
        assertArrayEquals(local[0], local[1]);
    }

    @Test
    void regionsReceiveTheirOwnGroupsBlockIdsAtCumulativeOffsets()
    {
        CacheGeometry side = geometry(8, 0, 1).group(GroupKind.FULL_ATTENTION).group(GroupKind.SLIDING_WINDOW)
                .region(0x100000, 256, 256, 4, 0, SplitClass.SPLIT)
                .region(0x200000, 256, 256, 6, 1, SplitClass.SPLIT)
                .region(0x300000, 256, 256, 5, -1, SplitClass.SPLIT)
                .build();
        TransferPlan plan = TransferPlan.pair(side, side);
        int[][] result = indices(plan, BlockSelection.of(new int[] {1, 2}, new int[] {3}), BlockSelection.of(new int[] {1, 2}, new int[] {3}));
        assertArrayEquals(new int[] {1, 2, 7, 11, 12, 13}, result[0]);
    }

    @Test
    void uniformCapacitiesEqualTheLegacyFormula()
    {
        Random random = new Random(7);
        for (int round = 0; round < 50; round++) {
            int regions = 1 + random.nextInt(6);
            int capacity = 1 + random.nextInt(40);
            int groups = 1 + random.nextInt(3);
            Geometries builder = geometry(8, 0, 1);
            for (int g = 0; g < groups; g++) {
                builder.group(g == 0 ? GroupKind.FULL_ATTENTION : GroupKind.SLIDING_WINDOW);
            }
            CacheGeometry side = builder.uniformRegions(regions, 0x100000, 512, capacity, -1, SplitClass.SPLIT).build();
            int[][] ids = new int[groups][];
            int flatLength = 0;
            for (int g = 0; g < groups; g++) {
                ids[g] = random.ints(random.nextInt(capacity + 1), 0, capacity).toArray();
                flatLength += ids[g].length;
            }
            int[] flat = Arrays.stream(ids).flatMapToInt(Arrays::stream).toArray();
            int[] legacy = new int[regions * flatLength];
            int n = 0;
            for (int r = 0; r < regions; r++) {
                for (int b : flat) {
                    legacy[n++] = r * capacity + b;
                }
            }
            TransferPlan plan = TransferPlan.pair(side, side);
            int[][] result = indices(plan, BlockSelection.of(ids), BlockSelection.of(ids));
            assertArrayEquals(legacy, result[0]);
            assertArrayEquals(legacy, result[1]);
        }
    }

    @Test
    void workedExampleHeterogeneousTp()
    {
        // 8 KV heads, head size 128, bfloat16, 16-token blocks, 2 layers; consumer TP 2 rank 1 reads a TP 1 producer
        CacheGeometry consumer = geometry(8, 1, 2)
                .region(0x300000, 32_768, 32_768, 3, -1, SplitClass.SPLIT)
                .region(0x400000, 32_768, 32_768, 3, -1, SplitClass.SPLIT)
                .build();
        CacheGeometry producer = geometry(8, 0, 1)
                .region(0x100000, 65_536, 65_536, 4, -1, SplitClass.SPLIT)
                .region(0x200000, 65_536, 65_536, 4, -1, SplitClass.SPLIT)
                .build();
        TransferPlan plan = TransferPlan.pair(consumer, producer);
        TpPlan tp = plan.tpPlan();
        assertEquals(2, tp.tpRatio());
        assertEquals(List.of(0), tp.handshakeTargets());
        assertEquals(List.of(0), tp.sources());
        assertEquals(1, tp.rankOffsetFactor());
        assertEquals(2, tp.localConsumers());

        DescriptorList remote = plan.remoteDescriptors(producer);
        assertArrayEquals(new long[] {0x108000, 0x118000, 0x128000, 0x138000, 0x208000, 0x218000, 0x228000, 0x238000}, remote.addresses());
        DescriptorList local = plan.localDescriptors(0);
        assertArrayEquals(new long[] {0x300000, 0x308000, 0x310000, 0x400000, 0x408000, 0x410000}, local.addresses());

        BlockSelection localBlocks = BlockSelection.of(new int[] {2}).expandToKernel(consumer.kernelBlocksPerLogical());
        BlockSelection remoteBlocks = BlockSelection.of(new int[] {3}).expandToKernel(producer.kernelBlocksPerLogical());
        plan.alignBlocks(localBlocks, remoteBlocks);
        int[][] result = indices(plan, localBlocks, remoteBlocks);
        assertArrayEquals(new int[] {2, 5}, result[0]);
        assertArrayEquals(new int[] {3, 7}, result[1]);

        DescriptorPairs copies = new DescriptorPairs(4);
        assertEquals(2, copies.resolve(local, result[0], remote, result[1], 2, true));
        assertEquals(0x138000, copies.remoteAddress(0));
        assertEquals(0x310000, copies.localAddress(0));
        assertEquals(32_768, copies.length(0));
        assertEquals(0x238000, copies.remoteAddress(1));
        assertEquals(0x410000, copies.localAddress(1));
        assertEquals(32_768, copies.length(1));
    }

    @Test
    void remoteTpLargerReadsEachSourcesHeadsIntoItsSlot()
    {
        // consumer TP 1 holds all 8 heads; producer TP 2 ranks hold 4 each
        CacheGeometry consumer = geometry(8, 0, 1).region(0x100000, 4096, 4096, 4, -1, SplitClass.SPLIT).build();
        CacheGeometry producer0 = geometry(8, 0, 2).region(0x500000, 2048, 2048, 5, -1, SplitClass.SPLIT).build();
        CacheGeometry producer1 = geometry(8, 1, 2).region(0x900000, 2048, 2048, 5, -1, SplitClass.SPLIT).build();
        TransferPlan plan = TransferPlan.pair(consumer, producer0);
        assertEquals(List.of(0, 1), plan.tpPlan().sources());
        assertEquals(2, plan.sourceCount());
        assertArrayEquals(new long[] {0x100000, 0x101000, 0x102000, 0x103000}, plan.localDescriptors(0).addresses());
        assertArrayEquals(new long[] {0x100800, 0x101800, 0x102800, 0x103800}, plan.localDescriptors(1).addresses());
        assertArrayEquals(new long[] {2048, 2048, 2048, 2048}, plan.localDescriptors(1).lengths());
        assertArrayEquals(new long[] {0x500000, 0x500800, 0x501000, 0x501800, 0x502000}, plan.remoteDescriptors(producer0).addresses());
        assertArrayEquals(new long[] {0x900000, 0x900800, 0x901000, 0x901800, 0x902000}, plan.remoteDescriptors(producer1).addresses());
        assertArrayEquals(new long[] {2048, 2048, 2048, 2048, 2048}, plan.remoteDescriptors(producer1).lengths());
    }

    @Test
    void replicatedRegionsAreReadWholeAndOnlyFromTheFirstSource()
    {
        // consumer TP 1, producer TP 2: region 0 head-sharded, region 1 an MLA latent
        CacheGeometry consumer = geometry(8, 0, 1).group(GroupKind.FULL_ATTENTION).group(GroupKind.MLA)
                .region(0x100000, 4096, 4096, 4, 0, SplitClass.SPLIT)
                .region(0x200000, 1024, 1024, 4, 1, SplitClass.REPLICATE)
                .build();
        CacheGeometry producer = geometry(8, 0, 2).group(GroupKind.FULL_ATTENTION).group(GroupKind.MLA)
                .region(0x500000, 2048, 2048, 4, 0, SplitClass.SPLIT)
                .region(0x600000, 1024, 1024, 4, 1, SplitClass.REPLICATE)
                .build();
        TransferPlan plan = TransferPlan.pair(consumer, producer);
        assertArrayEquals(new long[] {0x100800, 0x101800, 0x102800, 0x103800, 0x200000, 0x200400, 0x200800, 0x200c00},
                plan.localDescriptors(1).addresses());
        BlockSelection blocks = BlockSelection.of(new int[] {1, 3}, new int[] {2});
        int[] localOut = new int[8];
        int[] remoteOut = new int[8];
        assertEquals(3, plan.indices(0, blocks, localOut, blocks, remoteOut));
        assertArrayEquals(new int[] {1, 3, 6}, Arrays.copyOf(localOut, 3));
        assertEquals(2, plan.indexCount(1, blocks));
        assertEquals(2, plan.indices(1, blocks, localOut, blocks, remoteOut));
        assertArrayEquals(new int[] {1, 3}, Arrays.copyOf(localOut, 2));
        assertArrayEquals(new int[] {1, 3}, Arrays.copyOf(remoteOut, 2));
    }

    @Test
    void pureMlaReadsOneWholeBlockFromOneRank()
    {
        CacheGeometry consumer = geometry(1, 1, 2).group(GroupKind.MLA).region(0x100000, 1152, 1152, 4, 0, SplitClass.REPLICATE).build();
        CacheGeometry producer = geometry(1, 2, 4).group(GroupKind.MLA).region(0x500000, 1152, 1152, 6, 0, SplitClass.REPLICATE).build();
        TransferPlan plan = TransferPlan.pair(consumer, producer);
        assertEquals(List.of(2), plan.tpPlan().sources());
        assertEquals(List.of(2, 3), plan.tpPlan().handshakeTargets());
        assertArrayEquals(new long[] {0x500000, 0x500480, 0x500900, 0x500d80, 0x501200, 0x501680}, plan.remoteDescriptors(producer).addresses());
        assertEquals(1152, plan.remoteDescriptors(producer).length(0));
    }

    @Test
    void blockIdsOutsideTheirRegionAreRejected()
    {
        CacheGeometry side = geometry(8, 0, 1).group(GroupKind.FULL_ATTENTION).group(GroupKind.SLIDING_WINDOW)
                .region(0x100000, 256, 256, 4, 0, SplitClass.SPLIT)
                .region(0x200000, 256, 256, 6, 1, SplitClass.SPLIT)
                .build();
        TransferPlan plan = TransferPlan.pair(side, side);
        int[] out = new int[8];
        BlockSelection fits = BlockSelection.of(new int[] {3}, new int[] {5});
        assertEquals(2, plan.indices(0, fits, out, fits, new int[8]));
        // id 5 is valid in region r1 (capacity 6) but group 0 addresses r0 of capacity 4
        BlockSelection tooLarge = BlockSelection.of(new int[] {5}, new int[] {5});
        assertError(ErrorCode.BLOCK_OUT_OF_RANGE, () -> plan.indices(0, tooLarge, out, tooLarge, new int[8]), "block id=5", "region r0", "capacity=4");
        BlockSelection negative = BlockSelection.of(new int[] {-1}, new int[] {0});
        assertError(ErrorCode.BLOCK_OUT_OF_RANGE, () -> plan.indices(0, negative, out, negative, new int[8]), "block id=-1");
        BlockSelection huge = BlockSelection.of(new int[] {Integer.MAX_VALUE}, new int[] {0}).expandToKernel(4);
        assertError(ErrorCode.BLOCK_OUT_OF_RANGE, () -> plan.indices(0, huge, new int[16], huge, new int[16]), "block id=2147483647");
    }

    @Test
    void requestSidesMustPairOneToOne()
    {
        CacheGeometry side = geometry(8, 0, 1).uniformRegions(2, 0x100000, 256, 8, -1, SplitClass.SPLIT).build();
        TransferPlan plan = TransferPlan.pair(side, side);
        assertError(ErrorCode.LENGTH_MISMATCH,
                () -> plan.indices(0, BlockSelection.of(new int[] {1, 2}), new int[8], BlockSelection.of(new int[] {1}), new int[8]), "2 local ids but 1 remote ids");
        assertError(ErrorCode.LENGTH_MISMATCH,
                () -> plan.indices(0, BlockSelection.of(new int[] {1}, new int[0]), new int[8], BlockSelection.of(new int[] {1}), new int[8]), "groups=2");
        assertError(ErrorCode.INVALID_ARGUMENT,
                () -> plan.indices(0, BlockSelection.of(new int[] {1, 2}), new int[3], BlockSelection.of(new int[] {1, 2}), new int[8]), "out.length=3", "4 indices");
        assertError(ErrorCode.INVALID_ARGUMENT, () -> plan.localDescriptors(1), "slot=1");
    }

    @Test
    void remoteRanksMustBeSourcesOfTheSameShape()
    {
        CacheGeometry consumer = geometry(8, 0, 1).region(0x100000, 4096, 4096, 4, -1, SplitClass.SPLIT).build();
        CacheGeometry producer = geometry(8, 0, 2).region(0x500000, 2048, 2048, 5, -1, SplitClass.SPLIT).build();
        TransferPlan plan = TransferPlan.pair(consumer, producer);
        CacheGeometry otherCapacity = geometry(8, 1, 2).region(0x900000, 2048, 2048, 6, -1, SplitClass.SPLIT).build();
        assertError(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> plan.remoteDescriptors(otherCapacity), "capacity=6", "capacity=5");
        CacheGeometry otherTp = geometry(8, 1, 4).region(0x900000, 2048, 2048, 5, -1, SplitClass.SPLIT).build();
        assertError(ErrorCode.INVALID_ARGUMENT, () -> plan.remoteDescriptors(otherTp), "not a source");
    }

    @Test
    void layerRoutedEntriesMayRepeatALocalRegion()
    {
        CacheGeometry local = geometry(8, 0, 1).region(0x100000, 256, 256, 2, -1, SplitClass.SPLIT).build();
        CacheGeometry remote = geometry(8, 0, 1)
                .region(0x500000, 256, 256, 3, -1, SplitClass.SPLIT)
                .region(0x600000, 256, 256, 3, -1, SplitClass.SPLIT)
                .build();
        TransferPlan plan = TransferPlan.pair(local, remote, List.of(TransferEntry.whole(local, 0, remote, 1), TransferEntry.whole(local, 0, remote, 0)));
        assertArrayEquals(new long[] {0x100000, 0x100100, 0x100000, 0x100100}, plan.localDescriptors(0).addresses());
        assertArrayEquals(new long[] {0x600000, 0x600100, 0x600200, 0x500000, 0x500100, 0x500200}, plan.remoteDescriptors(remote).addresses());
        int[][] result = indices(plan, BlockSelection.of(new int[] {1}), BlockSelection.of(new int[] {2}));
        assertArrayEquals(new int[] {1, 3}, result[0]);
        assertArrayEquals(new int[] {2, 5}, result[1]);
        assertError(ErrorCode.ROUTING_FAILED, () -> TransferPlan.pair(local, remote, List.of()), "no transfer entries");
        assertError(ErrorCode.ROUTING_FAILED, () -> TransferEntry.whole(local, 0, remote, 2), "remote region 2 does not exist");
        assertEquals(List.of(local.allocations().getFirst()), plan.allocations(true));
        assertEquals(remote.allocations().reversed(), plan.allocations(false), "in the order entries first use them");
    }
}
