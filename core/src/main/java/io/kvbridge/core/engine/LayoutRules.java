package io.kvbridge.core.engine;

import io.kvbridge.api.BlockIds;
import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.SlidingWindow;
import java.util.Arrays;
import java.util.Optional;

/**
 * What a rank's layout and geometry decide about a request's blocks and a peer, applied by both
 * roles: the layout's own check of a peer's geometry (before anything of the peer is prepared), the
 * trailing blocks each group exchanges (sliding-window clipping), the groups no region of the whole
 * engine serves, and which cache groups a plan's transfers write (so a failed transfer invalidates
 * only those groups' blocks). Immutable; its per-request methods allocate only the clipped arrays.
 */
final class LayoutRules
{
    /** A group mask meaning every group; used when the geometry has more groups than a mask holds. */
    static final long ALL_GROUPS = -1L;

    private final CacheLayout layout;
    private final CacheGeometry geometry;
    private final int logicalBlockTokens;
    private final boolean[] unserved;

    LayoutRules(ConnectorSettings settings)
    {
        this.layout = settings.layout();
        this.geometry = settings.geometry();
        this.logicalBlockTokens = geometry.blockTokens() * geometry.kernelBlocksPerLogical();
        this.unserved = unservedGroups(geometry, settings.cacheSpec());
    }

    /**
     * Groups whose blocks nothing of the whole engine would move: no region of this rank is addressed
     * by them, and either the rank is the whole engine (one pipeline stage) or the cache spec gives
     * the group no layer at all. A stage that owns none of a group's layers leaves the group to
     * another stage and is not listed.
     */
    private static boolean[] unservedGroups(CacheGeometry geometry, ModelCacheSpec spec)
    {
        boolean[] unserved = new boolean[geometry.groups().size()];
        Arrays.fill(unserved, true);
        for (Region region : geometry.regions()) {
            if (region.groupId() < 0) {
                // RegionBlockIds.route: an overlaid pool receives every group's ids
                Arrays.fill(unserved, false);
                return unserved;
            }
            unserved[region.groupId()] = false;
        }
        if (geometry.rank().ppSize() > 1) {
            for (int g = 0; g < unserved.length; g++) {
                if (unserved[g] && (spec == null || hasLayer(spec, g))) {
                    unserved[g] = false;
                }
            }
        }
        return unserved;
    }

    private static boolean hasLayer(ModelCacheSpec spec, int group)
    {
        for (LayerSpec layer : spec.layers()) {
            if (layer.groupId() == group) {
                return true;
            }
        }
        return false;
    }

    /**
     * Refuses blocks given for a group that no region of the engine serves: they would silently not
     * move. Kept beside the planner's {@link io.kvbridge.core.planner.TransferPlan#checkServed}
     * because it needs no peer: it refuses at the call, and a producer has no plan at {@code prefillFinished}.
     */
    void checkServed(BlockIds blocks, String side, String rankName)
    {
        for (int g = 0; g < unserved.length && g < blocks.groupCount(); g++) {
            if (unserved[g] && blocks.size(g) > 0) {
                throw new KvBridgeException(ErrorCode.BLOCK_OUT_OF_RANGE, side + " block ids " + blocks.size(g) + " given for cache group " + g + " ("
                        + geometry.groups().get(g).kind() + ") of " + rankName + ", but no region of the engine's cache (layout "
                        + geometry.layoutName() + ") is addressed by group " + g + ", so they would not be moved; give group " + g
                        + " an empty list, or describe the cache with the layers of that group");
            }
        }
    }

    /**
     * Refuses a peer whose geometry the layout says cannot be paired with this rank's, before any
     * peer list is prepared or transfer posted.
     */
    void checkPeer(CacheGeometry peer, String peerName, String rankName)
    {
        if (layout == null) {
            return;
        }
        Optional<String> reason = layout.incompatibility(geometry, peer);
        if (reason.isPresent()) {
            throw new KvBridgeException(ErrorCode.GEOMETRY_INCOMPATIBLE, "layout " + layout.name() + " of " + rankName + " (rank "
                    + geometry.rank() + ") cannot pair with " + peerName + " (layout " + peer.layoutName() + ", rank " + peer.rank() + "): "
                    + reason.get());
        }
    }

    /**
     * The number of trailing blocks of a group a request exchanges, as this rank's layout says
     * (a sliding-window group only what its window spans); every block without a layout.
     */
    int exchanged(int group, int blocks)
    {
        if (layout == null || blocks == 0) {
            return blocks;
        }
        int exchanged = layout.exchangedBlocks(geometry.groups().get(group), logicalBlockTokens, blocks);
        KvBridgeException.check(exchanged >= 0 && exchanged <= blocks, ErrorCode.LAYOUT_UNSUPPORTED,
                "layout %s says group %d exchanges %d of %d blocks (expected: between 0 and the blocks held)", layout.name(), group, exchanged, blocks);
        return exchanged;
    }

    /**
     * The request's block ids per group as they are exchanged: each group's last
     * {@link #exchanged} ids (end-trimmed, like a prefix-cache hit; {@link SlidingWindow#lastIds}).
     */
    int[][] exchangedIds(BlockIds blocks)
    {
        int[][] ids = new int[blocks.groupCount()][];
        for (int g = 0; g < ids.length; g++) {
            int[] all = blocks.group(g);
            ids[g] = SlidingWindow.lastIds(all, exchanged(g, all.length));
        }
        return ids;
    }

    /** Tells whether {@link #exchangedIds} left out blocks of some group. */
    static boolean clipped(BlockIds blocks, int[][] exchanged)
    {
        for (int g = 0; g < exchanged.length; g++) {
            if (exchanged[g].length != blocks.size(g)) {
                return true;
            }
        }
        return false;
    }

    /** The groups whose blocks a plan's transfers write on the consumer (the plan's local regions), as a mask. */
    long groupsWritten(TransferPlan plan)
    {
        if (geometry.groups().size() > Long.SIZE) {
            return ALL_GROUPS;
        }
        long mask = 0;
        for (TransferEntry entry : plan.entries()) {
            int group = entry.local().groupId();
            if (group < 0) {
                return ALL_GROUPS;
            }
            mask |= 1L << group;
        }
        return mask;
    }
}
