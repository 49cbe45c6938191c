package io.kvbridge.layout.hma;

import static java.util.Objects.requireNonNull;

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
import io.kvbridge.spi.geometry.StridedBlocks;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Attention models whose full-attention and sliding-window groups share pools, as a hybrid memory
 * allocator lays them out (see {@link HmaPoolDescriptor}): one region per pool, holding the pool's
 * member layers, advertising its group (or -1 when several groups overlay it) and its own capacity.
 *
 * <p>Without layer views, the stage's layers are pooled by the allocator's rule (layer {@code i} of
 * every group in pool {@code i}) and allocation {@code i} is pool {@code i}. With views, layers
 * whose views start at the same address share a pool, whatever rule the engine used; regions then
 * follow the first appearance of their pool in model order.
 *
 * <p>Sliding-window groups exchange only the blocks their window spans: the interface's default
 * {@link CacheLayout#exchangedBlocks}, which is {@link io.kvbridge.spi.layout.SlidingWindow#exchangedBlocks}.
 */
final class HmaCacheLayout implements CacheLayout
{
    static final String NAME = "hma";

    @Override
    public String name()
    {
        return NAME;
    }

    @Override
    public CacheGeometry describe(ModelCacheSpec spec, CacheMemory memory, Rank rank)
    {
        requireNonNull(spec, "spec is null");
        requireNonNull(memory, "memory is null");
        List<LayerSpec> owned = spec.layersOwnedBy(rank);
        int kernelTokens = spec.kernelBlockTokens();
        long[] pagePerGroup = new long[spec.groups().size()];
        // attention layers pool by the allocator's rule; state layers keep one state region each
        List<LayerSpec> layers = new ArrayList<>();
        List<LayerSpec> states = new ArrayList<>();
        List<LayerView> views = new ArrayList<>();
        List<LayerView> stateViews = new ArrayList<>();
        check(memory.views().isEmpty() || memory.views().size() == owned.size(),
                "%d layer views given for the %d layers this stage owns; give one view per layer in model order", memory.views().size(), owned.size());
        for (int i = 0; i < owned.size(); i++) {
            LayerSpec layer = owned.get(i);
            CacheGroup group = spec.groups().get(layer.groupId());
            check(group.kind() == GroupKind.FULL_ATTENTION || group.kind() == GroupKind.SLIDING_WINDOW || group.stateful(),
                    "layer %s belongs to %s group %d; hma pools full-attention and sliding-window groups beside Mamba state groups, use the 'mla' "
                            + "layout for MLA", layer.name(), group.kind(), group.id());
            if (!memory.views().isEmpty()) {
                LayerView view = memory.views().get(i);
                check(view.layer().equals(layer.name()), "view %d is of layer %s but layer %d of the stage is %s; give views in model order",
                        i, view.layer(), i, layer.name());
                (group.stateful() ? stateViews : views).add(view);
            }
            if (group.stateful()) {
                group.checkStateSplits(layer.name(), rank.tpSize());
                states.add(layer);
                continue;
            }
            int heads = HmaPoolDescriptor.headsPerRank(group.kvHeads(), rank.tpSize());
            pagePerGroup[group.id()] = HmaPoolDescriptor.pageBytes(heads, kernelTokens, group.headSize(), spec.identity().cacheElementBytes());
            layers.add(layer);
        }
        int[] groupIds = layers.stream().mapToInt(LayerSpec::groupId).toArray();
        long pageBytes = HmaPoolDescriptor.checkUniformPageBytes(pagePerGroup);
        List<Pool> pools = memory.views().isEmpty()
                ? poolsByAllocatorRule(layers, groupIds, memory.allocations().subList(0, Math.max(0, memory.allocations().size() - states.size())),
                        pageBytes, rank)
                : poolsFromViews(layers, views, memory, pageBytes);
        List<Allocation> allocations = new ArrayList<>();
        List<Region> regions = new ArrayList<>();
        for (Pool pool : pools) {
            if (!allocations.contains(pool.home())) {
                allocations.add(pool.home());
            }
            Set<Integer> groups = new HashSet<>();
            List<String> members = new ArrayList<>();
            for (LayerSpec member : pool.members()) {
                groups.add(member.groupId());
                members.add(member.name());
            }
            int groupId = groups.size() == 1 ? groups.iterator().next() : HmaPoolDescriptor.SHARED_GROUP;
            regions.add(new Region(members.getFirst(), pool.base(), pageBytes, pool.stride(), pool.capacity(), groupId, pool.home().kind(),
                    pool.home().device(), SplitClass.SPLIT, members, List.of()));
        }
        for (int s = 0; s < states.size(); s++) {
            LayerSpec layer = states.get(s);
            CacheGroup group = spec.groups().get(layer.groupId());
            long stateBytes = group.stateBytes(rank.tpSize());
            Allocation home;
            Region region;
            if (memory.views().isEmpty()) {
                home = memory.allocations().get(memory.allocations().size() - states.size() + s);
                region = new Region(layer.name(), home.address(), stateBytes, stateBytes, HmaPoolDescriptor.checkStateCapacity(layer.name(), home.bytes(),
                        stateBytes), group.id(), home.kind(), home.device(), SplitClass.SPLIT, List.of(layer.name()), List.of());
            }
            else {
                LayerView view = stateViews.get(s);
                check(view.blockBytes() == stateBytes, "layer %s: state view blockBytes=%d but group %d gives %d = %s at tpSize=%d; check the state dtypes, "
                        + "heads, state size and convolution width", layer.name(), view.blockBytes(), group.id(), stateBytes, group.describeState(rank.tpSize()),
                        rank.tpSize());
                home = memory.allocationHolding(view);
                region = new Region(layer.name(), view.address(), stateBytes, view.blockStride(), view.blocks(), group.id(), home.kind(), home.device(),
                        SplitClass.SPLIT, List.of(layer.name()), List.of());
            }
            if (!allocations.contains(home)) {
                allocations.add(home);
            }
            for (Region other : regions) {
                KvBridgeException.check(!region.sharesBytesWith(other), ErrorCode.GEOMETRY_INVALID, "state of layer %s [0x%x, +%d every %d bytes) shares bytes "
                        + "with region %s; a state needs pages of its own", layer.name(), region.base(), stateBytes, region.stride(), other.name());
            }
            regions.add(region);
        }
        return new CacheGeometry(NAME, rank, spec.identity(), kernelTokens, spec.kernelBlocksPerLogical(), spec.groups(), allocations, regions);
    }

    /** A pool: its member layers in model order, where its page 0 lies, and how many pages it has. */
    private record Pool(List<LayerSpec> members, Allocation home, long base, long stride, int capacity)
    {
    }

    private static List<Pool> poolsByAllocatorRule(List<LayerSpec> layers, int[] groupIds, List<Allocation> allocations, long pageBytes, Rank rank)
    {
        int[] poolOf = HmaPoolDescriptor.poolIndices(groupIds);
        int poolCount = HmaPoolDescriptor.poolCount(poolOf);
        check(allocations.size() == poolCount, "stage %d pools its %d attention layers into %d pools (layer i of every group shares pool i) but %d "
                + "allocations were given for them; pass one allocation per pool in pool order, then one per state layer, or layer views", rank.ppRank(),
                layers.size(), poolCount, allocations.size());
        List<Pool> pools = new ArrayList<>();
        for (int p = 0; p < poolCount; p++) {
            List<LayerSpec> members = new ArrayList<>();
            for (int i = 0; i < layers.size(); i++) {
                if (poolOf[i] == p) {
                    members.add(layers.get(i));
                }
            }
            Allocation home = allocations.get(p);
            pools.add(new Pool(members, home, home.address(), pageBytes, HmaPoolDescriptor.checkCapacity(p, home.bytes(), pageBytes)));
        }
        return pools;
    }

    private static List<Pool> poolsFromViews(List<LayerSpec> layers, List<LayerView> views, CacheMemory memory, long pageBytes)
    {
        Map<Long, List<LayerSpec>> membersByBase = new LinkedHashMap<>();
        Map<Long, LayerView> viewByBase = new LinkedHashMap<>();
        for (int i = 0; i < layers.size(); i++) {
            LayerSpec layer = layers.get(i);
            LayerView view = views.get(i);
            check(view.blockBytes() == pageBytes, "layer %s: view blockBytes=%d but the groups' page is %d bytes; check the cache dtype, heads and block size",
                    layer.name(), view.blockBytes(), pageBytes);
            LayerView first = viewByBase.putIfAbsent(view.address(), view);
            if (first != null) {
                KvBridgeException.check(first.blockStride() == view.blockStride() && first.blocks() == view.blocks(), ErrorCode.GEOMETRY_INVALID,
                        "layers %s and %s share pool 0x%x but disagree on it: blockStride=%d vs %d, blocks=%d vs %d; layers of one pool must view it identically",
                        first.layer(), view.layer(), view.address(), first.blockStride(), view.blockStride(), first.blocks(), view.blocks());
            }
            membersByBase.computeIfAbsent(view.address(), base -> new ArrayList<>()).add(layer);
        }
        List<Pool> pools = new ArrayList<>();
        for (Map.Entry<Long, LayerView> entry : viewByBase.entrySet()) {
            LayerView view = entry.getValue();
            Allocation home = memory.allocationHolding(view);
            for (Pool other : pools) {
                // pools may interleave inside one allocation (a block-major cache), as long as no byte is shared
                KvBridgeException.check(!StridedBlocks.shareBytes(view.address(), pageBytes, view.blockStride(), view.blocks(), other.base(), pageBytes,
                                other.stride(), other.capacity()), ErrorCode.GEOMETRY_INVALID,
                        "pool of layer %s [0x%x, +%d every %d bytes) shares bytes with pool of layer %s [0x%x, +%d every %d bytes); layers of one pool must "
                                + "view the same address", view.layer(), view.address(), pageBytes, view.blockStride(), other.members().getFirst().name(),
                        other.base(), pageBytes, other.stride());
            }
            pools.add(new Pool(membersByBase.get(entry.getKey()), home, view.address(), view.blockStride(), view.blocks()));
        }
        return pools;
    }

    /**
     * Pools are shared by groups and addressed by each group's block ids, so peers need equal
     * physical blocks and equal groups. Pooling may differ only when a side is split into pipeline
     * stages: layers are then paired by name.
     */
    @Override
    public Optional<String> incompatibility(CacheGeometry local, CacheGeometry peer)
    {
        requireNonNull(local, "local is null");
        requireNonNull(peer, "peer is null");
        if (local.blockTokens() != peer.blockTokens()) {
            return Optional.of(String.format(Locale.ROOT, "hma pools are addressed by group block ids, so physical blocks must match: local blockTokens=%d, "
                    + "peer blockTokens=%d; configure the same block size on both engines", local.blockTokens(), peer.blockTokens()));
        }
        if (!local.groups().equals(peer.groups())) {
            return Optional.of("hma peers must have the same cache groups (block ids are per group): local " + local.groups() + ", peer " + peer.groups());
        }
        if (local.rank().ppSize() == 1 && peer.rank().ppSize() == 1) {
            List<List<String>> localPools = local.regions().stream().map(Region::members).toList();
            List<List<String>> peerPools = peer.regions().stream().map(Region::members).toList();
            if (!localPools.equals(peerPools)) {
                return Optional.of("both engines run one pipeline stage, so regions pair by position, but they pool layers differently: local "
                        + localPools + ", peer " + peerPools + "; let both engines pool by the same rule");
            }
        }
        return Optional.empty();
    }

    private static void check(boolean condition, String format, Object... args)
    {
        KvBridgeException.check(condition, ErrorCode.LAYOUT_UNSUPPORTED, format, args);
    }
}
