package io.kvbridge.core.layout;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.layout.PerLayerBlockDescriptor.Order;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.RegionBuilder;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The default layout for plain attention models: every layer the rank's stage owns becomes one
 * region (or two, one per K/V plane), in model order. Blocks are laid out as {@link Order} says
 * (see {@link PerLayerBlockDescriptor}); {@link PerLayerPlacement} says where K and V are and
 * whether layers share one block-major allocation.
 *
 * <p>Without layer views and with {@code placement=per-layer}, allocation {@code i} holds the
 * stage's layer {@code i}; with {@code placement=cross-layer} one allocation holds every layer, each
 * block a row of the layers' pages in model order. With views (joint K/V only), view {@code i} names
 * layer {@code i}; per-layer views lie in allocations of their own, cross-layer views share one and
 * must not share a byte; a view's stride may exceed the block (padding, other layers' pages).
 *
 * <p>A layer of a Mamba state group ({@link GroupKind#MAMBA}) becomes one state region: each block
 * one whole state on this rank, its components back to back ({@link CacheGroup#stateBytes}), never
 * split into planes; its allocation or view is given like an attention layer's.
 */
final class PerLayerCacheLayout implements CacheLayout
{
    static final String NAME = "per-layer";

    private final Order order;
    private final PerLayerPlacement placement;

    PerLayerCacheLayout(Order order)
    {
        this(order, PerLayerPlacement.DEFAULT);
    }

    PerLayerCacheLayout(Order order, PerLayerPlacement placement)
    {
        this.order = requireNonNull(order, "order is null");
        this.placement = requireNonNull(placement, "placement is null");
    }

    @Override
    public String name()
    {
        return NAME;
    }

    Order order()
    {
        return order;
    }

    PerLayerPlacement placement()
    {
        return placement;
    }

    @Override
    public CacheGeometry describe(ModelCacheSpec spec, CacheMemory memory, Rank rank)
    {
        requireNonNull(spec, "spec is null");
        requireNonNull(memory, "memory is null");
        List<LayerSpec> layers = spec.layersOwnedBy(rank);
        int kernelTokens = spec.kernelBlockTokens();
        int elementBytes = spec.identity().cacheElementBytes();
        long[] pageBytes = new long[layers.size()];
        for (int i = 0; i < layers.size(); i++) {
            LayerSpec layer = layers.get(i);
            CacheGroup group = spec.groups().get(layer.groupId());
            check(group.kind() != GroupKind.MLA, "layer %s belongs to MLA group %d; per-layer describes head-sharded attention, "
                    + "use the 'mla' layout for MLA models", layer.name(), group.id());
            if (group.stateful()) {
                // a Mamba layer: one whole state per block, its components back to back
                group.checkStateSplits(layer.name(), rank.tpSize());
                check(placement.planes() != PerLayerPlacement.KvPlanes.SPLIT, "layer %s keeps Mamba state, which has no K/V planes to put in a [2, blocks, "
                        + "...] tensor; use kv-planes=joint or blockwise for hybrid models", layer.name());
                pageBytes[i] = group.stateBytes(rank.tpSize());
                continue;
            }
            int heads = PerLayerBlockDescriptor.headsPerRank(group.kvHeads(), rank.tpSize());
            pageBytes[i] = PerLayerBlockDescriptor.blockBytes(heads, kernelTokens, group.headSize(), elementBytes);
        }
        List<Allocation> allocations = new ArrayList<>();
        List<Region> regions = new ArrayList<>();
        boolean crossLayer = placement.layers() == PerLayerPlacement.Layers.CROSS_LAYER;
        if (memory.views().isEmpty() && !crossLayer) {
            check(memory.allocations().size() == layers.size(), "per-layer needs one allocation per layer of stage %d: got %d allocations for %d layers "
                    + "(%s .. %s); pass one allocation per layer in model order, or layer views", rank.ppRank(), memory.allocations().size(), layers.size(),
                    layers.getFirst().name(), layers.getLast().name());
            for (int i = 0; i < layers.size(); i++) {
                Allocation allocation = memory.allocations().get(i);
                int capacity = PerLayerBlockDescriptor.checkCapacity(layers.get(i).name(), allocation.bytes(), pageBytes[i]);
                allocations.add(allocation);
                addLayer(regions, layers.get(i), stateful(spec, layers.get(i)), allocation, 0, pageBytes[i], pageBytes[i], capacity);
            }
        }
        else if (memory.views().isEmpty()) {
            check(memory.allocations().size() == 1, "placement=cross-layer needs one allocation holding every layer of stage %d, got %d; pass the one "
                    + "block-major allocation, or layer views", rank.ppRank(), memory.allocations().size());
            Allocation allocation = memory.allocations().getFirst();
            long row = 0;
            for (long page : pageBytes) {
                row += page;
            }
            int capacity = PerLayerBlockDescriptor.checkCapacity(layers.getFirst().name() + " .. " + layers.getLast().name() + " (one row per block)",
                    allocation.bytes(), row);
            allocations.add(allocation);
            long offset = 0;
            for (int i = 0; i < layers.size(); i++) {
                addLayer(regions, layers.get(i), stateful(spec, layers.get(i)), allocation, offset, pageBytes[i], row, capacity);
                offset += pageBytes[i];
            }
        }
        else {
            check(placement.planes() == PerLayerPlacement.KvPlanes.JOINT, "kv-planes=%s is described from allocations, not layer views: a view gives one "
                    + "range per layer, a layer kept as planes has two; pass the allocations without views", placement.planes().optionValue());
            check(memory.views().size() == layers.size(), "per-layer needs one view per layer of stage %d: got %d views for %d layers",
                    rank.ppRank(), memory.views().size(), layers.size());
            for (int i = 0; i < layers.size(); i++) {
                LayerSpec layer = layers.get(i);
                LayerView view = memory.views().get(i);
                check(view.layer().equals(layer.name()), "view %d is of layer %s but layer %d of stage %d is %s; give views in model order",
                        i, view.layer(), i, rank.ppRank(), layer.name());
                CacheGroup group = spec.groups().get(layer.groupId());
                check(view.blockBytes() == pageBytes[i], "layer %s: view blockBytes=%d but the spec gives %d (%s); check the %s", layer.name(),
                        view.blockBytes(), pageBytes[i], group.stateful() ? "state " + group.describeState(rank.tpSize())
                                : String.format(Locale.ROOT, "kvHeads/tpSize x %d tokens x 2 x headSize x %d bytes", kernelTokens, elementBytes),
                        group.stateful() ? "state dtypes, heads, state size and convolution width" : "cache dtype, head counts and block size");
                Allocation home = memory.allocationHolding(view);
                boolean shared = allocations.contains(home);
                check(!shared || crossLayer, "layer %s shares allocation %s with another layer; per-layer gives every layer its own allocation, "
                        + "use placement=cross-layer for block-major caches, the 'hma' layout for pooled layers or 'mla' for packed ones", layer.name(), home);
                if (!shared) {
                    allocations.add(home);
                }
                Region region = region(layer.name(), layer, home, view.address(), view.blockBytes(), view.blockStride(), view.blocks(), KvPart.JOINT,
                        group.stateful());
                for (Region other : regions) {
                    check(!region.sharesBytesWith(other), "layer %s: view [0x%x, +%d every %d bytes, %d blocks) shares bytes with layer %s's; views of one "
                            + "allocation must interleave without overlapping", layer.name(), view.address(), view.blockBytes(), view.blockStride(),
                            view.blocks(), other.name());
                }
                regions.add(region);
            }
        }
        return new CacheGeometry(NAME, rank, spec.identity(), kernelTokens, spec.kernelBlocksPerLogical(), spec.groups(), allocations, regions);
    }

    /**
     * Adds the regions of one layer whose page sits at {@code offset} in every row of {@code row}
     * bytes of an allocation: one joint region, or its two planes.
     */
    private void addLayer(List<Region> regions, LayerSpec layer, boolean state, Allocation home, long offset, long page, long row, int capacity)
    {
        long base = home.address();
        long half = page / 2;
        if (state) {
            // a state has no planes: one region, its page in every row
            regions.add(region(layer.name(), layer, home, base + offset, page, row, capacity, KvPart.JOINT, true));
            return;
        }
        switch (placement.planes()) {
            case JOINT -> regions.add(region(layer.name(), layer, home, base + offset, page, row, capacity, KvPart.JOINT, false));
            case BLOCKWISE -> {
                regions.add(region(layer.name() + "/k", layer, home, base + offset, half, row, capacity, KvPart.KEY, false));
                regions.add(region(layer.name() + "/v", layer, home, base + offset + half, half, row, capacity, KvPart.VALUE, false));
            }
            case SPLIT -> {
                // [2, blocks, row / 2]: every key plane first, then every value plane
                long plane = (long) capacity * (row / 2);
                regions.add(region(layer.name() + "/k", layer, home, base + offset / 2, half, row / 2, capacity, KvPart.KEY, false));
                regions.add(region(layer.name() + "/v", layer, home, base + plane + offset / 2, half, row / 2, capacity, KvPart.VALUE, false));
            }
        }
    }

    /** A state's components are each sharded along their own dimension, whatever order attention blocks use. */
    private Region region(String name, LayerSpec layer, Allocation home, long base, long blockBytes, long stride, int capacity, KvPart part, boolean state)
    {
        RegionBuilder region = Region.builder(name).base(base).blockBytes(blockBytes).stride(stride).capacity(capacity).group(layer.groupId())
                .split(state ? SplitClass.SPLIT : order.split()).members(layer.name()).part(part);
        return (home.kind() == MemoryKind.DEVICE ? region.device(home.device()) : region.host()).build();
    }

    private static boolean stateful(ModelCacheSpec spec, LayerSpec layer)
    {
        return spec.groups().get(layer.groupId()).stateful();
    }

    /**
     * Keeps every block: without a hybrid allocator a sliding-window layer's old blocks stay
     * allocated like a full-attention layer's, so the exchange carries them all.
     */
    @Override
    public int exchangedBlocks(CacheGroup group, int blockTokens, int blocks)
    {
        requireNonNull(group, "group is null");
        KvBridgeException.checkArgument(blockTokens > 0, "blockTokens=%d is not positive", blockTokens);
        KvBridgeException.checkArgument(blocks >= 0, "blocks=%d is negative", blocks);
        return blocks;
    }

    @Override
    public Optional<String> incompatibility(CacheGeometry local, CacheGeometry peer)
    {
        requireNonNull(local, "local is null");
        requireNonNull(peer, "peer is null");
        if (local.rank().tpSize() == peer.rank().tpSize()) {
            return Optional.empty();
        }
        for (CacheGeometry side : List.of(local, peer)) {
            for (Region region : side.regions()) {
                if (region.split() == SplitClass.INTERLEAVED) {
                    return Optional.of(String.format(Locale.ROOT,
                            "region %s of the %s side is tokens-outermost (INTERLEAVED): its heads cannot be sliced between local tpSize=%d and peer tpSize=%d; "
                                    + "use block-order=heads-outermost on both engines, or equal tensor-parallel sizes",
                            region.name(), side == local ? "local" : "peer", local.rank().tpSize(), peer.rank().tpSize()));
                }
            }
        }
        return Optional.empty();
    }

    private static void check(boolean condition, String format, Object... args)
    {
        KvBridgeException.check(condition, ErrorCode.LAYOUT_UNSUPPORTED, format, args);
    }
}
