package io.kvbridge.core.planner;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.Region;
import java.util.Arrays;
import java.util.List;

/**
 * Which cache groups a plan's entries address (an entry of group -1 addresses every group), and
 * the rule that ids given for a group no entry addresses would silently not move.
 *
 * <p>A plan between two whole engines (neither side a pipeline stage) is the whole exchange of its
 * rank pair, so ids of a group it does not serve are refused. A plan with a pipeline stage on
 * either side moves only the layers both ranks hold and skips the other groups' ids on purpose; the
 * request is then checked across all its stage plans ({@link TransferPlan#checkServed}).
 */
final class GroupCoverage
{
    private final boolean[] served;
    // groups this rank must see moved: every group on a whole engine, its own groups on a pipeline stage
    private final boolean[] required;
    private final boolean wholeExchange;
    private final CacheGeometry local;
    private final CacheGeometry remote;

    GroupCoverage(CacheGeometry local, CacheGeometry remote, List<TransferEntry> entries)
    {
        this.local = local;
        this.remote = remote;
        this.served = new boolean[local.groups().size()];
        for (TransferEntry entry : entries) {
            if (entry.groupId() < 0) {
                Arrays.fill(served, true);
                break;
            }
            served[entry.groupId()] = true;
        }
        this.wholeExchange = local.rank().ppSize() == 1 && remote.rank().ppSize() == 1;
        this.required = new boolean[served.length];
        if (local.rank().ppSize() == 1) {
            Arrays.fill(required, true);
        }
        for (Region region : local.regions()) {
            if (region.groupId() < 0) {
                Arrays.fill(required, true);
                break;
            }
            required[region.groupId()] = true;
        }
    }

    /**
     * Tells whether this rank's request must see a group's ids moved by some plan: always on a whole
     * engine; on a pipeline stage only the groups its own regions address (another stage of the
     * engine moves the rest).
     */
    boolean required(int group)
    {
        return group >= 0 && group < required.length && required[group];
    }

    boolean serves(int group)
    {
        return group >= 0 && group < served.length && served[group];
    }

    /** The first group with ids that no entry addresses, or -1. Allocates nothing. */
    int firstUnserved(BlockSelection blocks)
    {
        int groups = Math.min(blocks.groups(), served.length);
        for (int g = 0; g < groups; g++) {
            if (!served[g] && blocks.countOf(g) > 0) {
                return g;
            }
        }
        return -1;
    }

    /** Refuses ids of a group this plan skips when the plan is the whole exchange of its ranks. Allocates nothing unless it throws. */
    void checkWholeExchange(BlockSelection blocks, String name)
    {
        if (!wholeExchange) {
            return;
        }
        int group = firstUnserved(blocks);
        if (group >= 0) {
            throw unserved(group, blocks.countOf(group), name, "the plan between local rank " + local.rank() + " and remote rank " + remote.rank());
        }
    }

    String describeGroup(int group)
    {
        CacheGroup cacheGroup = local.groups().get(group);
        return "cache group " + group + " (" + cacheGroup.kind() + ")";
    }

    KvBridgeException unserved(int group, int ids, String name, String what)
    {
        return Checks.failure(ErrorCode.BLOCK_OUT_OF_RANGE, "%s give %d block ids for %s, but no entry of %s addresses group %d (no region on either "
                + "side holds its layers), so they would not move; give group %d an empty list, or describe the caches with that group's layers",
                name, ids, describeGroup(group), what, group, group);
    }
}
