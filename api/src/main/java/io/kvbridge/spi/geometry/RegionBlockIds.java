package io.kvbridge.spi.geometry;

import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;

/**
 * Which block ids address each region of a geometry. Block ids are given per cache group; a region
 * of group {@code g} receives group {@code g}'s ids, and a region that several groups overlay
 * ({@link Region#groupId()} {@code == -1}) receives every group's ids, concatenated in group order.
 * Concatenating is sound because a hybrid allocator never hands the same block of a shared pool to
 * two groups.
 *
 * <pre>
 *   groups:  g0 = [0]   g1 = [2]
 *   region (groupId -1, members a, b)  ->  [0, 2]
 *   region (groupId  1, members c)     ->  [2]
 * </pre>
 *
 * <p>This is the reference statement of the rule and allocates its result; per-request index
 * computation derives the same ids without building arrays.
 */
public final class RegionBlockIds
{
    private RegionBlockIds()
    {
    }

    /**
     * Routes per-group block ids to the regions of a geometry.
     *
     * @param geometry the geometry whose regions receive the ids.
     * @param blockIdsPerGroup one array of block ids per cache group, in group order.
     * @return one array per region, in region order.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} when the number of groups differs, or
     *     {@code BLOCK_OUT_OF_RANGE} when an id is negative or not below a receiving region's capacity.
     */
    public static int[][] route(CacheGeometry geometry, int[][] blockIdsPerGroup)
    {
        requireNonNull(geometry, "geometry is null");
        requireNonNull(blockIdsPerGroup, "blockIdsPerGroup is null");
        KvBridgeException.checkArgument(blockIdsPerGroup.length == geometry.groups().size(),
                "%d block id lists given for a geometry with %d cache groups (expected: one list per group, in group order)",
                blockIdsPerGroup.length, geometry.groups().size());
        int allGroups = 0;
        for (int g = 0; g < blockIdsPerGroup.length; g++) {
            requireNonNull(blockIdsPerGroup[g], "block ids of group " + g + " are null");
            allGroups += blockIdsPerGroup[g].length;
        }
        int[][] routed = new int[geometry.regions().size()][];
        for (int r = 0; r < routed.length; r++) {
            Region region = geometry.regions().get(r);
            int[] ids;
            if (region.groupId() >= 0) {
                ids = blockIdsPerGroup[region.groupId()].clone();
            }
            else {
                ids = new int[allGroups];
                int next = 0;
                for (int[] group : blockIdsPerGroup) {
                    System.arraycopy(group, 0, ids, next, group.length);
                    next += group.length;
                }
            }
            for (int id : ids) {
                KvBridgeException.check(id >= 0 && id < region.capacity(), ErrorCode.BLOCK_OUT_OF_RANGE,
                        "block id=%d is outside region %s (capacity=%d, groupId=%d); block ids must lie in [0, capacity) of every region they address",
                        id, region.name(), region.capacity(), region.groupId());
            }
            routed[r] = ids;
        }
        return routed;
    }
}
