package io.kvbridge.core.planner;

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
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/** Builds test geometries: allocations are derived from the regions (overlapping regions share one). */
final class Geometries
{
    private final int kvHeads;
    private final Rank rank;
    private int blockTokens = 16;
    private int kernelBlocksPerLogical = 1;
    private String cacheDtype = "bfloat16";
    private final List<CacheGroup> groups = new ArrayList<>();
    private final List<Region> regions = new ArrayList<>();

    private Geometries(int kvHeads, Rank rank)
    {
        this.kvHeads = kvHeads;
        this.rank = rank;
    }

    static Geometries geometry(int kvHeads, int tpRank, int tpSize)
    {
        return new Geometries(kvHeads, new Rank(0, 1, tpRank, tpSize));
    }

    static ModelIdentity model(int kvHeads, String cacheDtype)
    {
        return new ModelIdentity("test-model", "bfloat16", cacheDtype, kvHeads, 128, 80, false);
    }

    Geometries blockTokens(int tokens)
    {
        this.blockTokens = tokens;
        return this;
    }

    Geometries kernelBlocksPerLogical(int ppl)
    {
        this.kernelBlocksPerLogical = ppl;
        return this;
    }

    Geometries cacheDtype(String dtype)
    {
        this.cacheDtype = dtype;
        return this;
    }

    Geometries group(GroupKind kind)
    {
        groups.add(new CacheGroup(groups.size(), kind, kind == GroupKind.SLIDING_WINDOW ? 1024 : 0, kind == GroupKind.MLA ? 1 : kvHeads, 128));
        return this;
    }

    Geometries region(long base, long blockBytes, long stride, int capacity, int groupId, SplitClass split)
    {
        return region(base, blockBytes, stride, capacity, groupId, split, MemoryKind.DEVICE, 0);
    }

    Geometries region(long base, long blockBytes, long stride, int capacity, int groupId, SplitClass split, MemoryKind kind, int device)
    {
        int index = regions.size();
        regions.add(new Region("r" + index, base, blockBytes, stride, capacity, groupId, kind, device, split, List.of("layers." + index), List.of()));
        return this;
    }

    Geometries packedRegion(long base, long blockBytes, int capacity, List<PackedMember> members)
    {
        int index = regions.size();
        List<String> names = members.stream().map(PackedMember::layer).toList();
        regions.add(new Region("r" + index, base, blockBytes, blockBytes, capacity, -1, MemoryKind.DEVICE, 0, SplitClass.REPLICATE, names, members));
        return this;
    }

    /** Adds regions of uniform shape at consecutive bases, each in its own allocation. */
    Geometries uniformRegions(int count, long firstBase, long blockBytes, int capacity, int groupId, SplitClass split)
    {
        long span = blockBytes * capacity;
        for (int r = 0; r < count; r++) {
            region(firstBase + r * (span + 4096), blockBytes, blockBytes, capacity, groupId, split);
        }
        return this;
    }

    CacheGeometry build()
    {
        List<CacheGroup> finalGroups = groups.isEmpty() ? List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, kvHeads, 128)) : groups;
        return new CacheGeometry("test", rank, model(kvHeads, cacheDtype), blockTokens, kernelBlocksPerLogical, finalGroups, allocations(regions), regions);
    }

    static List<Allocation> allocations(List<Region> regions)
    {
        List<Region> sorted = new ArrayList<>(regions);
        sorted.sort(Comparator.comparingLong(Region::base));
        List<Allocation> result = new ArrayList<>();
        long start = -1;
        long end = -1;
        Region first = null;
        for (Region region : sorted) {
            if (first != null && region.base() < end && region.memoryKind() == first.memoryKind() && region.device() == first.device()) {
                end = Math.max(end, region.end());
                continue;
            }
            if (first != null) {
                result.add(new Allocation(start, end - start, first.memoryKind(), first.device()));
            }
            first = region;
            start = region.base();
            end = region.end();
        }
        if (first != null) {
            result.add(new Allocation(start, end - start, first.memoryKind(), first.device()));
        }
        return result;
    }
}
