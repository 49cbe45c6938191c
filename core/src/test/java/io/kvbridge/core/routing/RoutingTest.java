package io.kvbridge.core.routing;

import static io.kvbridge.core.planner.PlanRequests.indices;
import static io.kvbridge.core.routing.Stage.layers;
import static io.kvbridge.core.routing.Stage.name;
import static io.kvbridge.core.routing.Stage.stage;
import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.api.TransferMode;
import io.kvbridge.core.planner.BlockSelection;
import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.MemoryKind;
import io.kvbridge.spi.transfer.DescriptorList;
import java.util.List;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

final class RoutingTest
{
    private static final List<LayerSpec> POOLED_LAYERS = List.of(new LayerSpec("a", 0), new LayerSpec("a.swa", 1), new LayerSpec("b", 0));

    private static CacheGeometry pooled(long first, long second)
    {
        return stage(0, 1, 3).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .region(first, 128, 4, -1, "a", "a.swa")
                .region(second, 128, 4, 0, "b")
                .build();
    }

    @Test
    void aPooledRegionYieldsOneEntryPerLayerAddressedByItsOwnGroup()
    {
        CacheGeometry peer = pooled(0xA000, 0xB000);
        CacheGeometry local = pooled(0x1000, 0x2000);
        List<TransferEntry> entries = Routing.byLayerName(POOLED_LAYERS, local, peer);
        assertEquals(List.of("a", "a.swa", "b"), entries.stream().map(TransferEntry::layer).toList());
        assertEquals(List.of(0, 0, 1), entries.stream().map(TransferEntry::localRegion).toList());
        assertEquals(List.of(0, 1, 0), entries.stream().map(TransferEntry::groupId).toList());
        assertEquals(List.of(0xA000L, 0xA000L, 0xB000L), entries.stream().map(entry -> entry.remote().base()).toList());
        assertEquals(List.of(128L, 128L, 128L), entries.stream().map(entry -> entry.remote().blockBytes()).toList());
        Region swa = entries.get(1).remote();
        assertEquals(List.of("a.swa", 128L, 4, 1, MemoryKind.DEVICE), List.of(swa.name(), swa.stride(), swa.capacity(), swa.groupId(), swa.memoryKind()),
                "the entry carries the peer's name, stride, capacity, group and memory kind");

        // each entry takes its own group's ids at cumulative per-entry capacities (4 blocks each)
        TransferPlan plan = TransferPlan.pair(local, peer, entries);
        int[][] result = indices(plan, BlockSelection.of(new int[] {1, 2}, new int[] {3}), BlockSelection.of(new int[] {0, 1}, new int[] {2}));
        assertArrayEquals(new int[] {1, 2, 4 + 3, 8 + 1, 8 + 2}, result[0]);
        assertArrayEquals(new int[] {0, 1, 4 + 2, 8, 8 + 1}, result[1]);
        assertEquals(local.allocations(), plan.allocations(true), "two entries share pool a's allocation, registered once");

        // both sides pool alike and neither is a pipeline stage: index routing is exact and takes one entry per region
        Route route = Routing.route(POOLED_LAYERS, local, peer);
        assertEquals(RoutingMode.BY_INDEX, route.mode());
        assertEquals(2, route.entries().size());
        assertEquals(List.of("a", "a.swa", "b"), route.layers());
    }

    @Test
    void aStageRoutesAPeerListingItsRegionsOutOfOrderByName()
    {
        List<LayerSpec> layers = layers(4, i -> 0);
        CacheGeometry peer = stage(0, 1, 4).oneAllocation()
                .region(0xC000, 65536, 1, 0, name(2))
                .region(0xA000, 65536, 1, 0, name(0))
                .region(0xD000, 32768, 1, 0, name(3))
                .region(0xB000, 32768, 1, 0, name(1))
                .build();
        CacheGeometry local = stage(1, 2, 4).region(0x100000, 65536, 2, 0, name(2)).region(0x200000, 32768, 2, 0, name(3)).build();
        Route route = Routing.route(layers, local, peer);
        assertEquals(RoutingMode.BY_LAYER_NAME, route.mode(), "sliced by position, the stage's layers would meet the peer's layers 3 and 1");
        assertEquals(List.of(0xC000L, 0xD000L), route.entries().stream().map(entry -> entry.remote().base()).toList());
        assertEquals(List.of(65536L, 32768L), route.entries().stream().map(entry -> entry.remote().blockBytes()).toList());
        assertEquals(List.of(0, 1), route.entries().stream().map(TransferEntry::localRegion).toList());
        assertArrayEquals(new long[] {0xC000, 0xD000}, Routing.plan(layers, local, peer, TransferMode.PUSH).remoteDescriptors(peer).addresses());
    }

    @Test
    void aStageOfOneRegionPerLayerUsesThePeersRegionsFromItsFirstLayerOn()
    {
        List<LayerSpec> layers = layers(4, i -> 0);
        CacheGeometry peer = stage(0, 1, 4).region(10, 1, 1, 0, name(0)).region(11, 1, 1, 0, name(1)).region(12, 1, 1, 0, name(2)).region(13, 1, 1, 0, name(3))
                .build();
        CacheGeometry local = stage(1, 2, 4).region(0x100, 1, 1, 0, name(2)).region(0x200, 1, 1, 0, name(3)).build();
        Route route = Routing.route(layers, local, peer);
        assertEquals(RoutingMode.BY_INDEX, route.mode());
        assertEquals(List.of(2, 3), route.entries().stream().map(TransferEntry::remoteRegion).toList());
        TransferPlan plan = Routing.plan(layers, local, peer, TransferMode.PUSH);
        assertArrayEquals(new long[] {12, 13}, plan.remoteDescriptors(peer).addresses());
        assertEquals(route.entries(), Routing.byIndex(layers, local, peer));
    }

    @Test
    void thePlanDoesNotDependOnThePeersRegionOrder()
    {
        List<LayerSpec> layers = List.of(new LayerSpec("x", 0), new LayerSpec("y", 1));
        Function<Boolean, CacheGeometry> peer = xFirst -> {
            Stage stage = stage(0, 1, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW);
            if (xFirst) {
                stage.region(0x10000, 256, 6, 0, "x").region(0x20000, 256, 5, 1, "y");
            }
            else {
                stage.region(0x20000, 256, 5, 1, "y").region(0x10000, 256, 6, 0, "x");
            }
            return stage.build();
        };
        CacheGeometry local = stage(0, 1, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .region(0x90000, 256, 4, 0, "x").region(0xa0000, 256, 4, 1, "y").build();
        TransferPlan ordered = Routing.plan(layers, local, peer.apply(true), TransferMode.PULL);
        TransferPlan reversed = Routing.plan(layers, local, peer.apply(false), TransferMode.PULL);
        assertEquals(ordered.entries().stream().map(TransferEntry::remote).toList(), reversed.entries().stream().map(TransferEntry::remote).toList());
        assertDescriptorsEqual(ordered.localDescriptors(0), reversed.localDescriptors(0));
        assertDescriptorsEqual(ordered.remoteDescriptors(peer.apply(true)), reversed.remoteDescriptors(peer.apply(false)));
        BlockSelection localIds = BlockSelection.of(new int[] {3, 0}, new int[] {2});
        BlockSelection remoteIds = BlockSelection.of(new int[] {5, 1}, new int[] {4});
        int[][] first = indices(ordered, localIds, remoteIds);
        int[][] second = indices(reversed, localIds, remoteIds);
        assertArrayEquals(first[0], second[0]);
        assertArrayEquals(first[1], second[1]);
        assertArrayEquals(new int[] {5, 1, 6 + 4}, first[1]);
    }

    private static void assertDescriptorsEqual(DescriptorList expected, DescriptorList actual)
    {
        assertArrayEquals(expected.addresses(), actual.addresses());
        assertArrayEquals(expected.lengths(), actual.lengths());
    }

    @Test
    void packedRowsThatDifferPairTheirLayersOneByOne()
    {
        List<LayerSpec> layers = List.of(new LayerSpec("L0", 0), new LayerSpec("L1", 0));
        CacheGeometry decoder = stage(0, 1, 2).groups(GroupKind.MLA)
                .packed(0x10000, 4, 0, new PackedMember("L0", 0, 128), new PackedMember("L1", 128, 128)).build();
        // the same layers in padded rows: a whole row cannot move onto the decoder's
        CacheGeometry padded = stage(0, 1, 2).groups(GroupKind.MLA)
                .packed(0x50000, 4, 0, new PackedMember("L0", 0, 128), new PackedMember("L1", 256, 128)).build();
        Route route = Routing.route(layers, decoder, padded);
        assertEquals(RoutingMode.BY_LAYER_NAME, route.mode());
        TransferPlan plan = Routing.plan(layers, decoder, padded, TransferMode.PULL);
        assertArrayEquals(new long[] {0x10000, 0x10100, 0x10200, 0x10300, 0x10080, 0x10180, 0x10280, 0x10380}, plan.localDescriptors(0).addresses());
        assertArrayEquals(new long[] {0x50000, 0x50180, 0x50300, 0x50480, 0x50100, 0x50280, 0x50400, 0x50580}, plan.remoteDescriptors(padded).addresses());
        // identical rows still move whole
        CacheGeometry same = stage(0, 1, 2).groups(GroupKind.MLA)
                .packed(0x90000, 6, 0, new PackedMember("L0", 0, 128), new PackedMember("L1", 128, 128)).build();
        assertEquals(RoutingMode.BY_INDEX, Routing.route(layers, decoder, same).mode());
    }

    @Test
    void identicalRowsOfOtherKernelBlocksPairLayerByLayerInsteadOfFailingTheWholeRowCheck()
    {
        List<LayerSpec> layers = List.of(new LayerSpec("L0", 0), new LayerSpec("L1", 0));
        CacheGeometry decoder = stage(0, 1, 2).groups(GroupKind.MLA)
                .packed(0x10000, 4, 0, new PackedMember("L0", 0, 128), new PackedMember("L1", 128, 128)).build();
        // the same rows and kernel blocks, but two kernel blocks per scheduler block: a row moves whole only between equal block sizes
        CacheGeometry split = stage(0, 1, 2).groups(GroupKind.MLA).kernelBlocksPerLogical(2)
                .packed(0x50000, 4, 0, new PackedMember("L0", 0, 128), new PackedMember("L1", 128, 128)).build();
        assertEquals(RoutingMode.BY_LAYER_NAME, Routing.route(layers, decoder, split).mode(), "routing and the planner apply one whole-row rule");
        TransferPlan plan = Routing.plan(layers, decoder, split, TransferMode.PULL);
        assertEquals(List.of("L0", "L1"), plan.entries().stream().map(TransferEntry::layer).toList());
        // moved whole anyway, the planner refuses it with the same rule
        List<TransferEntry> whole = new java.util.ArrayList<>();
        TransferEntry.addWhole(whole, decoder, 0, split, 0);
        assertCode(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferPlan.pair(decoder, split, whole), "kernelBlocksPerLogical=1", "kernelBlocksPerLogical=2");
    }

    @Test
    void aPackedRowMeetingPlainRegionsOfLargerBlocksPairsPageByPageAsDocumented()
    {
        List<LayerSpec> layers = List.of(new LayerSpec("L0", 0), new LayerSpec("L1", 0));
        // decoder: 16-token blocks packed in rows of two 128-byte pages; producer: one plain region per layer, 32-token blocks of 256 bytes
        CacheGeometry decoder = stage(0, 1, 2).groups(GroupKind.MLA)
                .packed(0x10000, 4, 0, new PackedMember("L0", 0, 128), new PackedMember("L1", 128, 128)).build();
        CacheGeometry producer = stage(0, 1, 2).groups(GroupKind.MLA).blockTokens(32)
                .region(0x50000, 256, 256, 2, 0, SplitClass.REPLICATE, "L0").region(0x60000, 256, 256, 2, 0, SplitClass.REPLICATE, "L1").build();
        assertEquals(RoutingMode.BY_LAYER_NAME, Routing.route(layers, decoder, producer).mode());
        TransferPlan plan = Routing.plan(layers, decoder, producer, TransferMode.PULL);
        // each decoder page is half of a producer block: the producer's blocks move as two sub-blocks of 128 bytes
        assertArrayEquals(new long[] {0x10000, 0x10100, 0x10200, 0x10300, 0x10080, 0x10180, 0x10280, 0x10380}, plan.localDescriptors(0).addresses());
        assertArrayEquals(new long[] {0x50000, 0x50080, 0x50100, 0x50180, 0x60000, 0x60080, 0x60100, 0x60180}, plan.remoteDescriptors(producer).addresses());
        // pages whose bytes are not the block size ratio apart are refused when the plan is built
        CacheGeometry widePages = stage(0, 1, 2).groups(GroupKind.MLA).blockTokens(32)
                .region(0x50000, 512, 512, 2, 0, SplitClass.REPLICATE, "L0").region(0x60000, 512, 512, 2, 0, SplitClass.REPLICATE, "L1").build();
        assertCode(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> Routing.plan(layers, decoder, widePages, TransferMode.PULL), "blockBytes=512");
    }

    @Test
    void aStageOwningOnePackedMemberWritesItsPageInsideThePeersRow()
    {
        List<LayerSpec> layers = List.of(new LayerSpec("L0", 0), new LayerSpec("L1", 0));
        CacheGeometry decoder = stage(0, 1, 2).groups(GroupKind.MLA)
                .packed(0x10000, 4, 0, new PackedMember("L0", 0, 128), new PackedMember("L1", 128, 128)).build();
        CacheGeometry producer = stage(1, 2, 2).groups(GroupKind.MLA).packed(0x50000, 6, 0, new PackedMember("L1", 0, 128)).build();
        TransferPlan plan = Routing.plan(layers, producer, decoder, TransferMode.PUSH);
        assertEquals(1, plan.entries().size());
        TransferEntry entry = plan.entries().getFirst();
        assertEquals("L1", entry.layer());
        assertEquals(List.of(0x10080L, 128L, 256L), List.of(entry.remote().base(), entry.remote().blockBytes(), entry.remote().stride()));
        assertEquals(List.of(0x50000L, 128L, 128L), List.of(entry.local().base(), entry.local().blockBytes(), entry.local().stride()));
        assertArrayEquals(new long[] {0x10080, 0x10180, 0x10280, 0x10380}, plan.remoteDescriptors(decoder).addresses());
        assertArrayEquals(new long[] {128, 128, 128, 128}, plan.remoteDescriptors(decoder).lengths());
        assertArrayEquals(new long[] {0x50000, 0x50080, 0x50100, 0x50180, 0x50200, 0x50280}, plan.localDescriptors(0).addresses());
        CacheGeometry swapped = stage(0, 1, 2).groups(GroupKind.MLA)
                .packed(0x20000, 4, 0, new PackedMember("L1", 0, 128), new PackedMember("L0", 128, 128)).build();
        assertCode(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> plan.remoteDescriptors(swapped), "offset=0", "offset=128", "one shape");

        // a per-layer stage writes the same page into the peer's row: the row narrows to a plain strided view
        CacheGeometry perLayer = stage(1, 2, 2).groups(GroupKind.MLA).region(0x50000, 128, 128, 6, 0, SplitClass.REPLICATE, "L1").build();
        TransferPlan unpacked = Routing.plan(layers, perLayer, decoder, TransferMode.PUSH);
        assertArrayEquals(new long[] {0x10080, 0x10180, 0x10280, 0x10380}, unpacked.remoteDescriptors(decoder).addresses());
        assertArrayEquals(new long[] {0x50000, 0x50080, 0x50100, 0x50180, 0x50200, 0x50280}, unpacked.localDescriptors(0).addresses());
        CacheGeometry widerPage = stage(1, 2, 2).groups(GroupKind.MLA).packed(0x50000, 6, 0, new PackedMember("L1", 0, 256)).build();
        assertCode(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> Routing.plan(layers, widerPage, decoder, TransferMode.PUSH),
                "remote region L1 has blockBytes=128", "local region L1 needs 256");
    }

    @Test
    void a93LayerStageNeedsThePeerStageHoldingItsLayers()
    {
        List<LayerSpec> layers = layers(93, i -> i % 4 == 3 ? 0 : 1);
        ModelCacheSpec spec = Stage.hybridSpec(layers, ModelCacheSpec.evenStages(93, 2));
        CacheGeometry stage0 = Stage.hybrid(spec, new Rank(0, 2, 0, 1), 0x1000_0000L, 4096);
        CacheGeometry peerStage1 = Stage.hybrid(spec, new Rank(1, 2, 0, 1), 0x8000_0000L, 4096);
        assertCode(ErrorCode.ROUTING_FAILED, () -> Routing.route(layers, stage0, peerStage1),
                "missing locally owned layer model.layers.0", "would leave it stale", "remote rank pp1/2:tp0/1", "pipeline stage 1 of 2");
        CacheGeometry peerStage0 = Stage.hybrid(spec, new Rank(0, 2, 0, 1), 0x8000_0000L, 4096);
        Route route = Routing.route(layers, stage0, peerStage0);
        assertEquals(RoutingMode.BY_LAYER_NAME, route.mode());
        assertEquals(spec.layersOfStage(0).stream().map(LayerSpec::name).sorted().toList(), route.layers().stream().sorted().toList());
        assertEquals(47, route.entries().size());
        assertTrue(stage0.regions().size() < 47, "the stage pools its layers");
    }


    @Test
    void indexRoutingComparesGroupsAndFallsBackToNamesWhereTheyApply()
    {
        List<LayerSpec> layers = List.of(new LayerSpec("a", 0), new LayerSpec("b", 1));
        CacheGeometry local = stage(0, 1, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .region(0x1000, 256, 4, 0, "a").region(0x2000, 256, 4, 1, "b").build();
        // same layers in the same order, but the peer advertises its first region as shared by every group
        CacheGeometry shared = stage(0, 1, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .region(0x9000, 256, 4, -1, "a").region(0xa000, 256, 4, 1, "b").build();
        assertCode(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> Routing.byIndex(layers, local, shared),
                "cannot be paired by position", "local region a addresses cache group 0", "remote region a addresses group -1");
        Route route = Routing.route(layers, local, shared);
        assertEquals(RoutingMode.BY_LAYER_NAME, route.mode());
        assertEquals(List.of(0, 1), route.entries().stream().map(entry -> entry.remote().groupId()).toList(), "layer a takes group 0's ids on both sides");

        // a region advertising another group than its layer's cannot be routed either way
        CacheGeometry wrong = stage(0, 1, 2).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .region(0x9000, 256, 4, 1, "a").region(0xa000, 256, 4, 1, "b").build();
        assertCode(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> Routing.route(layers, local, wrong),
                "remote region a advertises cache group 1 but holds layer a of group 0");
    }

    @Test
    void indexRoutedPlansAreBitIdenticalToPositionalPairing()
    {
        List<LayerSpec> layers = List.of(new LayerSpec("a", 0), new LayerSpec("a.swa", 1), new LayerSpec("b", 0));
        CacheGeometry local = pooled(0x1000, 0x2000);
        CacheGeometry peer = pooled(0xA000, 0xB000);
        TransferPlan routed = Routing.plan(layers, local, peer, TransferMode.PULL);
        TransferPlan positional = TransferPlan.pair(local, peer);
        assertEquals(positional.entries(), routed.entries());
        assertDescriptorsEqual(positional.localDescriptors(0), routed.localDescriptors(0));
        assertDescriptorsEqual(positional.remoteDescriptors(peer), routed.remoteDescriptors(peer));
        BlockSelection ids = BlockSelection.of(new int[] {2, 0}, new int[] {1});
        assertArrayEquals(indices(positional, ids, ids)[0], indices(routed, ids, ids)[0]);
    }

    @Test
    void routingFailuresNameTheLayerAndBothSides()
    {
        List<LayerSpec> layers = List.of(new LayerSpec("a", 0), new LayerSpec("b", 0));
        CacheGeometry local = stage(0, 2, 2).region(0x1000, 256, 4, 0, "a").region(0x2000, 256, 4, 0, "b").build();
        CacheGeometry peer = stage(0, 1, 2).region(0x9000, 256, 4, 0, "a", "b").build();
        assertEquals(RoutingMode.BY_LAYER_NAME, Routing.route(layers, local, peer).mode());

        CacheGeometry onlyA = stage(0, 1, 2).region(0x9000, 256, 4, 0, "a").build();
        assertCode(ErrorCode.ROUTING_FAILED, () -> Routing.byLayerName(layers, local, onlyA),
                "missing locally owned layer b", "local region b", "rank pp0/2:tp0/1", "remote rank pp0/1:tp0/1", "would leave it stale");

        List<LayerSpec> renamed = List.of(new LayerSpec("a", 0), new LayerSpec("c", 0));
        assertCode(ErrorCode.ROUTING_FAILED, () -> Routing.byLayerName(renamed, local, peer),
                "local region b holds layer b", "not a layer of the model", "cache group is unknown");
        List<LayerSpec> unknownGroup = List.of(new LayerSpec("a", 0), new LayerSpec("b", 3));
        assertCode(ErrorCode.ROUTING_FAILED, () -> Routing.byLayerName(unknownGroup, local, peer),
                "layer b of local region b belongs to cache group 3", "1 groups");
        assertCode(ErrorCode.ROUTING_FAILED, () -> Routing.route(layers.subList(0, 1), local, peer),
                "layer list has 1 layers", "layerCount=2");

        CacheGeometry empty = Stage.stage(1, 2, 2).build();
        assertCode(ErrorCode.ROUTING_FAILED, () -> Routing.route(layers, empty, peer), "no transfer entries", "local rank pp1/2:tp0/1 (0 regions)");

        // layers routed by name may have blocks of another size on the peer, as long as the bytes agree
        CacheGeometry largerBlocks = stage(0, 1, 2).blockTokens(32).region(0x9000, 512, 4, 0, "a", "b").build();
        TransferPlan sized = Routing.plan(layers, local, largerBlocks, TransferMode.PULL);
        assertEquals(2, sized.remoteBlockSizeRatio());
        CacheGeometry samePages = stage(0, 1, 2).blockTokens(32).region(0x9000, 256, 4, 0, "a", "b").build();
        assertCode(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> Routing.plan(layers, local, samePages, TransferMode.PULL),
                "remote region a has blockBytes=256", "needs 512");
    }

    @Test
    void pushIntoMoreDecoderRanksWritesEveryCopy()
    {
        List<LayerSpec> latent = List.of(new LayerSpec("m0", 0));
        CacheGeometry producer = Stage.rank(new Rank(0, 2, 0, 1), 1).groups(GroupKind.MLA).region(0x1000, 576, 576, 4, 0, SplitClass.REPLICATE, "m0").build();
        CacheGeometry decoder = Stage.rank(new Rank(0, 1, 1, 2), 1).groups(GroupKind.MLA).region(0x9000, 576, 576, 4, 0, SplitClass.REPLICATE, "m0").build();
        TransferPlan replicas = Routing.plan(latent, producer, decoder, TransferMode.PUSH);
        assertEquals(List.of(0, 1), replicas.tpPlan().writeTargets(), "each decoder rank keeps a copy of the latent, so each is written");
        assertEquals(0, replicas.tpPlan().writeSlot(1));
        assertEquals(1, Routing.plan(latent, decoder, producer, TransferMode.PULL).sourceCount(), "the decoder rank reads its copy itself");

        // 8 KV heads over a decoder of 2 ranks: each producer slice goes to its own decoder rank
        List<LayerSpec> attention = List.of(new LayerSpec("a", 0));
        CacheGeometry wide = Stage.rank(new Rank(0, 2, 0, 1), 1).region(0x1000, 4096, 4, 0, "a").build();
        CacheGeometry narrow = Stage.rank(new Rank(0, 1, 0, 2), 1).region(0x9000, 2048, 4, 0, "a").build();
        TransferPlan split = Routing.plan(attention, wide, narrow, TransferMode.PUSH);
        assertEquals(List.of(0, 1), split.tpPlan().sources());
    }

    @Test
    void entriesThatDisagreeWithTheirGeometriesAreRejected()
    {
        CacheGeometry local = pooled(0x1000, 0x2000);
        CacheGeometry peer = pooled(0xA000, 0xB000);
        CacheGeometry other = pooled(0xC000, 0xD000);
        TransferEntry foreign = TransferEntry.ofLayer(local, 0, other, 0, "a.swa", 1);
        assertCode(ErrorCode.ROUTING_FAILED, () -> TransferPlan.pair(local, peer, List.of(foreign)), "entry 0 (layer a.swa, group 1)", "differs from the regions it names");
        TransferEntry wrongGroup = new TransferEntry(0, 0, "", 0, local.regions().getFirst(), peer.regions().getFirst());
        assertCode(ErrorCode.ROUTING_FAILED, () -> TransferPlan.pair(local, peer, List.of(wrongGroup)), "whole region", "group 0");
        assertCode(ErrorCode.ROUTING_FAILED, () -> TransferEntry.ofLayer(local, 1, peer, 0, "a", 0), "local region b does not hold layer a");
        assertCode(ErrorCode.GEOMETRY_INCOMPATIBLE, () -> TransferEntry.ofLayer(local, 1, peer, 1, "b", 1), "local region b advertises cache group 0 but holds layer b of group 1");
    }

    @Test
    void aGeometryHoldingALayerTwiceOrListingMembersInconsistentlyCannotBeBuilt()
    {
        // a layer in two regions of one side: the geometry a peer advertises is rejected when it is built, before routing
        assertCode(ErrorCode.GEOMETRY_INVALID, () -> stage(0, 1, 3).region(0x1000, 128, 4, 0, "a").region(0x2000, 128, 4, 0, "b", "a").build(),
                "layer a is in two regions: a (JOINT) and b (JOINT)", "only as its KEY and VALUE planes");
        // per-region member lists of inconsistent length
        assertCode(ErrorCode.INVALID_ARGUMENT, () -> new Region("r", 0x1000, 256, 256, 4, 0, MemoryKind.DEVICE, 0, SplitClass.REPLICATE,
                List.of("a", "b"), List.of(new PackedMember("a", 0, 128))), "2 member layers", "1 packed members");
    }
}
