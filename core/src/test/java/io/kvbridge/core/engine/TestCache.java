package io.kvbridge.core.engine;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.api.BlockIds;
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
import java.util.List;
import java.util.Set;

/**
 * One rank's KV cache in real off-heap memory: one allocation and one region per layer the rank's
 * stage owns. A layer listed in {@code deviceLayers} is declared device memory (host-backed, for the
 * {@code local} transport's simulate-device mode). A layer listed in {@code latentLayers} of an
 * attention model is an MLA layer of a second cache group (group 1, replicated), as in a model
 * mixing MLA with ordinary attention. Bytes are derived from (request, layer, position
 * of the block in the request, byte offset in the whole block across tensor-parallel ranks), so a
 * misplaced, missing or stale byte is found.
 */
final class TestCache
{
    static final int KV_HEADS = 4;
    static final int HEAD_BYTES = 64;

    final CacheGeometry geometry;
    final ModelCacheSpec spec;
    final List<MemorySegment> layers = new ArrayList<>();
    final long rankBlockBytes;
    final boolean mla;
    // per owned layer: whether it is replicated (MLA), and its bytes per block on this rank
    private final List<Boolean> latent = new ArrayList<>();
    private final List<Long> layerBlockBytes = new ArrayList<>();

    /**
     * {@code groupOfLayer} empty: one cache group; else layer l belongs to full-attention group {@code groupOfLayer[l]} of {@code groups}.
     * {@code latentLayers} become MLA layers of one more group, after the attention groups.
     */
    record Shape(int layers, List<Integer> stageLayerCounts, int capacity, boolean mla, Set<Integer> deviceLayers, int groups,
            List<Integer> groupOfLayer, Set<Integer> latentLayers)
    {
        static Shape of(int layers, int capacity, boolean mla)
        {
            return new Shape(layers, List.of(layers), capacity, mla, Set.of(), 1, List.of(), Set.of());
        }

        Shape stages(Integer... counts)
        {
            return new Shape(layers, List.of(counts), capacity, mla, deviceLayers, groups, groupOfLayer, latentLayers);
        }

        Shape onDevice(Integer... deviceLayerIndices)
        {
            return new Shape(layers, stageLayerCounts, capacity, mla, Set.of(deviceLayerIndices), groups, groupOfLayer, latentLayers);
        }

        Shape groups(int count, Integer... groupOfEachLayer)
        {
            return new Shape(layers, stageLayerCounts, capacity, mla, deviceLayers, count, List.of(groupOfEachLayer), latentLayers);
        }

        /** The given layers of an attention model become MLA layers of a group of their own. */
        Shape withLatent(Integer... latentLayerIndices)
        {
            return new Shape(layers, stageLayerCounts, capacity, false, deviceLayers, groups, groupOfLayer, Set.of(latentLayerIndices));
        }

        int groupOf(int layer)
        {
            if (latentLayers.contains(layer)) {
                return groups;
            }
            return groupOfLayer.isEmpty() ? 0 : groupOfLayer.get(layer);
        }
    }

    TestCache(Arena arena, Shape shape, Rank rank)
    {
        this.mla = shape.mla();
        ModelIdentity identity = new ModelIdentity("test/engine-" + shape.layers(), "bfloat16", "bfloat16", mla ? 1 : KV_HEADS, HEAD_BYTES / 2,
                shape.layers(), false);
        List<CacheGroup> groups = new ArrayList<>();
        for (int g = 0; g < shape.groups(); g++) {
            groups.add(mla ? new CacheGroup(g, GroupKind.MLA, 0, 1, HEAD_BYTES / 2) : new CacheGroup(g, GroupKind.FULL_ATTENTION, 0, KV_HEADS,
                    HEAD_BYTES / 2));
        }
        if (!shape.latentLayers().isEmpty()) {
            groups.add(new CacheGroup(shape.groups(), GroupKind.MLA, 0, 1, HEAD_BYTES / 2));
        }
        List<LayerSpec> specs = new ArrayList<>();
        for (int l = 0; l < shape.layers(); l++) {
            specs.add(new LayerSpec(layerName(l), shape.groupOf(l)));
        }
        ModelCacheSpec spec = new ModelCacheSpec(identity, 16, 1, groups, specs, shape.stageLayerCounts());
        this.spec = spec;
        this.rankBlockBytes = mla ? HEAD_BYTES : (long) Math.max(1, KV_HEADS / rank.tpSize()) * HEAD_BYTES;
        List<Allocation> allocations = new ArrayList<>();
        List<Region> regions = new ArrayList<>();
        int start = spec.stageStart(rank.ppRank());
        for (LayerSpec layer : spec.layersOwnedBy(rank)) {
            int index = specs.indexOf(layer);
            boolean replicated = mla || shape.latentLayers().contains(index);
            long blockBytes = replicated ? HEAD_BYTES : rankBlockBytes;
            latent.add(replicated);
            layerBlockBytes.add(blockBytes);
            MemorySegment segment = arena.allocate(blockBytes * shape.capacity(), 64);
            layers.add(segment);
            MemoryKind kind = shape.deviceLayers().contains(index) ? MemoryKind.DEVICE : MemoryKind.HOST;
            allocations.add(new Allocation(segment.address(), segment.byteSize(), kind, 0));
            regions.add(new Region(layer.name(), segment.address(), blockBytes, blockBytes, shape.capacity(), layer.groupId(), kind, 0,
                    replicated ? SplitClass.REPLICATE : SplitClass.SPLIT, List.of(layer.name()), List.of()));
        }
        this.firstLayer = start;
        this.geometry = new CacheGeometry("per-layer", rank, identity, 16, 1, groups, allocations, regions);
    }

    private final int firstLayer;

    static String layerName(int layer)
    {
        return "model.layers." + layer + ".self_attn";
    }

    private long rankOffset(int layer)
    {
        return latent.get(layer) ? 0 : rankBlockBytes * geometry.rank().tpRank();
    }

    static byte expected(int seed, int layer, int position, long offset)
    {
        return (byte) (seed * 31 + layer * 7 + position * 131 + offset * 13 + 1);
    }

    /** Writes the bytes of request {@code seed} into its blocks on this rank. */
    void fill(int seed, int[] blocks)
    {
        fill(seed, 0, blocks);
    }

    /** Writes the bytes of positions {@code firstPosition, firstPosition + 1, ...} of request {@code seed} into the blocks, as a decoder appends rows. */
    void fill(int seed, int firstPosition, int[] blocks)
    {
        for (int l = 0; l < layers.size(); l++) {
            long blockBytes = layerBlockBytes.get(l);
            for (int position = 0; position < blocks.length; position++) {
                long base = (long) blocks[position] * blockBytes;
                for (long o = 0; o < blockBytes; o++) {
                    layers.get(l).set(ValueLayout.JAVA_BYTE, base + o, expected(seed, firstLayer + l, firstPosition + position, rankOffset(l) + o));
                }
            }
        }
    }

    /** Checks that the blocks hold the last {@code blocks.length} positions of a request of {@code producerBlocks} blocks. */
    void check(int seed, int[] blocks, int producerBlocks)
    {
        int skipped = producerBlocks - blocks.length;
        for (int l = 0; l < layers.size(); l++) {
            long blockBytes = layerBlockBytes.get(l);
            for (int position = 0; position < blocks.length; position++) {
                long base = (long) blocks[position] * blockBytes;
                for (long o = 0; o < blockBytes; o++) {
                    byte actual = layers.get(l).get(ValueLayout.JAVA_BYTE, base + o);
                    byte wanted = expected(seed, firstLayer + l, skipped + position, rankOffset(l) + o);
                    if (actual != wanted) {
                        assertEquals(wanted, actual, "request " + seed + " layer " + (firstLayer + l) + " block " + blocks[position] + " offset " + o);
                    }
                }
            }
        }
    }

    /** {@return whether one layer (of this rank's, counted from 0) holds the last {@code blocks.length} positions of a request of {@code producerBlocks} blocks} */
    boolean layerHolds(int layer, int seed, int[] blocks, int producerBlocks)
    {
        int skipped = producerBlocks - blocks.length;
        long blockBytes = layerBlockBytes.get(layer);
        for (int position = 0; position < blocks.length; position++) {
            long base = (long) blocks[position] * blockBytes;
            for (long o = 0; o < blockBytes; o++) {
                if (layers.get(layer).get(ValueLayout.JAVA_BYTE, base + o) != expected(seed, firstLayer + layer, skipped + position, rankOffset(layer) + o)) {
                    return false;
                }
            }
        }
        return true;
    }

    /** {@return whether no byte of one layer's blocks was written since {@link #clear}} */
    boolean layerZero(int layer, int[] blocks)
    {
        long blockBytes = layerBlockBytes.get(layer);
        for (int block : blocks) {
            if (layers.get(layer).asSlice((long) block * blockBytes, blockBytes).mismatch(MemorySegment.ofArray(new byte[(int) blockBytes])) != -1) {
                return false;
            }
        }
        return true;
    }

    /** Checks that nothing was written into the blocks since {@link #clear}. */
    void checkZero(int[] blocks)
    {
        for (int l = 0; l < layers.size(); l++) {
            long blockBytes = layerBlockBytes.get(l);
            for (int block : blocks) {
                MemorySegment bytes = layers.get(l).asSlice((long) block * blockBytes, blockBytes);
                long written = bytes.mismatch(MemorySegment.ofArray(new byte[(int) blockBytes]));
                assertEquals(-1, written, "layer " + (firstLayer + l) + " block " + block + " was written at offset " + written);
            }
        }
    }

    /** {@return whether every byte is still zero: nothing was written since {@link #clear} or the allocation} */
    boolean untouched()
    {
        for (MemorySegment segment : layers) {
            if (segment.mismatch(MemorySegment.ofArray(new byte[(int) segment.byteSize()])) != -1) {
                return false;
            }
        }
        return true;
    }

    /** Zeroes every byte, so a test sees what a transfer wrote. */
    void clear()
    {
        for (MemorySegment segment : layers) {
            segment.fill((byte) 0);
        }
    }

    static BlockIds ids(int... blocks)
    {
        return BlockIds.of(blocks);
    }

    /** The same block ids for every cache group of this cache. */
    BlockIds idsPerGroup(int... blocks)
    {
        int[][] groups = new int[geometry.groups().size()][];
        java.util.Arrays.fill(groups, blocks);
        return BlockIds.of(groups);
    }
}
