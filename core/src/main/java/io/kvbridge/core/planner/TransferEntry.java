package io.kvbridge.core.planner;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Region;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * One pairing of a local region with a remote region, carrying the geometry each side uses for it.
 * A plan moves blocks entry by entry; a local region appears in several entries when several of
 * its layers are routed separately (layer-name routing), while its allocation is still registered
 * once.
 *
 * <p>An entry either moves a <b>whole region</b> ({@link #layer()} empty, index routing): both sides
 * use their region as it is and the entry is addressed by the local region's group. Or it moves
 * <b>one layer</b> (layer-name routing): it is addressed by that layer's group, and each side uses
 * its region narrowed to the layer: the region itself for a pool (the layer's blocks are the pool's
 * pages), or the layer's page inside each block for a packed region.
 *
 * <pre>
 *   packed region (members L0 at 0, L1 at 128, pages of 128):   base       base + 256
 *                                                               [ L0 | L1 ][ L0 | L1 ] ...
 *   view of L1: base + 128, blockBytes 128, stride 256          ......[ L1 ]......[ L1 ]
 * </pre>
 *
 * @param localRegion index into the local geometry's regions.
 * @param remoteRegion index into the remote geometry's regions.
 * @param layer the layer the entry moves; empty when it moves a whole region.
 * @param groupId the cache group whose block ids address the entry, or -1 for every group (a whole
 *     shared region only).
 * @param local the local geometry the entry uses: the local region, or its view of {@code layer}.
 * @param remote the remote geometry the entry uses: the remote region, or its view of {@code layer}.
 */
public record TransferEntry(int localRegion, int remoteRegion, String layer, int groupId, Region local, Region remote)
{
    /** Validates the values. */
    public TransferEntry
    {
        requireNonNull(layer, "layer is null");
        requireNonNull(local, "local is null");
        requireNonNull(remote, "remote is null");
        checkArgument(localRegion >= 0, "localRegion=%d is negative", localRegion);
        checkArgument(remoteRegion >= 0, "remoteRegion=%d is negative", remoteRegion);
        checkArgument(groupId >= -1, "groupId=%d is below -1", groupId);
        checkArgument(layer.isEmpty() || groupId >= 0, "layer %s: groupId=%d (expected: a layer belongs to one cache group)", layer, groupId);
    }

    /**
     * Pairs two whole regions.
     *
     * @param local the local geometry.
     * @param localRegion index of the local region.
     * @param remote the remote geometry.
     * @param remoteRegion index of the remote region.
     * @return the entry, addressed by the local region's group.
     * @throws io.kvbridge.spi.KvBridgeException {@code ROUTING_FAILED} when an index names no region.
     */
    public static TransferEntry whole(CacheGeometry local, int localRegion, CacheGeometry remote, int remoteRegion)
    {
        Region mine = region(local, localRegion, "local");
        Region theirs = region(remote, remoteRegion, "remote");
        return new TransferEntry(localRegion, remoteRegion, "", mine.groupId(), mine, theirs);
    }

    /**
     * Pairs the regions holding one layer on each side.
     *
     * @param local the local geometry.
     * @param localRegion index of the local region holding the layer.
     * @param remote the remote geometry.
     * @param remoteRegion index of the remote region holding the layer.
     * @param layer the layer's global name.
     * @param groupId the layer's cache group.
     * @return the entry, with each side's view of the layer.
     * @throws io.kvbridge.spi.KvBridgeException {@code ROUTING_FAILED} when an index names no region
     *     or a region does not hold the layer, {@code GEOMETRY_INCOMPATIBLE} when a region
     *     advertises another group than the layer's, or when the sides hold different parts of the
     *     layer (joint K/V against one plane).
     */
    public static TransferEntry ofLayer(CacheGeometry local, int localRegion, CacheGeometry remote, int remoteRegion, String layer, int groupId)
    {
        requireNonNull(layer, "layer is null");
        checkArgument(!layer.isEmpty(), "layer name is empty");
        Region mine = region(local, localRegion, "local");
        Region theirs = region(remote, remoteRegion, "remote");
        Region localView = view(mine, layer, groupId, "local");
        Region remoteView = view(theirs, layer, groupId, "remote");
        if (mine.part() != theirs.part()) {
            throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "layer %s: local region %s holds its %s but remote region %s its %s (expected: the same part on both "
                    + "sides)", layer, mine.name(), mine.part(), theirs.name(), theirs.part());
        }
        // a packed row narrows to the layer's page, a plain strided view like any other region's,
        // so packed and non-packed sides pair under the rules every entry is checked by
        return new TransferEntry(localRegion, remoteRegion, layer, groupId, localView, remoteView);
    }

    /**
     * Pairs regions by position, as peers that register the same model in the same order do.
     *
     * @param local the local geometry.
     * @param remote the remote geometry; it has at least as many regions.
     * @return whole-region entries {@code (r, r)} for every local region.
     */
    public static List<TransferEntry> byIndex(CacheGeometry local, CacheGeometry remote)
    {
        requireNonNull(local, "local is null");
        List<TransferEntry> entries = new ArrayList<>(local.regions().size());
        for (int r = 0; r < local.regions().size(); r++) {
            entries.add(whole(local, r, remote, r));
        }
        return List.copyOf(entries);
    }

    /**
     * Tells whether the entry moves one layer rather than a whole region.
     *
     * @return true for an entry of layer-name routing.
     */
    public boolean byLayer()
    {
        return !layer.isEmpty();
    }

    /**
     * Returns the region this entry names in a geometry, narrowed to the entry's layer: how another
     * rank of the same engine is addressed for this entry.
     *
     * @param geometry a geometry of the same shape as the one the entry was made with.
     * @param localSide whether the geometry is the local side.
     * @return the view the descriptors of this entry follow.
     */
    Region viewIn(CacheGeometry geometry, boolean localSide)
    {
        String side = localSide ? "local" : "remote";
        Region region = region(geometry, localSide ? localRegion : remoteRegion, side);
        return byLayer() ? view(region, layer, groupId, side) : region;
    }

    private static Region region(CacheGeometry geometry, int index, String side)
    {
        requireNonNull(geometry, side + " is null");
        if (index < 0 || index >= geometry.regions().size()) {
            throw Checks.failure(ErrorCode.ROUTING_FAILED, "%s region %d does not exist (%s rank %s has %d regions)",
                    side, index, side, geometry.rank(), geometry.regions().size());
        }
        return geometry.regions().get(index);
    }

    /** A pool's pages are its layers' blocks, so a pool is its own view; a packed row narrows to the layer's page. */
    private static Region view(Region region, String layer, int groupId, String side)
    {
        if (!region.members().contains(layer)) {
            throw Checks.failure(ErrorCode.ROUTING_FAILED, "%s region %s does not hold layer %s (it holds %s)", side, region.name(), layer, region.members());
        }
        if (region.groupId() != -1 && region.groupId() != groupId) {
            throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "%s region %s advertises cache group %d but holds layer %s of group %d "
                    + "(expected: a region advertises its layers' group, or -1 when layers of several groups share it)",
                    side, region.name(), region.groupId(), layer, groupId);
        }
        long offset = 0;
        long bytes = region.blockBytes();
        for (PackedMember member : region.packedMembers()) {
            if (member.layer().equals(layer)) {
                offset = member.offset();
                bytes = member.pageBytes();
            }
        }
        String name = region.part().plane() ? layer + "/" + region.part().name().toLowerCase(Locale.ROOT) : layer;
        return region.narrowed(name, region.base() + offset, bytes, groupId, List.of(layer));
    }
}
