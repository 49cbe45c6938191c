package io.kvbridge.core.planner;

import static io.kvbridge.spi.KvBridgeException.checkArgument;
import static java.util.Objects.requireNonNull;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.StateComponent;
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
 * <p>A layer of a state group ({@link io.kvbridge.spi.geometry.GroupKind#MAMBA}) moves as one
 * entry per <b>state component</b> ({@link #component()}): each side's view is the component's
 * byte range inside every state, at that side's tensor-parallel size. A component is sharded along
 * its own split dimension, so a rank's share of a peer's component is one contiguous range of it,
 * and moving components one by one lands every byte in place without a permutation.
 *
 * <pre>
 *   state at TP 1:  [ conv.x (x0 x1) | conv.B (B0 B1) | conv.C (C0 C1) | ssm (h0 h1) ]
 *   state at TP 2, rank 1:  [ x1 | B1 | C1 | h1 ]   (four descriptors per state)
 * </pre>
 *
 * @param remote the remote geometry the entry uses: the remote region, or its view of {@code layer}.
 * @param component index of the state component the entry moves, or -1 for an attention entry.
 */
public record TransferEntry(int localRegion, int remoteRegion, String layer, int groupId, Region local, Region remote, int component)
{
    /**
     * Creates an entry of attention blocks (no state component).
     *
     * @param localRegion see the record.
     * @param remoteRegion see the record.
     * @param layer see the record.
     * @param groupId see the record.
     * @param local see the record.
     * @param remote see the record.
     */
    public TransferEntry(int localRegion, int remoteRegion, String layer, int groupId, Region local, Region remote)
    {
        this(localRegion, remoteRegion, layer, groupId, local, remote, -1);
    }

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
        checkArgument(component >= -1, "component=%d is below -1", component);
        checkArgument(component == -1 || !layer.isEmpty(), "component %d given for a whole-region entry (expected: state components move layer by layer)",
                component);
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
            addWhole(entries, local, r, remote, r);
        }
        return List.copyOf(entries);
    }

    /**
     * Adds the entries that move one local region paired by position: the whole region, or for a
     * state region its layer component by component.
     *
     * @param entries receives the entries.
     * @param local the local geometry.
     * @param localRegion index of the local region.
     * @param remote the remote geometry.
     * @param remoteRegion index of the remote region.
     */
    public static void addWhole(List<TransferEntry> entries, CacheGeometry local, int localRegion, CacheGeometry remote, int remoteRegion)
    {
        Region mine = region(local, localRegion, "local");
        if (mine.groupId() >= 0 && local.groups().get(mine.groupId()).stateful()) {
            entries.addAll(ofState(local, localRegion, remote, remoteRegion, mine.members().getFirst(), mine.groupId()));
        }
        else {
            entries.add(whole(local, localRegion, remote, remoteRegion));
        }
    }

    /**
     * Pairs the regions holding one layer of a state group, one entry per state component.
     *
     * @param local the local geometry.
     * @param localRegion index of the local region holding the layer.
     * @param remote the remote geometry.
     * @param remoteRegion index of the remote region holding the layer.
     * @param layer the layer's global name.
     * @param groupId the layer's cache group, a state group on both sides.
     * @return one entry per component, in the group's component order.
     * @throws io.kvbridge.spi.KvBridgeException {@code GEOMETRY_INCOMPATIBLE} when the group is not
     *     a state group on both sides or its components differ, {@code TP_UNSUPPORTED} when a
     *     side's tensor-parallel size does not divide a component's split dimension, and the
     *     errors of {@link #ofLayer}.
     */
    public static List<TransferEntry> ofState(CacheGeometry local, int localRegion, CacheGeometry remote, int remoteRegion, String layer, int groupId)
    {
        TransferEntry layerEntry = ofLayer(local, localRegion, remote, remoteRegion, layer, groupId);
        CacheGroup group = stateGroup(local, groupId, layer, "local");
        CacheGroup peerGroup = stateGroup(remote, groupId, layer, "remote");
        checkSameComponents(layer, group, peerGroup);
        List<TransferEntry> entries = new ArrayList<>(group.state().size());
        for (int c = 0; c < group.state().size(); c++) {
            entries.add(new TransferEntry(localRegion, remoteRegion, layer, groupId,
                    componentView(layerEntry.local(), group, c, local.rank().tpSize(), "local", layer),
                    componentView(layerEntry.remote(), peerGroup, c, remote.rank().tpSize(), "remote", layer), c));
        }
        return List.copyOf(entries);
    }

    /**
     * Rebuilds a state component entry from the geometries it names.
     *
     * @param local the local geometry.
     * @param localRegion index of the local region holding the layer.
     * @param remote the remote geometry.
     * @param remoteRegion index of the remote region holding the layer.
     * @param layer the layer's global name.
     * @param groupId the layer's state group.
     * @param component the component's index.
     * @return the entry {@link #ofState} builds for that component.
     */
    static TransferEntry ofStateComponent(CacheGeometry local, int localRegion, CacheGeometry remote, int remoteRegion, String layer, int groupId,
            int component)
    {
        List<TransferEntry> all = ofState(local, localRegion, remote, remoteRegion, layer, groupId);
        if (component >= all.size()) {
            throw Checks.failure(ErrorCode.ROUTING_FAILED, "layer %s: state component %d does not exist (group %d has %d components)", layer, component,
                    groupId, all.size());
        }
        return all.get(component);
    }

    /**
     * Tells whether the entry moves one state component.
     *
     * @return true when {@link #component()} is not -1.
     */
    public boolean stateComponent()
    {
        return component >= 0;
    }

    private static CacheGroup stateGroup(CacheGeometry geometry, int groupId, String layer, String side)
    {
        if (groupId < 0 || groupId >= geometry.groups().size() || !geometry.groups().get(groupId).stateful()) {
            throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "layer %s: cache group %d is not a state group on the %s side (rank %s has groups %s)",
                    layer, groupId, side, geometry.rank(), geometry.groups());
        }
        return geometry.groups().get(groupId);
    }

    /** Both sides must describe one state alike, component by component: the bytes would otherwise land in the wrong place. */
    private static void checkSameComponents(String layer, CacheGroup mine, CacheGroup theirs)
    {
        if (mine.state().size() != theirs.state().size()) {
            throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "layer %s: local state group %d has %d components %s but the remote one %d %s "
                    + "(expected: the same components on both sides)", layer, mine.id(), mine.state().size(), mine.state(), theirs.state().size(), theirs.state());
        }
        for (int c = 0; c < mine.state().size(); c++) {
            StateComponent a = mine.state().get(c);
            StateComponent b = theirs.state().get(c);
            if (!a.equals(b)) {
                throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "layer %s, state component %d: local %s (dtype=%s splitDim=%d unitElements=%d) but remote "
                        + "%s (dtype=%s splitDim=%d unitElements=%d); check that both engines run the same model with the same state dtypes",
                        layer, c, a.name(), a.dtype(), a.splitDim(), a.unitElements(), b.name(), b.dtype(), b.splitDim(), b.unitElements());
            }
        }
    }

    /** A component's bytes inside every state of a layer's view, at one side's tensor-parallel size. */
    private static Region componentView(Region layerView, CacheGroup group, int component, int tpSize, String side, String layer)
    {
        StateComponent spec = group.state().get(component);
        if (!spec.splitsOver(tpSize)) {
            throw Checks.failure(ErrorCode.TP_UNSUPPORTED, "layer %s, state component %s: the %s tpSize=%d does not divide splitDim=%d, so its ranks cannot "
                    + "hold equal shares (expected: tensor-parallel sizes dividing %d on both sides)", layer, spec.name(), side, tpSize, spec.splitDim(),
                    spec.splitDim());
        }
        long offset = group.componentOffset(component, tpSize);
        long bytes = spec.bytesPerRank(tpSize);
        if (layerView.blockBytes() != group.stateBytes(tpSize)) {
            throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "layer %s: %s state region %s has blockBytes=%d but its components need %d at tpSize=%d",
                    layer, side, layerView.name(), layerView.blockBytes(), group.stateBytes(tpSize), tpSize);
        }
        return layerView.narrowed(layer + "/" + spec.name(), layerView.base() + offset, bytes, group.id(), List.of(layer));
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
        if (stateComponent()) {
            CacheGroup group = stateGroup(geometry, groupId, layer, side);
            if (component >= group.state().size()) {
                throw Checks.failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "layer %s: %s rank %s describes %d state components, not component %d", layer, side,
                        geometry.rank(), group.state().size(), component);
            }
            return componentView(view(region, layer, groupId, side), group, component, geometry.rank().tpSize(), side, layer);
        }
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
