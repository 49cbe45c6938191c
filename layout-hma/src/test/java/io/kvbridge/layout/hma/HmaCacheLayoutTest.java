package io.kvbridge.layout.hma;

import static io.kvbridge.layout.hma.HybridModels.PAGE;
import static io.kvbridge.layout.hma.HybridModels.layer;
import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.RegionBlockIds;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

final class HmaCacheLayoutTest
{
    private static final CacheLayout LAYOUT = new HmaCacheLayoutFactory().create(Map.of());

    /** Pools of {@code capacity} pages, 1 MiB apart on device 0. */
    private static CacheMemory pools(int count, int capacity)
    {
        List<Allocation> allocations = new ArrayList<>();
        for (int p = 0; p < count; p++) {
            allocations.add(new Allocation(0x1000_0000L + p * 0x10_0000L, capacity * PAGE, MemoryKind.DEVICE, 0));
        }
        return CacheMemory.of(allocations);
    }

    @Test
    void hybridModelWith24SlidingWindowAnd6FullAttentionLayers()
    {
        ModelCacheSpec spec = HybridModels.twoGroups(List.of(30));
        CacheGeometry geometry = LAYOUT.describe(spec, pools(24, 64), Rank.single());

        assertEquals(24, geometry.regions().size());
        assertEquals(24, geometry.allocations().size());
        for (int i = 0; i < HybridModels.LAYERS; i++) {
            int region = geometry.regionOf(layer(i));
            assertTrue(region >= 0, layer(i) + " is in no region");
        }
        // pool i holds sliding-window layer i and, for the first six pools, full-attention layer i
        List<Integer> sliding = new ArrayList<>();
        List<Integer> full = new ArrayList<>();
        for (int i = 0; i < HybridModels.LAYERS; i++) {
            (HybridModels.full(i) ? full : sliding).add(i);
        }
        for (int p = 0; p < 24; p++) {
            Region region = geometry.regions().get(p);
            if (p < 6) {
                List<String> members = sliding.get(p) < full.get(p) ? List.of(layer(sliding.get(p)), layer(full.get(p)))
                        : List.of(layer(full.get(p)), layer(sliding.get(p)));
                assertEquals(members, region.members(), "pool " + p);
                assertEquals(-1, region.groupId(), "pool " + p + " is overlaid by both groups");
            }
            else {
                assertEquals(List.of(layer(sliding.get(p))), region.members(), "pool " + p);
                assertEquals(1, region.groupId(), "pool " + p + " holds only sliding-window layers");
            }
            assertEquals(0x1000_0000L + p * 0x10_0000L, region.base());
            assertEquals(PAGE, region.blockBytes());
            assertEquals(PAGE, region.stride());
            assertEquals(64, region.capacity());
            assertEquals(SplitClass.SPLIT, region.split());
        }
        assertEquals(List.of(layer(0), layer(4)), geometry.regions().getFirst().members());

        CacheGroup window = spec.groups().get(1);
        assertEquals(129, LAYOUT.exchangedBlocks(window, 16, 1000), "block 16, window 2048: ceil(2048 / 16) + 1 blocks");
        assertEquals(40, LAYOUT.exchangedBlocks(window, 16, 40), "a request shorter than the window keeps all its blocks");
        assertEquals(0, LAYOUT.exchangedBlocks(new CacheGroup(1, GroupKind.SLIDING_WINDOW, 0, 2, 8), 16, 1000), "a disabled window exchanges nothing");
        assertEquals(1000, LAYOUT.exchangedBlocks(spec.groups().get(0), 16, 1000), "full attention exchanges every block");

        int[][] routed = RegionBlockIds.route(geometry, new int[][] {{3, 7}, {1, 2}});
        assertArrayEquals(new int[] {3, 7, 1, 2}, routed[0], "a shared pool receives both groups' blocks");
        assertArrayEquals(new int[] {1, 2}, routed[10], "a sliding-window pool receives only its group's blocks");
        assertCode(ErrorCode.BLOCK_OUT_OF_RANGE, () -> RegionBlockIds.route(geometry, new int[][] {{64}, {}}));
    }

    @Test
    void groupsOfSixLayersShareSixPools()
    {
        CacheGeometry geometry = LAYOUT.describe(HybridModels.sixLayerGroups(), pools(6, 8), Rank.single());
        assertEquals(6, geometry.regions().size());
        for (Region region : geometry.regions()) {
            assertEquals(5, region.members().size(), region.name());
            assertEquals(-1, region.groupId(), region.name());
        }
        // sliding-window groups are layers 0-6 (minus 4), 7-13 (minus 9), 15-21 (minus 19) and 22-28 (minus 24)
        assertEquals(List.of(layer(0), layer(4), layer(7), layer(15), layer(22)), geometry.regions().getFirst().members());
    }

    @Test
    void aPipelineStagePoolsOnlyTheLayersItOwnsAndPairsByName()
    {
        ModelCacheSpec whole = HybridModels.twoGroups(List.of(30));
        ModelCacheSpec split = HybridModels.twoGroups(List.of(15, 15));
        CacheGeometry engine = LAYOUT.describe(whole, pools(24, 16), Rank.single());
        CacheGeometry stage0 = LAYOUT.describe(split, pools(12, 16), new Rank(0, 2, 0, 1));
        CacheGeometry stage1 = LAYOUT.describe(split, pools(12, 16), new Rank(1, 2, 0, 1));

        assertEquals(12, stage0.regions().size());
        assertEquals(List.of(layer(3)), stage0.regions().get(3).members(), "stage 0 has only three full-attention layers to pool");
        assertEquals(List.of(layer(3), layer(19)), engine.regions().get(3).members());
        assertEquals(List.of(layer(15), layer(19)), stage1.regions().getFirst().members());
        assertNotEquals(engine.regions().subList(0, 12).stream().map(Region::members).toList(), stage0.regions().stream().map(Region::members).toList());

        Set<String> covered = new HashSet<>();
        for (CacheGeometry stage : List.of(stage0, stage1)) {
            for (Region region : stage.regions()) {
                for (String member : region.members()) {
                    assertTrue(covered.add(member), member + " is in both stages");
                    int peerRegion = engine.regionOf(member);
                    assertTrue(peerRegion >= 0, member + " has no region on the PP1 engine");
                    Region peer = engine.regions().get(peerRegion);
                    Set<Integer> localGroups = groupsOf(split, region);
                    assertTrue(region.groupId() == -1 || localGroups.equals(Set.of(region.groupId())));
                    assertTrue(peer.groupId() == -1 || peer.groupId() == split.layers().get(indexOf(member)).groupId());
                }
            }
            assertEquals(Optional.empty(), LAYOUT.incompatibility(stage, engine), "a stage and a PP1 engine pair by layer name");
            assertEquals(Optional.empty(), LAYOUT.incompatibility(engine, stage));
        }
        assertEquals(HybridModels.LAYERS, covered.size());
    }

    private static int indexOf(String layer)
    {
        return Integer.parseInt(layer.split("\\.")[2]);
    }

    private static Set<Integer> groupsOf(ModelCacheSpec spec, Region region)
    {
        Set<Integer> groups = new HashSet<>();
        for (String member : region.members()) {
            groups.add(spec.layers().get(indexOf(member)).groupId());
        }
        return groups;
    }

    @Test
    void singleStagePeersThatPoolDifferentlyAreToldWhy()
    {
        ModelCacheSpec spec = HybridModels.twoGroups(List.of(30));
        CacheGeometry byRule = LAYOUT.describe(spec, pools(24, 16), Rank.single());
        Allocation tensor = new Allocation(0x2000_0000L, 15 * 16 * PAGE, MemoryKind.DEVICE, 0);
        List<LayerView> views = new ArrayList<>();
        for (int i = 0; i < HybridModels.LAYERS; i++) {
            views.add(new LayerView(layer(i), tensor.address() + (i / 2) * 16 * PAGE, PAGE, PAGE, 16));
        }
        CacheGeometry pairwise = LAYOUT.describe(spec, new CacheMemory(List.of(tensor), views), Rank.single());
        assertEquals(1, pairwise.allocations().size(), "one tensor holding every pool is registered once");
        assertEquals(15, pairwise.regions().size());
        assertEquals(List.of(layer(4), layer(5)), pairwise.regions().get(2).members());
        assertEquals(-1, pairwise.regions().get(2).groupId());
        assertEquals(1, pairwise.regions().getFirst().groupId());
        String reason = LAYOUT.incompatibility(byRule, pairwise).orElseThrow();
        assertTrue(reason.contains("pool layers differently"), reason);
        assertEquals(Optional.empty(), LAYOUT.incompatibility(byRule, byRule));
    }

    @Test
    void peersWithOtherBlockSizesOrGroupsAreToldWhy()
    {
        ModelCacheSpec spec = HybridModels.twoGroups(List.of(30));
        CacheGeometry local = LAYOUT.describe(spec, pools(24, 16), Rank.single());
        ModelCacheSpec kernelSplit = new ModelCacheSpec(spec.identity(), 32, 2, spec.groups(), spec.layers(), spec.stageLayerCounts());
        CacheGeometry halfBlocks = LAYOUT.describe(kernelSplit, pools(24, 16), Rank.single());
        assertEquals(16, halfBlocks.blockTokens());
        ModelCacheSpec doubleBlocks = new ModelCacheSpec(spec.identity(), 32, 1, spec.groups(), spec.layers(), spec.stageLayerCounts());
        List<Allocation> big = new ArrayList<>();
        for (int p = 0; p < 24; p++) {
            big.add(new Allocation(0x1000_0000L + p * 0x10_0000L, 16 * 2 * PAGE, MemoryKind.DEVICE, 0));
        }
        CacheGeometry peer = LAYOUT.describe(doubleBlocks, CacheMemory.of(big), Rank.single());
        String reason = LAYOUT.incompatibility(local, peer).orElseThrow();
        assertTrue(reason.contains("local blockTokens=16") && reason.contains("peer blockTokens=32"), reason);

        List<CacheGroup> otherWindow = List.of(spec.groups().get(0), new CacheGroup(1, GroupKind.SLIDING_WINDOW, 1024, 2, 8));
        CacheGeometry windowed = LAYOUT.describe(new ModelCacheSpec(spec.identity(), 16, 1, otherWindow, spec.layers(), spec.stageLayerCounts()),
                pools(24, 16), Rank.single());
        assertTrue(LAYOUT.incompatibility(local, windowed).orElseThrow().contains("same cache groups"));
    }

    @Test
    void wrongNumberOfPoolsIsRejectedWithTheRule()
    {
        KvBridgeException e = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> LAYOUT.describe(HybridModels.twoGroups(List.of(30)), pools(30, 4), Rank.single()));
        assertTrue(e.getMessage().contains("into 24 pools") && e.getMessage().contains("30 allocations"), e.getMessage());
    }

    @Test
    void poolsThatAreNotWholePagesAreRejected()
    {
        List<Allocation> allocations = new ArrayList<>(pools(24, 4).allocations());
        allocations.set(5, new Allocation(allocations.get(5).address(), 4 * PAGE + 100, MemoryKind.DEVICE, 0));
        KvBridgeException e = assertCode(ErrorCode.LAYOUT_UNSUPPORTED,
                () -> LAYOUT.describe(HybridModels.twoGroups(List.of(30)), CacheMemory.of(allocations), Rank.single()));
        assertTrue(e.getMessage().contains("pool 5") && e.getMessage().contains("pageBytes=1024"), e.getMessage());
    }

    @Test
    void groupsWithDifferentPagesCannotShareAPool()
    {
        ModelCacheSpec spec = HybridModels.fullAndSliding(2, 8, 16);
        KvBridgeException e = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> LAYOUT.describe(spec, pools(1, 4), Rank.single()));
        assertTrue(e.getMessage().contains("group 1 has pageBytes=2048") && e.getMessage().contains("group 0 has pageBytes=1024"), e.getMessage());
    }

    @Test
    void mlaGroupsAreSentToTheMlaLayout()
    {
        ModelIdentity identity = new ModelIdentity("m", "bfloat16", "bfloat16", 1, 576, 1, true);
        ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1, List.of(new CacheGroup(0, GroupKind.MLA, 0, 1, 576)),
                List.of(new LayerSpec("a", 0)), List.of(1));
        KvBridgeException e = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> LAYOUT.describe(spec, pools(1, 4), Rank.single()));
        assertTrue(e.getMessage().contains("'mla'"), e.getMessage());
    }

    @Test
    void viewsThatDisagreeOnAPoolOrOverlapAreRejected()
    {
        ModelIdentity identity = new ModelIdentity("m", "bfloat16", "bfloat16", 2, 8, 3, true);
        ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 8), new CacheGroup(1, GroupKind.SLIDING_WINDOW, 128, 2, 8)),
                List.of(new LayerSpec("a", 0), new LayerSpec("b", 1), new LayerSpec("c", 1)), List.of(3));
        Allocation tensor = new Allocation(0x100000, 16 * PAGE, MemoryKind.DEVICE, 0);
        KvBridgeException disagree = assertCode(ErrorCode.GEOMETRY_INVALID, () -> LAYOUT.describe(spec, new CacheMemory(List.of(tensor), List.of(
                new LayerView("a", 0x100000, PAGE, PAGE, 8), new LayerView("b", 0x100000, PAGE, PAGE, 7), new LayerView("c", 0x100000 + 8 * PAGE, PAGE, PAGE, 8))),
                Rank.single()));
        assertTrue(disagree.getMessage().contains("blocks=8 vs 7"), disagree.getMessage());
        KvBridgeException overlap = assertCode(ErrorCode.GEOMETRY_INVALID, () -> LAYOUT.describe(spec, new CacheMemory(List.of(tensor), List.of(
                new LayerView("a", 0x100000, PAGE, PAGE, 8), new LayerView("b", 0x100000, PAGE, PAGE, 8), new LayerView("c", 0x100000 + 4 * PAGE, PAGE, PAGE, 8))),
                Rank.single()));
        assertTrue(overlap.getMessage().contains("shares bytes with pool of layer a"), overlap.getMessage());
        // pools interleaved block by block in one allocation share no byte: a block-major cache
        CacheGeometry interleaved = LAYOUT.describe(spec, new CacheMemory(List.of(tensor), List.of(
                new LayerView("a", 0x100000, PAGE, 2 * PAGE, 8), new LayerView("b", 0x100000, PAGE, 2 * PAGE, 8),
                new LayerView("c", 0x100000 + PAGE, PAGE, 2 * PAGE, 8))), Rank.single());
        assertEquals(List.of(0x100000L, 0x100000L + PAGE), interleaved.regions().stream().map(Region::base).toList());
        assertEquals(List.of(2 * PAGE, 2 * PAGE), interleaved.regions().stream().map(Region::stride).toList());
        KvBridgeException page = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> LAYOUT.describe(spec, new CacheMemory(List.of(tensor), List.of(
                new LayerView("a", 0x100000, PAGE, PAGE, 8), new LayerView("b", 0x100000, PAGE, PAGE, 8), new LayerView("c", 0x100000 + 8 * PAGE, 512, 512, 8))),
                Rank.single()));
        assertTrue(page.getMessage().contains("blockBytes=512"), page.getMessage());
        CacheGeometry ok = LAYOUT.describe(spec, new CacheMemory(List.of(tensor), List.of(
                new LayerView("a", 0x100000, PAGE, PAGE, 8), new LayerView("b", 0x100000, PAGE, PAGE, 8), new LayerView("c", 0x100000 + 8 * PAGE, PAGE, PAGE, 8))),
                Rank.single());
        assertEquals(List.of(List.of("a", "b"), List.of("c")), ok.regions().stream().map(Region::members).toList());
        assertEquals(List.of(-1, 1), ok.regions().stream().map(Region::groupId).toList());
    }

    @Test
    void tensorParallelRanksHoldTheirShareOfHeads()
    {
        ModelCacheSpec spec = HybridModels.fullAndSliding(8, 64, 64);
        long page = 2L * 16 * 2 * 64 * 2;
        CacheGeometry geometry = LAYOUT.describe(spec, CacheMemory.of(List.of(new Allocation(0x100000, 10 * page, MemoryKind.DEVICE, 1))), new Rank(0, 1, 3, 4));
        assertEquals(page, geometry.regions().getFirst().blockBytes());
        assertEquals(10, geometry.regions().getFirst().capacity());
        assertEquals(1, geometry.regions().getFirst().device());
    }
}
