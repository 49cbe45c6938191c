package io.kvbridge.spi.geometry;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Everything one rank advertises about its cache. A geometry checks itself on construction: every
 * region (every run of a region made of {@link BlockRun runs}) lies inside one allocation of its
 * memory kind and device, every group id is known, and
 * every member layer belongs to exactly one region, or to two as its key and value planes.
 *
 * @param layoutName name of the layout that produced the geometry (e.g. {@code hma}).
 * @param rank the rank the geometry describes.
 * @param model the model identity.
 * @param blockTokens tokens per kernel block, the granularity of the regions' blocks.
 * @param kernelBlocksPerLogical kernel blocks per scheduler block.
 * @param groups cache groups in id order.
 * @param allocations physical allocations, each registered once with a transport.
 * @param regions transfer regions in canonical order.
 */
public record CacheGeometry(
        String layoutName,
        Rank rank,
        ModelIdentity model,
        int blockTokens,
        int kernelBlocksPerLogical,
        List<CacheGroup> groups,
        List<Allocation> allocations,
        List<Region> regions)
{
    /** Validates the geometry and copies the lists. */
    public CacheGeometry
    {
        requireNonNull(layoutName, "layoutName is null");
        requireNonNull(rank, "rank is null");
        requireNonNull(model, "model is null");
        groups = List.copyOf(requireNonNull(groups, "groups is null"));
        allocations = List.copyOf(requireNonNull(allocations, "allocations is null"));
        regions = List.copyOf(requireNonNull(regions, "regions is null"));
        checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        checkArgument(kernelBlocksPerLogical > 0, "kernelBlocksPerLogical=%d is not positive", kernelBlocksPerLogical);
        for (int i = 0; i < groups.size(); i++) {
            checkArgument(groups.get(i).id() == i, "group at position %d has id=%d (expected: ids 0..n-1 in order)", i, groups.get(i).id());
        }
        for (int i = 0; i < allocations.size(); i++) {
            for (int j = i + 1; j < allocations.size(); j++) {
                check(!allocations.get(i).overlaps(allocations.get(j)), "allocations %s and %s overlap (register each physical range once)",
                        allocations.get(i), allocations.get(j));
            }
        }
        Set<String> regionNames = new HashSet<>();
        Map<String, Region> layerToRegion = new HashMap<>();
        Set<String> bothPlanes = new HashSet<>();
        for (Region region : regions) {
            check(regionNames.add(region.name()), "two regions are named %s", region.name());
            check(region.groupId() < groups.size(), "region %s: groupId=%d but only %d groups exist", region.name(), region.groupId(), groups.size());
            if (region.groupId() >= 0 && groups.get(region.groupId()).stateful()) {
                checkStateRegion(region, groups.get(region.groupId()), rank.tpSize());
            }
            for (BlockRun run : region.spans()) {
                long end = run.end(region.stride(), region.blockBytes());
                check(allocations.stream().anyMatch(a -> a.kind() == region.memoryKind() && a.device() == region.device()
                                && a.contains(run.base(), end - run.base())),
                        "region %s [0x%x, 0x%x) on %s device %d lies inside no allocation", region.name(), run.base(), end,
                        region.memoryKind(), region.device());
            }
            for (String layer : region.members()) {
                Region previous = layerToRegion.putIfAbsent(layer, region);
                if (previous != null) {
                    check(bothPlanes.add(layer), "layer %s is in more than two regions (the last is %s); a layer has one JOINT region or one KEY and one VALUE plane",
                            layer, region.name());
                    checkPlanes(layer, previous, region);
                }
            }
        }
        for (Map.Entry<String, Region> held : layerToRegion.entrySet()) {
            Region region = held.getValue();
            check(!region.part().plane() || bothPlanes.contains(held.getKey()), "layer %s has its %s plane in region %s but no %s plane (expected: both planes of a layer, or one JOINT region)",
                    held.getKey(), region.part(), region.name(), region.part() == KvPart.KEY ? KvPart.VALUE : KvPart.KEY);
        }
    }

    /** A state region holds one layer, one whole state per block, with the components its group describes. */
    private static void checkStateRegion(Region region, CacheGroup group, int tpSize)
    {
        check(region.members().size() == 1 && !region.packed() && region.part() == KvPart.JOINT,
                "region %s of state group %d holds %s%s (expected: one layer's whole state per block, never pooled, packed or split into planes)",
                region.name(), group.id(), region.members(), region.packed() ? " packed" : region.part().plane() ? " as a " + region.part() + " plane" : "");
        check(region.split() == SplitClass.SPLIT, "region %s of state group %d is %s (expected: SPLIT, each component sharded along its split dimension)",
                region.name(), group.id(), region.split());
        for (StateComponent component : group.state()) {
            check(component.splitsOver(tpSize), "layer %s, state component %s: splitDim=%d is not divisible by this rank's tpSize=%d (expected: a "
                    + "tensor-parallel size dividing %d)", region.members().getFirst(), component.name(), component.splitDim(), tpSize, component.splitDim());
        }
        long expected = group.stateBytes(tpSize);
        check(region.blockBytes() == expected, "layer %s: state region %s has blockBytes=%d but group %d gives %d = %s at tpSize=%d; check the state "
                + "dtypes, heads, state size and convolution width", region.members().getFirst(), region.name(), region.blockBytes(), group.id(), expected,
                group.describeState(tpSize), tpSize);
    }

    /** A layer may lie in two regions only as its two planes, of one shape. */
    private static void checkPlanes(String layer, Region first, Region second)
    {
        check(first.part().plane() && second.part().plane() && first.part() != second.part(),
                "layer %s is in two regions: %s (%s) and %s (%s); a layer lies in two regions only as its KEY and VALUE planes", layer, first.name(),
                first.part(), second.name(), second.part());
        check(first.blockBytes() == second.blockBytes() && first.capacity() == second.capacity() && first.groupId() == second.groupId()
                        && first.split() == second.split() && first.memoryKind() == second.memoryKind() && first.device() == second.device(),
                "layer %s: planes %s (blockBytes=%d capacity=%d group=%d split=%s %s device %d) and %s (blockBytes=%d capacity=%d group=%d split=%s %s device %d) "
                        + "differ in shape; the key and value planes of a layer have the same blocks",
                layer, first.name(), first.blockBytes(), first.capacity(), first.groupId(), first.split(), first.memoryKind(), first.device(),
                second.name(), second.blockBytes(), second.capacity(), second.groupId(), second.split(), second.memoryKind(), second.device());
    }

    private static void check(boolean condition, String format, Object... args)
    {
        KvBridgeException.check(condition, ErrorCode.GEOMETRY_INVALID, format, args);
    }

    /**
     * Returns the index of the region holding a layer.
     *
     * @param layer global layer name.
     * @return the index of the first region holding the layer (its JOINT region, or its first
     *     plane), or -1 when no region holds the layer.
     */
    public int regionOf(String layer)
    {
        for (int r = 0; r < regions.size(); r++) {
            if (regions.get(r).members().contains(layer)) {
                return r;
            }
        }
        return -1;
    }

    /**
     * Returns the total number of blocks over all regions.
     *
     * @return the sum of capacities.
     */
    public long totalCapacity()
    {
        long total = 0;
        for (Region region : regions) {
            total += region.capacity();
        }
        return total;
    }
}
