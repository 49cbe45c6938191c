package io.kvbridge.examples.demo;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.KvBridge;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The ranks of one engine that one process hosts (every stage, or one pipeline stage when stages run
 * in processes of their own): each rank's cache in off-heap host memory, described by the real layout
 * found through the plugin registry. Block ids come from the engine's {@link BlockPool}.
 */
final class DemoEngine
{
    private static final ValueLayout.OfLong WORD = ValueLayout.JAVA_LONG_UNALIGNED;

    final String name;
    final DemoModel model;
    final ModelCacheSpec spec;
    final int ppSize;
    final int tpSize;
    final int capacity;
    final List<CacheGeometry> ranks = new ArrayList<>();
    private final TreeMap<Long, MemorySegment> memory = new TreeMap<>();
    private final Map<String, Integer> layerIndex = new HashMap<>();

    /**
     * @param stages the pipeline stages this process hosts, each with all its tensor-parallel ranks.
     */
    DemoEngine(String name, DemoModel model, KvBridge bridge, Arena arena, int ppSize, int tpSize, int capacity, List<Integer> stages)
    {
        this.name = name;
        this.model = model;
        this.spec = model.spec(ppSize);
        this.ppSize = ppSize;
        this.tpSize = tpSize;
        this.capacity = capacity;
        CacheLayout layout = bridge.layout(model.layout(), Map.of());
        long page = model.pageBytes(tpSize);
        for (int pp : stages) {
            for (int tp = 0; tp < tpSize; tp++) {
                Rank rank = new Rank(pp, ppSize, tp, tpSize);
                int owned = spec.layersOwnedBy(rank).size();
                List<Allocation> allocations = new ArrayList<>();
                int count;
                long bytes;
                switch (model.layout()) {
                    case "hma" -> {
                        int full = (int) spec.layersOwnedBy(rank).stream().filter(layer -> layer.groupId() == 0).count();
                        count = Math.max(full, owned - full);
                        bytes = capacity * page;
                    }
                    case "mla" -> {
                        // packed: every layer of the stage in one row per block
                        count = 1;
                        bytes = capacity * page * owned;
                    }
                    default -> {
                        count = owned;
                        bytes = capacity * page;
                    }
                }
                for (int a = 0; a < count; a++) {
                    MemorySegment segment = arena.allocate(bytes, 4096);
                    memory.put(segment.address(), segment);
                    allocations.add(Allocation.host(segment));
                }
                ranks.add(layout.describe(spec, CacheMemory.of(allocations), rank));
            }
        }
        for (int i = 0; i < spec.layers().size(); i++) {
            layerIndex.put(spec.layers().get(i).name(), i);
        }
    }

    ConnectorSettings settings(CacheGeometry rank)
    {
        return ConnectorSettings.builder(name, rank).cacheSpec(spec).build();
    }

    /** What one page of one rank does with the request's words. */
    @FunctionalInterface
    interface PageVisitor
    {
        /** Returns the wrong words found (0 when writing). */
        long visit(MemorySegment page, int layer, int promptBlock, long globalOffset);
    }

    /**
     * Visits every page of the request on every rank: for each layer, the page at each of its
     * group's block ids, with the block's position in the prompt and the page's offset in the whole
     * layer block across tensor-parallel ranks (a head-split page is one contiguous slice of it).
     */
    long forEachPage(int promptBlocks, int[][] ids, PageVisitor visitor)
    {
        long result = 0;
        for (CacheGeometry rank : ranks) {
            for (Region region : rank.regions()) {
                for (int m = 0; m < region.members().size(); m++) {
                    String layer = region.members().get(m);
                    int index = layerIndex.get(layer);
                    int group = spec.layers().get(index).groupId();
                    long offset = 0;
                    long bytes = region.blockBytes();
                    if (region.packed()) {
                        PackedMember member = region.packedMembers().get(m);
                        offset = member.offset();
                        bytes = member.pageBytes();
                    }
                    long slice = region.split() == SplitClass.REPLICATE ? 0 : rank.rank().tpRank() * bytes;
                    int[] blocks = ids[group];
                    int first = promptBlocks - blocks.length;
                    for (int j = 0; j < blocks.length; j++) {
                        long address = region.base() + blocks[j] * region.stride() + offset;
                        result += visitor.visit(at(address, bytes), index, first + j, slice);
                    }
                }
            }
        }
        return result;
    }

    private MemorySegment at(long address, long length)
    {
        Map.Entry<Long, MemorySegment> home = memory.floorEntry(address);
        return home.getValue().asSlice(address - home.getKey(), length);
    }

    /** The 8 bytes at a word of a layer's block, derived from (request, layer, token block, offset). */
    static long word(int request, int layer, int promptBlock, long offset)
    {
        long x = (long) request * 0x9E3779B97F4A7C15L ^ (long) layer * 0xC2B2AE3D27D4EB4FL ^ (long) promptBlock * 0x165667B19E3779F9L ^ offset;
        x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
        x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
        return x ^ (x >>> 31);
    }

    static long fill(MemorySegment page, int request, int layer, int promptBlock, long globalOffset)
    {
        for (long o = 0; o < page.byteSize(); o += 8) {
            page.set(WORD, o, word(request, layer, promptBlock, globalOffset + o));
        }
        return 0;
    }

    /** Counts the bytes of a page that differ from the request's content. */
    static long check(MemorySegment page, int request, int layer, int promptBlock, long globalOffset)
    {
        long wrong = 0;
        for (long o = 0; o < page.byteSize(); o += 8) {
            long difference = page.get(WORD, o) ^ word(request, layer, promptBlock, globalOffset + o);
            if (difference != 0) {
                for (int b = 0; b < 8; b++) {
                    wrong += (difference >>> (8 * b) & 0xFF) != 0 ? 1 : 0;
                }
            }
        }
        return wrong;
    }

    /** Counts the non-zero bytes of all memory: after every request was checked and wiped, none may remain. */
    long nonZeroBytes()
    {
        long wrong = 0;
        for (MemorySegment segment : memory.values()) {
            long size = segment.byteSize();
            for (long o = 0; o < size; o += 8) {
                long value = segment.get(WORD, o);
                if (value != 0) {
                    wrong += Long.bitCount((value | value >>> 1 | value >>> 2 | value >>> 3 | value >>> 4 | value >>> 5 | value >>> 6 | value >>> 7)
                            & 0x0101010101010101L);
                }
            }
        }
        return wrong;
    }

    long totalBytes()
    {
        long total = 0;
        for (MemorySegment segment : memory.values()) {
            total += segment.byteSize();
        }
        return total;
    }
}
