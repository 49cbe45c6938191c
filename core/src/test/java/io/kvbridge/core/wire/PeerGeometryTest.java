package io.kvbridge.core.wire;

import static io.kvbridge.core.wire.Trees.assertError;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(30)
final class PeerGeometryTest
{
    @Test
    void numbersBlocksRegionByRegion()
    {
        CacheGeometry geometry = TestingGeometries.pooledHma();
        PeerGeometry peer = PeerGeometry.of(geometry);
        assertEquals(3, peer.regionCount());
        assertEquals(3 * 512, peer.descriptorCount());
        for (int r = 0; r < peer.regionCount(); r++) {
            Region region = geometry.regions().get(r);
            assertEquals(region.base(), peer.regionBase(r));
            assertEquals(region.end(), peer.regionEnd(r));
            assertEquals(region.blockBytes(), peer.blockBytes(r));
            assertEquals(region.stride(), peer.stride(r));
            assertEquals(region.capacity(), peer.capacity(r));
            assertEquals(r * 512, peer.firstDescriptor(r));
            for (int block : new int[] {0, 1, 255, 511}) {
                int index = peer.descriptorIndex(r, block);
                assertEquals(r * 512 + block, index);
                assertEquals(r, peer.regionOfDescriptor(index));
                assertEquals(region.blockAddress(block), peer.descriptorAddress(index));
                assertEquals(region.blockBytes(), peer.descriptorLength(index));
            }
        }
    }

    @Test
    void refusesCoordinatesAndIndicesOutsideTheAdvertisedRegions()
    {
        PeerGeometry peer = PeerGeometry.of(TestingGeometries.pooledHma());
        assertError(ErrorCode.BLOCK_OUT_OF_RANGE, () -> peer.descriptorIndex(0, 512), "block=512 is outside region 0 (pool.0) of capacity=512");
        assertError(ErrorCode.BLOCK_OUT_OF_RANGE, () -> peer.descriptorIndex(2, -1), "block=-1");
        assertError(ErrorCode.INDEX_OUT_OF_RANGE, () -> peer.descriptorIndex(3, 0), "region=3 is outside the 3 regions the peer advertised");
        assertError(ErrorCode.INDEX_OUT_OF_RANGE, () -> peer.regionBase(-1), "region=-1");
        assertError(ErrorCode.INDEX_OUT_OF_RANGE, () -> peer.descriptorAddress(1536), "descriptor index=1536 is outside the 1536 descriptors");
        assertError(ErrorCode.INDEX_OUT_OF_RANGE, () -> peer.regionOfDescriptor(-1), "descriptor index=-1");

        int[] indices = {0, 1535, 7, 1536, 3};
        peer.checkDescriptorIndices(indices, 0, 3);
        assertError(ErrorCode.INDEX_OUT_OF_RANGE, () -> peer.checkDescriptorIndices(indices, 0, 5),
                "descriptor index=1536 at position 3 is outside the 1536 descriptors");
        assertError(ErrorCode.INDEX_OUT_OF_RANGE, () -> peer.checkDescriptorIndices(new int[] {-5}, 0, 1), "descriptor index=-5 at position 0");
        assertError(ErrorCode.INVALID_ARGUMENT, () -> peer.checkDescriptorIndices(indices, 3, 3), "offset=3 count=3 do not fit indices.length=5");
    }

    @Test
    void refusesMoreLayersThanTheModelHas()
    {
        CacheGeometry geometry = TestingGeometries.perLayer(3, Rank.single());
        CacheGeometry lying = new CacheGeometry(geometry.layoutName(), geometry.rank(), TestingGeometries.identity(2), geometry.blockTokens(), 1,
                geometry.groups(), geometry.allocations(), geometry.regions());
        assertError(ErrorCode.GEOMETRY_INVALID, () -> PeerGeometry.of(lying), "the regions hold 3 layers but the model has layerCount=2");
    }

    @Test
    void refusesGeometriesWithoutRegionsOrGroups()
    {
        CacheGeometry geometry = TestingGeometries.perLayer(1, Rank.single());
        CacheGeometry empty = new CacheGeometry("x", Rank.single(), geometry.model(), 16, 1, geometry.groups(), geometry.allocations(), List.of());
        assertError(ErrorCode.GEOMETRY_INVALID, () -> PeerGeometry.of(empty), "the geometry has no regions");
        Region pooled = new Region("p", geometry.regions().getFirst().base(), 64, 64, 4, -1, MemoryKind.HOST, 0, SplitClass.SPLIT, List.of("a"), List.of());
        CacheGeometry noGroups = new CacheGeometry("x", Rank.single(), geometry.model(), 16, 1, List.of(), geometry.allocations(), List.of(pooled));
        assertError(ErrorCode.GEOMETRY_INVALID, () -> PeerGeometry.of(noGroups), "1 regions but no cache groups");
    }

    @Test
    void refusesOverlappingPackedPages()
    {
        List<String> layers = List.of("a", "b");
        Region region = new Region("packed", TestingGeometries.HOST_BASE, 1024, 1024, 4, 0, MemoryKind.HOST, 0, SplitClass.REPLICATE, layers,
                List.of(new PackedMember("a", 0, 600), new PackedMember("b", 512, 512)));
        CacheGeometry geometry = new CacheGeometry("mla-packed", Rank.single(), new ModelIdentity("m", "bfloat16", "bfloat16", 1, 576, 2, false), 64, 1,
                List.of(new CacheGroup(0, GroupKind.MLA, 0, 1, 576)), List.of(new Allocation(TestingGeometries.HOST_BASE, 4096, MemoryKind.HOST, 0)),
                List.of(region));
        assertError(ErrorCode.GEOMETRY_INVALID, () -> PeerGeometry.of(geometry),
                "packed pages of layers a [offset=0, +600) and b [offset=512, +512) overlap");
    }

    @Test
    void refusesMoreBlocksThanDescriptorIndicesCanNumber()
    {
        int capacity = Integer.MAX_VALUE;
        long span = capacity;
        List<Region> regions = List.of(
                new Region("r0", TestingGeometries.HOST_BASE, 1, 1, capacity, 0, MemoryKind.HOST, 0, SplitClass.SPLIT, List.of("a"), List.of()),
                new Region("r1", TestingGeometries.HOST_BASE + span, 1, 1, 2, 0, MemoryKind.HOST, 0, SplitClass.SPLIT, List.of("b"), List.of()));
        CacheGeometry geometry = new CacheGeometry("per-layer", Rank.single(), TestingGeometries.identity(2), 16, 1,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128)),
                List.of(new Allocation(TestingGeometries.HOST_BASE, span + 2, MemoryKind.HOST, 0)), regions);
        assertError(ErrorCode.GEOMETRY_INVALID, () -> PeerGeometry.of(geometry), "capacities sum to 2147483649 blocks");
    }
}
