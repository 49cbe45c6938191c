package io.kvbridge.layout.mla;

import static io.kvbridge.layout.mla.MlaModels.PAGE;
import static io.kvbridge.layout.mla.MlaModels.layer;
import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.RegionBlockIds;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

final class MlaCacheLayoutTest
{
    private Arena arena;

    @BeforeEach
    void openArena()
    {
        arena = Arena.ofConfined();
    }

    @AfterEach
    void closeArena()
    {
        arena.close();
    }

    private Allocation allocate(long bytes)
    {
        return Allocation.host(arena.allocate(bytes, 4096));
    }

    private static CacheLayout layout(String packing)
    {
        return new MlaCacheLayoutFactory().create(Map.of(MlaCacheLayoutFactory.PACKING, packing));
    }

    /** Descriptor b of every region, as {address, length} pairs in region order. */
    private static List<long[]> descriptors(CacheGeometry geometry)
    {
        List<long[]> descriptors = new ArrayList<>();
        for (Region region : geometry.regions()) {
            for (int b = 0; b < region.capacity(); b++) {
                descriptors.add(new long[] {region.blockAddress(b), region.blockBytes()});
            }
        }
        return descriptors;
    }

    @Test
    void packedFourLayersTwoBlocksMoveAsWholeRows()
    {
        long p = PAGE;
        Allocation raw = allocate(2 * 4 * p);
        for (String packing : List.of("packed", "auto")) {
            CacheGeometry geometry = layout(packing).describe(MlaModels.spec(4, List.of(4)), CacheMemory.of(List.of(raw)), Rank.single());
            assertEquals(1, geometry.regions().size(), packing);
            Region region = geometry.regions().getFirst();
            assertEquals(raw.address(), region.base(), "the region starts at the allocation base");
            List<long[]> descriptors = descriptors(geometry);
            assertEquals(2, descriptors.size());
            assertArrayEquals(new long[] {raw.address(), 4 * p}, descriptors.get(0));
            assertArrayEquals(new long[] {raw.address() + 4 * p, 4 * p}, descriptors.get(1));
            assertEquals(List.of(new PackedMember(layer(0), 0, p), new PackedMember(layer(1), p, p), new PackedMember(layer(2), 2 * p, p),
                    new PackedMember(layer(3), 3 * p, p)), region.packedMembers());
            assertEquals(SplitClass.REPLICATE, region.split());
            assertEquals(0, region.groupId());
            assertEquals(List.of(raw), geometry.allocations());
        }
    }

    @Test
    void packedViewsGiveTheSameRegionAsTheConvention()
    {
        long p = PAGE;
        Allocation raw = allocate(2 * 4 * p);
        List<LayerView> views = new ArrayList<>();
        for (int k = 0; k < 4; k++) {
            views.add(new LayerView(layer(k), raw.address() + k * p, p, 4 * p, 2));
        }
        ModelCacheSpec spec = MlaModels.spec(4, List.of(4));
        CacheGeometry byViews = layout("packed").describe(spec, new CacheMemory(List.of(raw), views), Rank.single());
        CacheGeometry byConvention = layout("packed").describe(spec, CacheMemory.of(List.of(raw)), Rank.single());
        assertEquals(byConvention.regions(), byViews.regions());
    }

    @Test
    void twoLayersViewingOneBackingAreOneRegionAddressedByBothGroups()
    {
        Allocation backing = allocate(256);
        long base = backing.address();
        CacheMemory memory = new CacheMemory(List.of(backing), List.of(
                new LayerView(layer(0), base, 32, 64, 4),
                new LayerView(layer(1), base + 32, 32, 64, 4)));
        ModelCacheSpec spec = MlaModels.spec(2, List.of(2), 0, 1);
        for (String packing : List.of("auto", "packed")) {
            CacheGeometry geometry = layout(packing).describe(spec, memory, Rank.single());
            assertEquals(1, geometry.regions().size(), packing);
            Region region = geometry.regions().getFirst();
            assertEquals(-1, region.groupId());
            assertEquals(64, region.stride());
            assertEquals(64, region.blockBytes());
            assertEquals(List.of(new Allocation(base, 256, backing.kind(), 0)), geometry.allocations(), "one registration of 256 bytes");
            for (int b = 0; b < 4; b++) {
                assertEquals(base + b * 64L, region.blockAddress(b));
            }
            assertArrayEquals(new int[][] {{0, 2}}, RegionBlockIds.route(geometry, new int[][] {{0}, {2}}));
        }
    }

    @Test
    void fourLayersWithASharedBufferAndAnAliasRegisterTwoAllocations()
    {
        int blocks = 8;
        Allocation shared = allocate(blocks * 64L);
        Allocation own = allocate(blocks * 32L);
        List<LayerView> views = MlaModels.aliasingViews(shared, own, blocks);
        CacheGeometry geometry = layout("auto").describe(MlaModels.spec(4, List.of(4)), new CacheMemory(List.of(shared, own), views), Rank.single());

        assertEquals(List.of(shared, own), geometry.allocations(), "exactly two allocations, each the size of its buffer");
        assertEquals(List.of(512L, 256L), geometry.allocations().stream().map(Allocation::bytes).toList());
        assertEquals(List.of(List.of(layer(0), layer(1), layer(3)), List.of(layer(2))), geometry.regions().stream().map(Region::members).toList());
        assertEquals(List.of(new PackedMember(layer(0), 0, 32), new PackedMember(layer(1), 32, 32), new PackedMember(layer(3), 0, 32)),
                geometry.regions().getFirst().packedMembers());

        // every descriptor window lies inside one logical block, and block b's windows cover exactly block b's bytes of every layer
        for (int b = 0; b < blocks; b++) {
            List<long[]> layerBytes = new ArrayList<>();
            for (LayerView view : views) {
                layerBytes.add(new long[] {view.blockAddress(b), view.blockAddress(b) + view.blockBytes()});
            }
            List<long[]> windows = new ArrayList<>();
            for (Region region : geometry.regions()) {
                windows.add(new long[] {region.blockAddress(b), region.blockAddress(b) + region.blockBytes()});
            }
            assertEquals(merge(layerBytes), merge(windows), "block " + b);
            for (Region region : geometry.regions()) {
                for (int other = 0; other < blocks; other++) {
                    if (other == b) {
                        continue;
                    }
                    for (LayerView view : views) {
                        long start = region.blockAddress(b);
                        long end = start + region.blockBytes();
                        long otherStart = view.blockAddress(other);
                        long otherEnd = otherStart + view.blockBytes();
                        assertTrue(end <= otherStart || otherEnd <= start, "window " + b + " of " + region.name() + " touches block " + other);
                    }
                }
            }
        }
    }

    private static List<List<Long>> merge(List<long[]> ranges)
    {
        List<long[]> sorted = new ArrayList<>(ranges);
        sorted.sort(Comparator.comparingLong(range -> range[0]));
        List<List<Long>> merged = new ArrayList<>();
        long start = sorted.getFirst()[0];
        long end = sorted.getFirst()[1];
        for (long[] range : sorted) {
            if (range[0] > end) {
                merged.add(List.of(start, end));
                start = range[0];
            }
            end = Math.max(end, range[1]);
        }
        merged.add(List.of(start, end));
        return merged;
    }

    @Test
    void perLayerPackingKeepsInterleavedLayersApartButAliasesTogether()
    {
        int blocks = 8;
        Allocation shared = allocate(blocks * 64L);
        Allocation own = allocate(blocks * 32L);
        List<LayerView> views = MlaModels.aliasingViews(shared, own, blocks);
        CacheGeometry geometry = layout("per-layer").describe(MlaModels.spec(4, List.of(4)), new CacheMemory(List.of(shared, own), views), Rank.single());
        assertEquals(List.of(List.of(layer(0), layer(3)), List.of(layer(1)), List.of(layer(2))), geometry.regions().stream().map(Region::members).toList());
        assertEquals(List.of(32L, 32L, 32L), geometry.regions().stream().map(Region::blockBytes).toList());
        assertEquals(List.of(64L, 64L, 32L), geometry.regions().stream().map(Region::stride).toList());
        assertEquals(2, geometry.allocations().size());
    }

    @Test
    void latentIsReplicatedSoEveryTensorParallelRankDescribesTheSameBlocks()
    {
        ModelCacheSpec spec = MlaModels.spec(2, List.of(2));
        CacheMemory memory = CacheMemory.of(List.of(allocate(4 * PAGE), allocate(4 * PAGE)));
        CacheLayout layout = layout("auto");
        CacheGeometry rank0 = layout.describe(spec, memory, new Rank(0, 1, 0, 4));
        CacheGeometry rank3 = layout.describe(spec, memory, new Rank(0, 1, 3, 4));
        assertEquals(rank0.regions(), rank3.regions());
        assertTrue(rank0.regions().stream().allMatch(region -> region.split() == SplitClass.REPLICATE && !region.packed()));
        CacheGeometry single = layout.describe(spec, memory, Rank.single());
        assertEquals(Optional.empty(), layout.incompatibility(rank3, single), "per-layer MLA pairs across TP sizes");
    }

    @Test
    void aPipelineStagePacksOnlyItsLayersAndPairsByNameWithAWholeEngine()
    {
        CacheLayout layout = layout("packed");
        CacheGeometry whole = layout.describe(MlaModels.spec(4, List.of(4)), CacheMemory.of(List.of(allocate(4 * 4 * PAGE))), Rank.single());
        ModelCacheSpec staged = MlaModels.spec(4, List.of(2, 2));
        CacheGeometry stage = layout.describe(staged, CacheMemory.of(List.of(allocate(4 * 2 * PAGE))), new Rank(0, 2, 0, 1));
        assertTrue(whole.regions().getFirst().stride() != stage.regions().getFirst().stride(), "the stage's rows are narrower");
        assertEquals(Optional.empty(), layout.incompatibility(whole, stage));
        assertEquals(Optional.empty(), layout.incompatibility(stage, whole));
        CacheGeometry kernelSplit = new CacheGeometry(stage.layoutName(), stage.rank(), stage.model(), stage.blockTokens(), 2, stage.groups(),
                stage.allocations(), stage.regions());
        assertEquals(Optional.empty(), layout.incompatibility(whole, kernelSplit), "the planner pairs the pages of other scheduler block sizes");
    }

    @Test
    void packedRowsOfAnyShapeLeavePairingToThePlannerButNotAnotherLayout()
    {
        ModelCacheSpec spec = MlaModels.spec(4, List.of(4));
        CacheLayout layout = layout("packed");
        CacheGeometry local = layout.describe(spec, CacheMemory.of(List.of(allocate(4 * 4 * PAGE))), Rank.single());
        CacheGeometry same = layout.describe(spec, CacheMemory.of(List.of(allocate(6 * 4 * PAGE))), new Rank(0, 1, 1, 2));
        assertEquals(Optional.empty(), layout.incompatibility(local, same), "capacity and TP may differ");

        // other block sizes, padded or narrower rows, other kernel splits and unpacked peers pair layer
        // by layer, and the planner checks every page against the other side's
        ModelCacheSpec longer = new ModelCacheSpec(spec.identity(), 32, 1, spec.groups(), spec.layers(), spec.stageLayerCounts());
        CacheGeometry longerBlocks = layout.describe(longer, CacheMemory.of(List.of(allocate(4 * 4 * 2 * PAGE))), Rank.single());
        Region row = local.regions().getFirst();
        CacheGeometry padded = withRegion(local, new Region(row.name(), row.base(), row.blockBytes(), 2 * row.stride(), 2, row.groupId(), row.memoryKind(),
                row.device(), row.split(), row.members(), row.packedMembers()), local.layoutName(), local.kernelBlocksPerLogical());
        CacheGeometry kernelSplit = new CacheGeometry(local.layoutName(), local.rank(), local.model(), local.blockTokens(), 2, local.groups(),
                local.allocations(), local.regions());
        CacheGeometry unpacked = withRegion(local, new Region(row.name(), row.base(), row.blockBytes(), row.stride(), row.capacity(), row.groupId(),
                row.memoryKind(), row.device(), row.split(), row.members(), List.of()), local.layoutName(), local.kernelBlocksPerLogical());
        for (CacheGeometry peer : List.of(longerBlocks, padded, kernelSplit, unpacked)) {
            assertEquals(Optional.empty(), layout.incompatibility(local, peer));
        }

        CacheGeometry otherName = withRegion(local, row, "packed-mla", local.kernelBlocksPerLogical());
        String refusal = layout.incompatibility(local, otherName).orElseThrow();
        assertTrue(refusal.contains("packed MLA rows of layout mla cannot be read as the pages of layout packed-mla"), refusal);
        assertTrue(refusal.contains("describe both engines' caches with the same layout"), refusal);
    }

    private static CacheGeometry withRegion(CacheGeometry geometry, Region region, String layoutName, int kernelBlocksPerLogical)
    {
        List<Allocation> allocations = List.of(new Allocation(region.base(), region.end() - region.base(), region.memoryKind(), region.device()));
        return new CacheGeometry(layoutName, geometry.rank(), geometry.model(), geometry.blockTokens(), kernelBlocksPerLogical, geometry.groups(),
                allocations, List.of(region));
    }

    @Test
    void packedViewsThatDoNotShareOneWholeBlockAllocationAreRejected()
    {
        ModelCacheSpec spec = MlaModels.spec(2, List.of(2));
        CacheLayout packed = layout("packed");
        Allocation first = allocate(4 * PAGE);
        Allocation second = allocate(4 * PAGE);
        KvBridgeException twoAllocations = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> packed.describe(spec, new CacheMemory(List.of(first, second), List.of(
                new LayerView(layer(0), first.address(), PAGE, PAGE, 4), new LayerView(layer(1), second.address(), PAGE, PAGE, 4))), Rank.single()));
        assertTrue(twoAllocations.getMessage().contains(PackedMlaDescriptor.SHARED_WHOLE_BLOCK_VIEWS)
                && twoAllocations.getMessage().contains("one allocation"), twoAllocations.getMessage());

        Allocation roomy = allocate(5 * 2 * PAGE);
        KvBridgeException notWhole = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> packed.describe(spec, new CacheMemory(List.of(roomy), List.of(
                new LayerView(layer(0), roomy.address(), PAGE, 2 * PAGE, 4), new LayerView(layer(1), roomy.address() + PAGE, PAGE, 2 * PAGE, 4))), Rank.single()));
        assertTrue(notWhole.getMessage().contains("whole blocks, block-outermost") && notWhole.getMessage().contains("bytes=" + 10 * PAGE), notWhole.getMessage());

        Allocation gappy = allocate(4 * 3 * PAGE);
        KvBridgeException gap = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> packed.describe(spec, new CacheMemory(List.of(gappy), List.of(
                new LayerView(layer(0), gappy.address(), PAGE, 3 * PAGE, 4), new LayerView(layer(1), gappy.address() + 2 * PAGE, PAGE, 3 * PAGE, 4))), Rank.single()));
        assertTrue(gap.getMessage().contains("gap-free"), gap.getMessage());

        Allocation mixed = allocate(8 * PAGE);
        KvBridgeException strides = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> packed.describe(spec, new CacheMemory(List.of(mixed), List.of(
                new LayerView(layer(0), mixed.address(), PAGE, 2 * PAGE, 4), new LayerView(layer(1), mixed.address() + PAGE, PAGE, PAGE, 4))), Rank.single()));
        assertTrue(strides.getMessage().contains("share one stride"), strides.getMessage());

        KvBridgeException conventionCount = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> packed.describe(spec, CacheMemory.of(List.of(first, second)),
                Rank.single()));
        assertTrue(conventionCount.getMessage().contains("exactly one"), conventionCount.getMessage());
    }

    @Test
    void autoPackingKeepsLayerOuterStorageAsOneRegionPerLayer()
    {
        int blocks = 5;
        Allocation tensor = allocate(2 * blocks * PAGE);
        CacheGeometry geometry = layout("auto").describe(MlaModels.spec(2, List.of(2)), new CacheMemory(List.of(tensor), List.of(
                new LayerView(layer(0), tensor.address(), PAGE, PAGE, blocks),
                new LayerView(layer(1), tensor.address() + blocks * PAGE, PAGE, PAGE, blocks))), Rank.single());
        assertEquals(2, geometry.regions().size());
        assertEquals(List.of(tensor), geometry.allocations(), "the tensor is registered once");
        assertFalse(geometry.regions().getFirst().packed());
        assertEquals(tensor.address() + blocks * PAGE, geometry.regions().get(1).base());
    }

    @Test
    void overlappingOrDisagreeingViewsAreRejected()
    {
        ModelCacheSpec spec = MlaModels.spec(2, List.of(2));
        Allocation tensor = allocate(8 * PAGE);
        KvBridgeException overlap = assertCode(ErrorCode.GEOMETRY_INVALID, () -> layout("per-layer").describe(spec, new CacheMemory(List.of(tensor), List.of(
                new LayerView(layer(0), tensor.address(), PAGE, PAGE, 4),
                new LayerView(layer(1), tensor.address() + 2 * PAGE, PAGE, PAGE, 4))), Rank.single()));
        assertTrue(overlap.getMessage().contains("overlap"), overlap.getMessage());
        KvBridgeException alias = assertCode(ErrorCode.GEOMETRY_INVALID, () -> layout("auto").describe(spec, new CacheMemory(List.of(tensor), List.of(
                new LayerView(layer(0), tensor.address(), PAGE, PAGE, 4),
                new LayerView(layer(1), tensor.address(), PAGE, PAGE, 3))), Rank.single()));
        assertTrue(alias.getMessage().contains("blocks=4 vs 3"), alias.getMessage());
        KvBridgeException outside = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout("auto").describe(spec, new CacheMemory(List.of(tensor), List.of(
                new LayerView(layer(0), tensor.address(), PAGE, PAGE, 4),
                new LayerView(layer(1), tensor.address() + 4 * PAGE, PAGE, PAGE, 5))), Rank.single()));
        assertTrue(outside.getMessage().contains("lies in no allocation"), outside.getMessage());
        KvBridgeException order = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout("auto").describe(spec, new CacheMemory(List.of(tensor), List.of(
                new LayerView(layer(1), tensor.address(), PAGE, PAGE, 4),
                new LayerView(layer(0), tensor.address() + 4 * PAGE, PAGE, PAGE, 4))), Rank.single()));
        assertTrue(order.getMessage().contains("model order"), order.getMessage());
    }

    @Test
    void nonMlaLayersAndWrongAllocationCountsAreRejected()
    {
        ModelIdentity identity = new ModelIdentity("m", "bfloat16", "bfloat16", 8, 128, 1, false);
        ModelCacheSpec attention = new ModelCacheSpec(identity, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128)),
                List.of(new LayerSpec("l0", 0)), List.of(1));
        KvBridgeException e = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout("auto").describe(attention, CacheMemory.of(List.of(allocate(1 << 16))),
                Rank.single()));
        assertTrue(e.getMessage().contains("'hma' or 'per-layer'"), e.getMessage());
        KvBridgeException count = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout("auto").describe(MlaModels.spec(3, List.of(3)),
                CacheMemory.of(List.of(allocate(4 * PAGE), allocate(4 * PAGE))), Rank.single()));
        assertTrue(count.getMessage().contains("got 2 allocations for 3 layers"), count.getMessage());
        KvBridgeException partial = assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout("auto").describe(MlaModels.spec(1, List.of(1)),
                CacheMemory.of(List.of(allocate(4 * PAGE + 8))), Rank.single()));
        assertTrue(partial.getMessage().contains("blockBytes=" + PAGE), partial.getMessage());
    }
}
