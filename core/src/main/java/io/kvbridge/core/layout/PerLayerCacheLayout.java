package io.kvbridge.core.layout;

import static java.util.Objects.requireNonNull;

import io.kvbridge.core.layout.PerLayerBlockDescriptor.Order;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The default layout for plain attention models: every layer the rank's stage owns has its own
 * allocation and becomes one region, in model order. Blocks are laid out as {@link Order} says (see
 * {@link PerLayerBlockDescriptor}).
 *
 * <p>Without layer views, allocation {@code i} holds the stage's layer {@code i} and its blocks are
 * packed tightly ({@code stride = blockBytes}). With views, view {@code i} names layer {@code i},
 * must lie in an allocation no other layer uses, and its stride may exceed the block (padding).
 */
final class PerLayerCacheLayout implements CacheLayout
{
    static final String NAME = "per-layer";

    private final Order order;

    PerLayerCacheLayout(Order order)
    {
        this.order = requireNonNull(order, "order is null");
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
            int heads = PerLayerBlockDescriptor.headsPerRank(group.kvHeads(), rank.tpSize());
            pageBytes[i] = PerLayerBlockDescriptor.blockBytes(heads, kernelTokens, group.headSize(), elementBytes);
        }
        List<Allocation> allocations = new ArrayList<>();
        List<Region> regions = new ArrayList<>();
        if (memory.views().isEmpty()) {
            check(memory.allocations().size() == layers.size(), "per-layer needs one allocation per layer of stage %d: got %d allocations for %d layers "
                    + "(%s .. %s); pass one allocation per layer in model order, or layer views", rank.ppRank(), memory.allocations().size(), layers.size(),
                    layers.getFirst().name(), layers.getLast().name());
            for (int i = 0; i < layers.size(); i++) {
                Allocation allocation = memory.allocations().get(i);
                int capacity = PerLayerBlockDescriptor.checkCapacity(layers.get(i).name(), allocation.bytes(), pageBytes[i]);
                allocations.add(allocation);
                regions.add(region(layers.get(i), allocation, allocation.address(), pageBytes[i], pageBytes[i], capacity));
            }
        }
        else {
            check(memory.views().size() == layers.size(), "per-layer needs one view per layer of stage %d: got %d views for %d layers",
                    rank.ppRank(), memory.views().size(), layers.size());
            for (int i = 0; i < layers.size(); i++) {
                LayerSpec layer = layers.get(i);
                LayerView view = memory.views().get(i);
                check(view.layer().equals(layer.name()), "view %d is of layer %s but layer %d of stage %d is %s; give views in model order",
                        i, view.layer(), i, rank.ppRank(), layer.name());
                check(view.blockBytes() == pageBytes[i], "layer %s: view blockBytes=%d but the spec gives %d (kvHeads/tpSize x %d tokens x 2 x headSize x %d bytes); "
                        + "check the cache dtype, head counts and block size", layer.name(), view.blockBytes(), pageBytes[i], kernelTokens, elementBytes);
                Allocation home = memory.allocationHolding(view);
                check(!allocations.contains(home), "layer %s shares allocation %s with another layer; per-layer gives every layer its own allocation, "
                        + "use the 'hma' layout for pooled layers or 'mla' for packed ones", layer.name(), home);
                allocations.add(home);
                regions.add(region(layer, home, view.address(), view.blockBytes(), view.blockStride(), view.blocks()));
            }
        }
        return new CacheGeometry(NAME, rank, spec.identity(), kernelTokens, spec.kernelBlocksPerLogical(), spec.groups(), allocations, regions);
    }

    private Region region(LayerSpec layer, Allocation home, long base, long blockBytes, long stride, int capacity)
    {
        return new Region(layer.name(), base, blockBytes, stride, capacity, layer.groupId(), home.kind(), home.device(), order.split(),
                List.of(layer.name()), List.of());
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
