package io.kvbridge.core.routing;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.IntUnaryOperator;

/**
 * Builds the geometry of one rank from api records, region by region, each region in its own
 * allocation. {@link #hybridPools} pools layers the way a hybrid allocator does (the i-th layer of
 * every group of the stage shares pool i), so that routing tests in core see the pooling the
 * {@code hma} layout produces without depending on it.
 */
final class Stage
{
    static final int KV_HEADS = 8;

    private final Rank rank;
    private final int layerCount;
    private final List<CacheGroup> groups = new ArrayList<>();
    private final List<Region> regions = new ArrayList<>();
    private int blockTokens = 16;
    private int kernelBlocksPerLogical = 1;
    private boolean oneAllocation;

    private Stage(Rank rank, int layerCount)
    {
        this.rank = rank;
        this.layerCount = layerCount;
    }

    /** A rank of an engine without tensor parallelism. */
    static Stage stage(int ppRank, int ppSize, int layerCount)
    {
        return new Stage(new Rank(ppRank, ppSize, 0, 1), layerCount);
    }

    static Stage rank(Rank rank, int layerCount)
    {
        return new Stage(rank, layerCount);
    }

    static ModelIdentity model(int layerCount)
    {
        return new ModelIdentity("routing-model", "bfloat16", "bfloat16", KV_HEADS, 128, layerCount, true);
    }

    /** Layers {@code model.layers.i}, each in the group the function gives. */
    static List<LayerSpec> layers(int count, IntUnaryOperator groupOf)
    {
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            layers.add(new LayerSpec(name(i), groupOf.applyAsInt(i)));
        }
        return layers;
    }

    static String name(int layer)
    {
        return "model.layers." + layer;
    }

    /** Cache groups of the given kinds, with ids in order. */
    static List<CacheGroup> cacheGroups(GroupKind... kinds)
    {
        List<CacheGroup> groups = new ArrayList<>();
        for (GroupKind kind : kinds) {
            groups.add(new CacheGroup(groups.size(), kind, kind == GroupKind.SLIDING_WINDOW ? 512 : 0, kind == GroupKind.MLA ? 1 : KV_HEADS, 128));
        }
        return groups;
    }

    Stage groups(GroupKind... kinds)
    {
        groups.addAll(cacheGroups(kinds));
        return this;
    }

    Stage blockTokens(int tokens)
    {
        this.blockTokens = tokens;
        return this;
    }

    /** Puts every region in one allocation spanning them all, so regions may interleave. */
    Stage oneAllocation()
    {
        this.oneAllocation = true;
        return this;
    }

    Stage kernelBlocksPerLogical(int ppl)
    {
        this.kernelBlocksPerLogical = ppl;
        return this;
    }

    /** A head-sharded region with tightly packed blocks. */
    Stage region(long base, long blockBytes, int capacity, int groupId, String... members)
    {
        return region(base, blockBytes, blockBytes, capacity, groupId, SplitClass.SPLIT, members);
    }

    Stage region(long base, long blockBytes, long stride, int capacity, int groupId, SplitClass split, String... members)
    {
        regions.add(new Region(members[0], base, blockBytes, stride, capacity, groupId, MemoryKind.DEVICE, 0, split, List.of(members), List.of()));
        return this;
    }

    /** A packed whole-row MLA region: members side by side in each row, in the order given. */
    Stage packed(long base, int capacity, int groupId, PackedMember... members)
    {
        long row = 0;
        List<String> names = new ArrayList<>();
        for (PackedMember member : members) {
            row = Math.max(row, member.offset() + member.pageBytes());
            names.add(member.layer());
        }
        regions.add(new Region(names.getFirst(), base, row, row, capacity, groupId, MemoryKind.DEVICE, 0, SplitClass.REPLICATE, names, List.of(members)));
        return this;
    }

    /**
     * Pools the layers of this rank's stage as a hybrid allocator does: pool {@code i} holds the
     * {@code i}-th layer of every group, advertises that group or -1 when several overlay it, and
     * lies at {@code base + i * poolStride}.
     */
    Stage hybridPools(List<LayerSpec> stageLayers, long base, long poolStride, long pageBytes, int capacity)
    {
        List<List<LayerSpec>> pools = new ArrayList<>();
        int[] seen = new int[64];
        for (LayerSpec layer : stageLayers) {
            int pool = seen[layer.groupId()]++;
            while (pools.size() <= pool) {
                pools.add(new ArrayList<>());
            }
            pools.get(pool).add(layer);
        }
        for (int p = 0; p < pools.size(); p++) {
            List<LayerSpec> members = pools.get(p);
            Set<Integer> groupIds = new LinkedHashSet<>();
            members.forEach(member -> groupIds.add(member.groupId()));
            region(base + p * poolStride, pageBytes, capacity, groupIds.size() == 1 ? groupIds.iterator().next() : -1,
                    members.stream().map(LayerSpec::name).toArray(String[]::new));
        }
        return this;
    }

    /** A model of full-attention (group 0) and sliding-window (group 1) layers split into the given stages. */
    static ModelCacheSpec hybridSpec(List<LayerSpec> layers, List<Integer> stageLayerCounts)
    {
        return new ModelCacheSpec(model(layers.size()), 16, 1, cacheGroups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW), layers, stageLayerCounts);
    }

    /** The geometry of one rank of an engine split as the spec says, pooled by the hybrid allocator's rule, 64 pages per pool. */
    static CacheGeometry hybrid(ModelCacheSpec spec, Rank rank, long base, long pageBytes)
    {
        return rank(rank, spec.layers().size()).groups(GroupKind.FULL_ATTENTION, GroupKind.SLIDING_WINDOW)
                .hybridPools(spec.layersOwnedBy(rank), base, 0x10_0000L, pageBytes, 64).build();
    }

    CacheGeometry build()
    {
        List<CacheGroup> finalGroups = groups.isEmpty() ? List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, KV_HEADS, 128)) : groups;
        List<Allocation> allocations = new ArrayList<>();
        if (oneAllocation) {
            long start = regions.stream().mapToLong(Region::base).min().orElseThrow();
            long end = regions.stream().mapToLong(Region::end).max().orElseThrow();
            allocations.add(new Allocation(start, end - start, MemoryKind.DEVICE, 0));
        }
        else {
            for (Region region : regions) {
                allocations.add(new Allocation(region.base(), region.end() - region.base(), region.memoryKind(), region.device()));
            }
        }
        return new CacheGeometry("test", rank, model(layerCount), blockTokens, kernelBlocksPerLogical, finalGroups, allocations, regions);
    }
}
