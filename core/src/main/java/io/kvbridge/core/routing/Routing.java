package io.kvbridge.core.routing;

import static io.kvbridge.core.routing.ModelLayers.failure;
import static java.util.Objects.requireNonNull;

import io.kvbridge.api.TransferMode;
import io.kvbridge.core.planner.TpPlan;
import io.kvbridge.core.planner.TransferEntry;
import io.kvbridge.core.planner.TransferPlan;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.PackedRows;
import io.kvbridge.spi.geometry.Region;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Decides which local region pairs with which peer region, before anything is registered.
 *
 * <p><b>Index routing</b> pairs local region {@code r} with peer region {@code offset + r}. The
 * offset is 0 between two engines without pipeline parallelism; for a pipeline stage whose regions
 * each hold one layer, paired with a peer without pipeline parallelism, it is the position of the
 * stage's first layer in the model (a stage owning layers [2, 4) of a peer advertising four regions
 * uses the peer's regions 2 and 3). It is exact only when every pair holds the same layers and
 * advertises the same cache group, which is checked.
 *
 * <p><b>Layer-name routing</b> pairs, for every local region and every layer it holds in order, the
 * peer region holding that layer; the entry is addressed by the layer's group and each side uses its
 * own region geometry. It is needed when the sides pool layers differently (a pipeline stage of a
 * hybrid-allocator cache pools only its own layers) or pack them into rows, and when the peer is
 * itself a pipeline stage. The entries follow the local regions only, so the result does not depend
 * on the order in which the peer lists its regions.
 *
 * <p>{@link #route} takes index routing wherever it is exact and layer-name routing otherwise.
 */
public final class Routing
{
    private Routing()
    {
    }

    /**
     * Routes a local rank to one rank of a peer engine and checks the plan. In {@code PUSH} the local
     * producer rank writes the remote ranks of {@link TpPlan#writeTargets()}.
     *
     * @param layers the model's layers in model order, with global names and groups (the
     *     {@code layers()} of either engine's {@link io.kvbridge.spi.geometry.ModelCacheSpec}).
     * @param local this rank's geometry.
     * @param remote the peer rank's geometry.
     * @param mode who moves the bytes: in {@code PUSH} the local rank is the producer writing into the peer.
     * @return the checked plan.
     * @throws io.kvbridge.spi.KvBridgeException {@code ROUTING_FAILED}, {@code GEOMETRY_INCOMPATIBLE},
     *     {@code TP_UNSUPPORTED} or another planner error naming the layer, the regions and both sides.
     */
    public static TransferPlan plan(List<LayerSpec> layers, CacheGeometry local, CacheGeometry remote, TransferMode mode)
    {
        return checked(TransferPlan.pair(local, remote, route(layers, local, remote).entries()), mode);
    }

    /**
     * Applies the checks of the transfer direction to a plan. Push needs none beyond the plan's: a
     * producer-side plan writes every decoder rank whose own plan reads from it
     * ({@link TpPlan#writeTargets()}, each with the bytes of {@link TpPlan#writeSlot(int)}), so
     * no decoder rank is left stale, replicated (MLA) copies and duplicated heads included.
     */
    static TransferPlan checked(TransferPlan plan, TransferMode mode)
    {
        requireNonNull(mode, "mode is null");
        return plan;
    }

    /**
     * Chooses the routing for two ranks and builds its entries: index routing where it is exact,
     * layer-name routing otherwise.
     *
     * @param layers the model's layers in model order.
     * @param local this rank's geometry.
     * @param remote the peer rank's geometry.
     * @return the mode chosen and its entries (never empty).
     */
    public static Route route(List<LayerSpec> layers, CacheGeometry local, CacheGeometry remote)
    {
        ModelLayers model = model(layers, local, remote);
        Positional positional = positional(model, local, remote);
        if (positional.problem() == null) {
            return new Route(RoutingMode.BY_INDEX, indexEntries(local, remote, positional.offset()));
        }
        return new Route(RoutingMode.BY_LAYER_NAME, byName(model, local, remote, false, positional.problem()));
    }

    /**
     * Pairs regions by position, sliced to a pipeline stage's regions when the peer is a whole
     * engine.
     *
     * @param layers the model's layers in model order.
     * @param local this rank's geometry.
     * @param remote the peer rank's geometry.
     * @return one whole-region entry per local region.
     * @throws io.kvbridge.spi.KvBridgeException {@code GEOMETRY_INCOMPATIBLE} when positions do not
     *     pair the same layers with the same cache groups.
     */
    public static List<TransferEntry> byIndex(List<LayerSpec> layers, CacheGeometry local, CacheGeometry remote)
    {
        Positional positional = positional(model(layers, local, remote), local, remote);
        if (positional.problem() != null) {
            throw failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "regions cannot be paired by position: %s; pair them by layer name instead", positional.problem());
        }
        return indexEntries(local, remote, positional.offset());
    }

    /**
     * Pairs every layer the local rank holds with the peer region holding it.
     *
     * <p>Two things are paired here, not refused: blocks of unequal size (the plan moves each block as
     * the peer's sub-blocks, head by head where heads are outermost), and a packed row meeting a
     * plain region or a row of another shape, block tokens or kernel blocks per block (the row
     * narrows to the layer's page, an ordinary strided view; see
     * {@link io.kvbridge.spi.geometry.PackedRows} for when a row moves whole instead). Whether the
     * pages' bytes then agree, the larger side's page being the smaller's times the block size
     * ratio, is checked when the plan is built ({@code GEOMETRY_INCOMPATIBLE} naming both regions'
     * {@code blockBytes}).
     *
     * @param layers the model's layers in model order.
     * @param local this rank's geometry.
     * @param remote the peer rank's geometry.
     * @return one entry per local layer, in local region order then member order.
     * @throws io.kvbridge.spi.KvBridgeException {@code ROUTING_FAILED} when a local layer is
     *     unknown to the model or missing on the peer, {@code GEOMETRY_INCOMPATIBLE} when a region
     *     advertises another group than its layer's, or the sides hold different parts of a layer
     *     (joint K/V against one plane).
     */
    public static List<TransferEntry> byLayerName(List<LayerSpec> layers, CacheGeometry local, CacheGeometry remote)
    {
        return byName(model(layers, local, remote), local, remote, false, "layer-name routing was asked for");
    }

    /**
     * Pairs the layers both ranks hold by name and skips the others: one stage pair of two engines
     * split into pipeline stages, or a whole engine and one stage of its peer.
     *
     * @param layers the model's layers in model order.
     * @param local this rank's geometry.
     * @param remote the peer rank's geometry.
     * @return one entry per local layer the peer also holds, in local region order then member
     *     order; empty when the ranks share no layer.
     * @throws io.kvbridge.spi.KvBridgeException as {@link #byLayerName}, except for missing layers.
     */
    public static List<TransferEntry> sharedLayers(List<LayerSpec> layers, CacheGeometry local, CacheGeometry remote)
    {
        return sharedLayers(model(layers, local, remote), local, remote);
    }

    /** Routes the layers both ranks hold and skips the others: a stage pair of two pipeline-parallel engines. */
    static List<TransferEntry> sharedLayers(ModelLayers model, CacheGeometry local, CacheGeometry remote)
    {
        return byName(model, local, remote, true, "the engines are split into pipeline stages");
    }

    private static ModelLayers model(List<LayerSpec> layers, CacheGeometry local, CacheGeometry remote)
    {
        requireNonNull(local, "local is null");
        requireNonNull(remote, "remote is null");
        ModelLayers model = new ModelLayers(layers);
        model.checkDescribes(local, "local");
        model.checkDescribes(remote, "remote");
        return model;
    }

    /** Where positional pairing would start on the peer, or why it would pair the wrong layers. */
    private record Positional(int offset, String problem)
    {
    }

    private static Positional positional(ModelLayers model, CacheGeometry local, CacheGeometry remote)
    {
        List<Region> mine = local.regions();
        List<Region> theirs = remote.regions();
        int offset;
        if (local.rank().ppSize() == 1 && remote.rank().ppSize() == 1) {
            if (mine.size() != theirs.size()) {
                return problem("local rank %s has %d regions but remote rank %s has %d", local.rank(), mine.size(), remote.rank(), theirs.size());
            }
            offset = 0;
        }
        else if (remote.rank().ppSize() == 1 && !poolsLayers(local) && !poolsLayers(remote) && !mine.isEmpty() && !hasPlanes(local) && !hasPlanes(remote)) {
            // one region per layer on both sides: the stage's regions are the peer's from the stage's first layer on
            String first = mine.getFirst().members().getFirst();
            offset = model.position(first);
            if (offset < 0) {
                return problem("the first layer %s of local stage %s is not a layer of the model", first, local.rank());
            }
            if (offset + mine.size() > theirs.size()) {
                return problem("local stage %s holds layers [%d, %d) but remote rank %s advertises %d regions", local.rank(), offset, offset + mine.size(),
                        remote.rank(), theirs.size());
            }
        }
        else {
            return problem("local rank %s (%s) and remote rank %s (%s) do not line up by position", local.rank(), pooling(local), remote.rank(), pooling(remote));
        }
        for (int r = 0; r < mine.size(); r++) {
            Region a = mine.get(r);
            Region b = theirs.get(offset + r);
            if (!a.members().equals(b.members())) {
                return problem("local region %s holds %s but remote region %s at position %d holds %s", a.name(), a.members(), b.name(), offset + r, b.members());
            }
            if (a.part() != b.part()) {
                return problem("local region %s holds the %s of %s but remote region %s at position %d holds the %s", a.name(), a.part(), a.members(), b.name(),
                        offset + r, b.part());
            }
            Optional<String> wholeRow = PackedRows.wholeRowMismatch(local, a, remote, b);
            if (wholeRow.isPresent()) {
                return problem("%s (remote position %d), so their layers are paired one by one", wholeRow.get(), offset + r);
            }
            if (a.groupId() != b.groupId()) {
                return problem("local region %s addresses cache group %d but remote region %s addresses group %d (the sides map regions to groups differently)",
                        a.name(), a.groupId(), b.name(), b.groupId());
            }
        }
        return new Positional(offset, null);
    }

    private static Positional problem(String format, Object... args)
    {
        return new Positional(-1, String.format(Locale.ROOT, format, args));
    }

    private static boolean poolsLayers(CacheGeometry geometry)
    {
        return geometry.regions().stream().anyMatch(region -> region.members().size() > 1);
    }

    private static boolean hasPlanes(CacheGeometry geometry)
    {
        return geometry.regions().stream().anyMatch(region -> region.part().plane());
    }

    private static String pooling(CacheGeometry geometry)
    {
        return (poolsLayers(geometry) ? "pools layers" : "one region per layer") + ", pipeline stage " + geometry.rank().ppRank() + " of "
                + geometry.rank().ppSize();
    }

    private static List<TransferEntry> indexEntries(CacheGeometry local, CacheGeometry remote, int offset)
    {
        checkNotEmpty(local.regions().size(), local, remote);
        List<TransferEntry> entries = new ArrayList<>(local.regions().size());
        for (int r = 0; r < local.regions().size(); r++) {
            TransferEntry.addWhole(entries, local, r, remote, offset + r);
        }
        return entries;
    }

    private static List<TransferEntry> byName(ModelLayers model, CacheGeometry local, CacheGeometry remote, boolean partialPeer, String why)
    {
        Map<String, Integer> peer = ModelLayers.regionsByLayer(remote);
        List<TransferEntry> entries = new ArrayList<>();
        for (int l = 0; l < local.regions().size(); l++) {
            Region region = local.regions().get(l);
            for (String layer : region.members()) {
                int group = model.groupOf(layer, local, region, "local");
                Integer r = peer.get(ModelLayers.key(layer, region.part()));
                if (r == null) {
                    List<KvPart> held = partsHeld(remote, layer);
                    if (!held.isEmpty()) {
                        throw failure(ErrorCode.GEOMETRY_INCOMPATIBLE, "layer %s: local region %s holds its %s but remote rank %s holds %s of it; joint K/V "
                                + "(keys and values side by side per token) and K/V planes order bytes differently (expected: kv-planes=joint on both engines, "
                                + "or planes on both: split and blockwise pair with each other)", layer, region.name(), region.part(), remote.rank(), held);
                    }
                    if (partialPeer) {
                        continue;
                    }
                    throw missing(layer, region, local, remote);
                }
                if (local.groups().get(group).stateful()) {
                    entries.addAll(TransferEntry.ofState(local, l, remote, r, layer, group));
                }
                else {
                    entries.add(TransferEntry.ofLayer(local, l, remote, r, layer, group));
                }
            }
        }
        if (!partialPeer) {
            checkNotEmpty(entries.size(), local, remote);
        }
        return entries;
    }

    private static List<KvPart> partsHeld(CacheGeometry geometry, String layer)
    {
        List<KvPart> parts = new ArrayList<>();
        for (Region region : geometry.regions()) {
            if (region.members().contains(layer)) {
                parts.add(region.part());
            }
        }
        return parts;
    }

    private static RuntimeException missing(String layer, Region region, CacheGeometry local, CacheGeometry remote)
    {
        List<String> held = remote.regions().stream().flatMap(r -> r.members().stream()).toList();
        String range = held.isEmpty() ? "none" : held.size() + " layers, " + held.getFirst() + " .. " + held.getLast();
        String stage = remote.rank().ppSize() > 1
                ? String.format(Locale.ROOT, "; the peer is pipeline stage %d of %d, so route against all its stages (StageExchange)", remote.rank().ppRank(),
                        remote.rank().ppSize())
                : "";
        return failure(ErrorCode.ROUTING_FAILED, "missing locally owned layer %s: local region %s of rank %s holds it but remote rank %s advertises no region "
                + "holding it (remote holds %s), so transferring would leave it stale%s", layer, region.name(), local.rank(), remote.rank(), range, stage);
    }

    private static void checkNotEmpty(int entries, CacheGeometry local, CacheGeometry remote)
    {
        if (entries == 0) {
            throw failure(ErrorCode.ROUTING_FAILED, "no transfer entries between local rank %s (%d regions) and remote rank %s (%d regions): nothing would be moved",
                    local.rank(), local.regions().size(), remote.rank(), remote.regions().size());
        }
    }
}
