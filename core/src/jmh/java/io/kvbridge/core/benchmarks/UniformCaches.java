package io.kvbridge.core.benchmarks;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.List;

/**
 * Geometries of a dense attention model with one region per layer, each in its own device
 * allocation, as a per-layer layout describes them. Addresses are synthetic: the planner never
 * touches memory.
 */
final class UniformCaches
{
    static final int KV_HEADS = 8;

    private UniformCaches()
    {
    }

    /**
     * Describes one rank.
     *
     * @param layers regions, one per layer.
     * @param tpRank tensor-parallel rank.
     * @param tpSize tensor-parallel size.
     * @param blockBytesAtTp1 bytes of a block holding all heads; a rank holds its share.
     * @param capacity blocks per region.
     * @param firstBase address of the first region.
     * @return the geometry.
     */
    static CacheGeometry describe(int layers, int tpRank, int tpSize, long blockBytesAtTp1, int capacity, long firstBase)
    {
        long blockBytes = blockBytesAtTp1 / tpSize;
        long span = blockBytes * capacity;
        List<Region> regions = new ArrayList<>(layers);
        List<Allocation> allocations = new ArrayList<>(layers);
        for (int layer = 0; layer < layers; layer++) {
            long base = firstBase + layer * (span + (1L << 20));
            String name = "model.layers." + layer + ".self_attn";
            regions.add(new Region(name, base, blockBytes, blockBytes, capacity, -1, MemoryKind.DEVICE, 0, SplitClass.SPLIT, List.of(name), List.of()));
            allocations.add(new Allocation(base, span, MemoryKind.DEVICE, 0));
        }
        ModelIdentity model = new ModelIdentity("bench-model", "bfloat16", "bfloat16", KV_HEADS, 128, layers, false);
        List<CacheGroup> groups = List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, KV_HEADS, 128));
        return new CacheGeometry("per-layer", new Rank(0, 1, tpRank, tpSize), model, 16, 1, groups, allocations, regions);
    }

    /**
     * Returns consecutive block ids, as a request whose blocks were allocated in one run has.
     *
     * @param first the first id.
     * @param count how many.
     * @return {@code first .. first + count - 1}.
     */
    static int[] consecutiveIds(int first, int count)
    {
        int[] ids = new int[count];
        for (int i = 0; i < count; i++) {
            ids[i] = first + i;
        }
        return ids;
    }
}
