package io.kvbridge.core.engine;

import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One pipeline stage of a hybrid model in real off-heap memory, pooled as a hybrid allocator pools
 * it: pool {@code i} holds the {@code i}-th layer of each cache group the stage owns, every layer of
 * a pool uses the pool's pages, and a block id belongs to one group. Built from api records because
 * core cannot see the {@code hma} layout; a stage therefore pools differently from a whole engine.
 * Every third layer is full attention (group 0), the others sliding window (group 1).
 */
final class PooledCache
{
    static final int LAYERS = 30;
    static final long PAGE_BYTES = 128;
    static final ModelIdentity MODEL = new ModelIdentity("test/hybrid-30", "bfloat16", "bfloat16", 2, 32, LAYERS, false);
    static final List<CacheGroup> GROUPS = List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 32),
            new CacheGroup(1, GroupKind.SLIDING_WINDOW, 512, 2, 32));

    final ModelCacheSpec spec;
    final CacheGeometry geometry;
    private final Map<String, MemorySegment> poolOfLayer = new HashMap<>();
    private final List<MemorySegment> pools = new ArrayList<>();

    PooledCache(Arena arena, List<Integer> stageLayerCounts, int ppRank, int capacity)
    {
        List<LayerSpec> layers = new ArrayList<>();
        for (int l = 0; l < LAYERS; l++) {
            layers.add(new LayerSpec(name(l), l % 3 == 2 ? 0 : 1));
        }
        this.spec = new ModelCacheSpec(MODEL, 16, 1, GROUPS, layers, stageLayerCounts);
        Rank rank = new Rank(ppRank, stageLayerCounts.size(), 0, 1);
        List<List<String>> byGroup = List.of(new ArrayList<>(), new ArrayList<>());
        for (LayerSpec layer : spec.layersOwnedBy(rank)) {
            byGroup.get(layer.groupId()).add(layer.name());
        }
        int poolCount = Math.max(byGroup.get(0).size(), byGroup.get(1).size());
        List<Allocation> allocations = new ArrayList<>();
        List<Region> regions = new ArrayList<>();
        for (int i = 0; i < poolCount; i++) {
            List<String> members = new ArrayList<>();
            int group = -1;
            for (int g = 0; g < 2; g++) {
                if (i < byGroup.get(g).size()) {
                    members.add(byGroup.get(g).get(i));
                    group = members.size() == 1 ? g : -1;
                }
            }
            MemorySegment pool = arena.allocate(PAGE_BYTES * capacity, 64);
            pools.add(pool);
            members.forEach(layer -> poolOfLayer.put(layer, pool));
            allocations.add(new Allocation(pool.address(), pool.byteSize(), MemoryKind.HOST, 0));
            regions.add(new Region("pool." + i, pool.address(), PAGE_BYTES, PAGE_BYTES, capacity, group, MemoryKind.HOST, 0, SplitClass.SPLIT, members,
                    List.of()));
        }
        this.geometry = new CacheGeometry("test-pools", rank, MODEL, 16, 1, GROUPS, allocations, regions);
    }

    static String name(int layer)
    {
        return "model.layers." + layer + ".attn";
    }

    static int groupOf(int layer)
    {
        return layer % 3 == 2 ? 0 : 1;
    }

    static byte expected(int request, int layer, int position, long offset)
    {
        return (byte) (request * 31 + layer * 7 + position * 131 + offset * 13 + 1);
    }

    /** What to do with one page of a request: the pool, the layer, the block's position in the request, its block id. */
    @FunctionalInterface
    private interface PageAction
    {
        void apply(MemorySegment pool, int layer, int position, int block);
    }

    /** Visits the request's pages of every layer this stage holds; {@code ids[g]} are group g's blocks. */
    private void forEachPage(int[][] ids, PageAction action)
    {
        forEachPage(ids, new int[ids.length], action);
    }

    /** As above, block {@code p} of group g holding the request's position {@code firstPosition[g] + p}. */
    private void forEachPage(int[][] ids, int[] firstPosition, PageAction action)
    {
        for (int l = 0; l < LAYERS; l++) {
            MemorySegment pool = poolOfLayer.get(name(l));
            if (pool == null) {
                continue;
            }
            int[] blocks = ids[groupOf(l)];
            for (int position = 0; position < blocks.length; position++) {
                action.apply(pool, l, firstPosition[groupOf(l)] + position, blocks[position]);
            }
        }
    }

    /** Writes request {@code request} into the pages of every layer this stage holds. */
    void fill(int request, int[][] ids)
    {
        forEachPage(ids, (pool, layer, position, block) -> {
            for (long o = 0; o < PAGE_BYTES; o++) {
                pool.set(ValueLayout.JAVA_BYTE, block * PAGE_BYTES + o, expected(request, layer, position, o));
            }
        });
    }

    /**
     * Checks every page: a page of a request's block holds that request's bytes for the layer whose
     * group owns the block; every other page is still zero.
     *
     * @return the number of wrong bytes (0 when all are right).
     */
    long mismatches(int request, int[][] ids)
    {
        return mismatches(request, ids, new int[ids.length]);
    }

    /** As {@link #mismatches(int, int[][])}, block {@code p} of group g holding the request's position {@code firstPosition[g] + p}. */
    long mismatches(int request, int[][] ids, int[] firstPosition)
    {
        long wrong = 0;
        Map<MemorySegment, Map<Integer, Integer>> written = new HashMap<>();
        forEachPage(ids, firstPosition, (pool, layer, position, block) -> written.computeIfAbsent(pool, ignored -> new HashMap<>()).put(block, layer * 100_000 + position));
        for (MemorySegment pool : pools) {
            Map<Integer, Integer> pages = written.getOrDefault(pool, Map.of());
            for (int block = 0; block < pool.byteSize() / PAGE_BYTES; block++) {
                Integer owner = pages.get(block);
                for (long o = 0; o < PAGE_BYTES; o++) {
                    byte actual = pool.get(ValueLayout.JAVA_BYTE, block * PAGE_BYTES + o);
                    byte wanted = owner == null ? 0 : expected(request, owner / 100_000, owner % 100_000, o);
                    if (actual != wanted) {
                        wrong++;
                    }
                }
            }
        }
        return wrong;
    }
}
