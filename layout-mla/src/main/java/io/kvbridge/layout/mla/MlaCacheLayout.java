package io.kvbridge.layout.mla;

import static java.util.Objects.requireNonNull;

import io.kvbridge.layout.mla.PackedMlaDescriptor.Row;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * MLA caches: every region is {@link SplitClass#REPLICATE} (the latent is the same on every
 * tensor-parallel rank), either one per layer or one packed whole-row region holding every layer
 * (see {@link PackedMlaDescriptor}).
 *
 * <p>Without layer views, {@link Packing#PER_LAYER} takes one allocation per layer of the stage and
 * {@link Packing#PACKED} one allocation holding the stage's layers block-outermost in model order;
 * {@link Packing#AUTO} chooses by the number of allocations. With views, layers at the same address
 * alias one region, and distinct views interleaved in one allocation with one shared, gap-free row
 * become one whole-row region with each member's offset and page (unless {@code per-layer} is
 * asked for); {@code packed} additionally demands that all views share one whole-block allocation.
 */
final class MlaCacheLayout implements CacheLayout
{
    static final String NAME = "mla";

    /** How layers are grouped into regions. */
    enum Packing
    {
        /** Packed where the memory is packed, per layer elsewhere. */
        AUTO,
        /** One whole-row region for all layers of the stage; anything else is rejected. */
        PACKED,
        /** One region per layer (aliased layers share theirs). */
        PER_LAYER
    }

    private final Packing packing;

    MlaCacheLayout(Packing packing)
    {
        this.packing = requireNonNull(packing, "packing is null");
    }

    @Override
    public String name()
    {
        return NAME;
    }

    Packing packing()
    {
        return packing;
    }

    @Override
    public CacheGeometry describe(ModelCacheSpec spec, CacheMemory memory, Rank rank)
    {
        requireNonNull(spec, "spec is null");
        requireNonNull(memory, "memory is null");
        List<LayerSpec> layers = spec.layersOwnedBy(rank);
        for (LayerSpec layer : layers) {
            CacheGroup group = spec.groups().get(layer.groupId());
            check(group.kind() == GroupKind.MLA, "layer %s belongs to %s group %d; the mla layout describes MLA layers only, "
                    + "use 'hma' or 'per-layer' for head-sharded attention", layer.name(), group.kind(), group.id());
        }
        int kernelTokens = spec.kernelBlockTokens();
        List<Allocation> allocations = new ArrayList<>();
        List<Region> regions = new ArrayList<>();
        if (memory.views().isEmpty()) {
            describeByConvention(spec, layers, memory.allocations(), kernelTokens, allocations, regions);
        }
        else {
            describeViews(layers, memory, allocations, regions);
        }
        return new CacheGeometry(NAME, rank, spec.identity(), kernelTokens, spec.kernelBlocksPerLogical(), spec.groups(), allocations, regions);
    }

    private void describeByConvention(ModelCacheSpec spec, List<LayerSpec> layers, List<Allocation> given, int kernelTokens,
            List<Allocation> allocations, List<Region> regions)
    {
        long[] pages = new long[layers.size()];
        for (int i = 0; i < layers.size(); i++) {
            CacheGroup group = spec.groups().get(layers.get(i).groupId());
            pages[i] = PackedMlaDescriptor.pageBytes(kernelTokens, group.headSize(), spec.identity().cacheElementBytes());
        }
        boolean packed = switch (packing) {
            case PACKED -> true;
            case PER_LAYER -> false;
            case AUTO -> given.size() == 1 && layers.size() > 1;
        };
        if (!packed) {
            check(given.size() == layers.size(), "per-layer MLA takes one allocation per layer of the stage: got %d allocations for %d layers; "
                    + "pass one per layer in model order, one allocation for packed MLA, or layer views", given.size(), layers.size());
            for (int i = 0; i < layers.size(); i++) {
                Allocation home = given.get(i);
                int capacity = capacity(layers.get(i).name(), home.bytes(), pages[i]);
                allocations.add(home);
                regions.add(region(List.of(layers.get(i)), home, home.address(), pages[i], pages[i], capacity, List.of()));
            }
            return;
        }
        check(given.size() == 1, "packed MLA stores every layer of the stage in one allocation: got %d allocations; pass exactly one", given.size());
        Allocation home = given.getFirst();
        long rowBytes = PackedMlaDescriptor.rowBytes(pages);
        List<PackedMember> members = new ArrayList<>();
        for (int i = 0; i < layers.size(); i++) {
            members.add(new PackedMember(layers.get(i).name(), PackedMlaDescriptor.memberOffset(pages, i), pages[i]));
        }
        allocations.add(home);
        regions.add(region(layers, home, home.address(), rowBytes, rowBytes, capacity("packed row of " + layers.size() + " layers", home.bytes(), rowBytes),
                members));
    }

    private void describeViews(List<LayerSpec> layers, CacheMemory memory, List<Allocation> allocations, List<Region> regions)
    {
        check(memory.views().size() == layers.size(), "%d layer views given for the %d layers this stage owns; give one view per layer in model order",
                memory.views().size(), layers.size());
        // distinct views by address; a layer whose view repeats another's aliases that layer's memory
        Map<Long, LayerView> distinct = new LinkedHashMap<>();
        Map<Long, List<LayerSpec>> aliases = new LinkedHashMap<>();
        Map<Allocation, List<LayerView>> byHome = new LinkedHashMap<>();
        for (int i = 0; i < layers.size(); i++) {
            LayerSpec layer = layers.get(i);
            LayerView view = memory.views().get(i);
            check(view.layer().equals(layer.name()), "view %d is of layer %s but layer %d of the stage is %s; give views in model order",
                    i, view.layer(), i, layer.name());
            LayerView first = distinct.putIfAbsent(view.address(), view);
            if (first != null) {
                KvBridgeException.check(first.blockBytes() == view.blockBytes() && first.blockStride() == view.blockStride() && first.blocks() == view.blocks(),
                        ErrorCode.GEOMETRY_INVALID, "layers %s and %s start at 0x%x but disagree: blockBytes=%d vs %d, blockStride=%d vs %d, blocks=%d vs %d; "
                                + "an aliased layer must view its memory exactly as the layer it aliases",
                        first.layer(), view.layer(), view.address(), first.blockBytes(), view.blockBytes(), first.blockStride(), view.blockStride(),
                        first.blocks(), view.blocks());
            }
            else {
                byHome.computeIfAbsent(memory.allocationHolding(view), home -> new ArrayList<>()).add(view);
            }
            aliases.computeIfAbsent(view.address(), address -> new ArrayList<>()).add(layer);
        }
        if (packing == Packing.PACKED) {
            List<LayerView> views = new ArrayList<>(distinct.values());
            List<Allocation> homes = views.stream().map(memory::allocationHolding).toList();
            Row row = PackedMlaDescriptor.checkWholeBlockViews(homes, views);
            allocations.add(homes.getFirst());
            regions.add(rowRegion(row, homes.getFirst(), views, aliases, layers, true));
            return;
        }
        for (Map.Entry<Allocation, List<LayerView>> entry : byHome.entrySet()) {
            Allocation home = entry.getKey();
            List<LayerView> views = entry.getValue();
            allocations.add(home);
            Optional<Row> row = packing == Packing.AUTO && views.size() > 1 ? PackedMlaDescriptor.sharedRow(views) : Optional.empty();
            if (row.isPresent()) {
                regions.add(rowRegion(row.get(), home, views, aliases, layers, false));
                continue;
            }
            checkDisjoint(views);
            for (LayerView view : views) {
                List<LayerSpec> members = aliases.get(view.address());
                regions.add(region(members, home, view.address(), view.blockBytes(), view.blockStride(), view.blocks(),
                        members.size() > 1 ? packedMembers(members, 0, view.blockBytes()) : List.of()));
            }
        }
    }

    private Region rowRegion(Row row, Allocation home, List<LayerView> views, Map<Long, List<LayerSpec>> aliases, List<LayerSpec> modelOrder,
            boolean alwaysListMembers)
    {
        Map<String, PackedMember> byLayer = new LinkedHashMap<>();
        for (LayerView view : views) {
            for (LayerSpec layer : aliases.get(view.address())) {
                byLayer.put(layer.name(), new PackedMember(layer.name(), view.address() - row.start(), view.blockBytes()));
            }
        }
        List<LayerSpec> members = new ArrayList<>();
        List<PackedMember> packed = new ArrayList<>();
        for (LayerSpec layer : modelOrder) {
            PackedMember member = byLayer.get(layer.name());
            if (member != null) {
                members.add(layer);
                packed.add(member);
            }
        }
        return region(members, home, row.start(), row.bytes(), row.stride(), row.blocks(), alwaysListMembers || members.size() > 1 ? packed : List.of());
    }

    private static List<PackedMember> packedMembers(List<LayerSpec> members, long offset, long pageBytes)
    {
        List<PackedMember> packed = new ArrayList<>();
        for (LayerSpec member : members) {
            packed.add(new PackedMember(member.name(), offset, pageBytes));
        }
        return packed;
    }

    /** Distinct views that do not share a row must not share a byte either. */
    private static void checkDisjoint(List<LayerView> views)
    {
        for (int i = 0; i < views.size(); i++) {
            for (int j = i + 1; j < views.size(); j++) {
                LayerView a = views.get(i);
                LayerView b = views.get(j);
                KvBridgeException.check(!a.sharesBytesWith(b), ErrorCode.GEOMETRY_INVALID,
                        "views of layers %s [0x%x, 0x%x) and %s [0x%x, 0x%x) overlap; give each layer its own bytes, or the same view to alias a layer",
                        a.layer(), a.address(), a.end(), b.layer(), b.address(), b.end());
            }
        }
    }

    private static Region region(List<LayerSpec> members, Allocation home, long base, long blockBytes, long stride, int capacity, List<PackedMember> packed)
    {
        Set<Integer> groups = new HashSet<>();
        List<String> names = new ArrayList<>();
        for (LayerSpec member : members) {
            groups.add(member.groupId());
            names.add(member.name());
        }
        int groupId = groups.size() == 1 ? groups.iterator().next() : -1;
        return new Region(names.getFirst(), base, blockBytes, stride, capacity, groupId, home.kind(), home.device(), SplitClass.REPLICATE, names, packed);
    }

    private static int capacity(String what, long bytes, long blockBytes)
    {
        long capacity = bytes / blockBytes;
        check(bytes % blockBytes == 0 && capacity > 0 && capacity <= Integer.MAX_VALUE,
                "%s: allocation bytes=%d is not a positive whole number of blocks of blockBytes=%d; allocate capacity x blockBytes bytes",
                what, bytes, blockBytes);
        return (int) capacity;
    }

    /**
     * Packed peers must agree on every block dimension (a whole row moves as one descriptor, so
     * nothing can be converted); peers where neither side is packed pair at any TP size, because
     * the latent is replicated. When either side is one of several pipeline stages its rows pack
     * only that stage's layers, so rows differ by construction and layers pair by name through the
     * members' offsets: then only the block size must agree.
     */
    @Override
    public Optional<String> incompatibility(CacheGeometry local, CacheGeometry peer)
    {
        requireNonNull(local, "local is null");
        requireNonNull(peer, "peer is null");
        boolean localPacked = local.regions().stream().anyMatch(Region::packed);
        boolean peerPacked = peer.regions().stream().anyMatch(Region::packed);
        // rows of other shapes (strides, layers, block sizes, packing) pair layer by layer, each page
        // checked by the planner; what only this layout knows is how it lays a page out
        if ((localPacked || peerPacked) && !local.layoutName().equals(peer.layoutName())) {
            return Optional.of("packed MLA rows of layout " + local.layoutName() + " cannot be read as the pages of layout " + peer.layoutName()
                    + " (local rank " + local.rank() + ", peer rank " + peer.rank() + "); describe both engines' caches with the same layout");
        }
        return Optional.empty();
    }

    private static void check(boolean condition, String format, Object... args)
    {
        KvBridgeException.check(condition, ErrorCode.LAYOUT_UNSUPPORTED, format, args);
    }
}
