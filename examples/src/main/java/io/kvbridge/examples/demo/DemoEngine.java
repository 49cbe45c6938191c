package io.kvbridge.examples.demo;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.KvBridge;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.PackedMember;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The ranks of one engine that one process hosts (every stage, or one pipeline stage when stages run
 * in processes of their own): each rank's cache in off-heap host memory or in device memory
 * ({@link EngineMemory}), described by the real layout found through the plugin registry. Block ids
 * come from the engine's {@link BlockPool}.
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
    final DemoOptions.CacheShape shape;
    final List<CacheGeometry> ranks = new ArrayList<>();
    private final EngineMemory memory;
    private final Map<String, Integer> layerIndex = new HashMap<>();

    /**
     * @param shape how this engine lays out its cache.
     * @param stages the pipeline stages this process hosts, each with all its tensor-parallel ranks.
     */
    DemoEngine(String name, DemoModel model, KvBridge bridge, EngineMemory memory, int ppSize, int tpSize, int capacity, DemoOptions.CacheShape shape,
            List<Integer> stages)
    {
        this.name = name;
        this.memory = memory;
        this.model = model;
        this.spec = model.spec(ppSize, shape);
        this.ppSize = ppSize;
        this.tpSize = tpSize;
        this.capacity = capacity;
        this.shape = shape;
        Map<String, String> options = model.layout().equals("per-layer") ? Map.of("kv-planes", shape.kvPlanes(), "placement", shape.placement()) : Map.of();
        CacheLayout layout = bridge.layout(model.layout(), options);
        long page = model.pageBytes(tpSize, shape.blockTokens());
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
                        boolean crossLayer = shape.placement().equals("cross-layer");
                        count = crossLayer ? 1 : owned;
                        bytes = capacity * page * (crossLayer ? owned : 1);
                    }
                }
                for (int a = 0; a < count; a++) {
                    allocations.add(memory.allocate(bytes));
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

    /**
     * Where one page of one layer sits in the model's KV: the tokens and heads it holds and how
     * they are ordered, so that both engines derive the same content for the same token and head
     * whatever their block sizes, planes and placement.
     *
     * @param layer the layer's index in the model.
     * @param part the keys, the values, or both (a plane's content differs from the other plane's).
     * @param firstToken the prompt token of the page's first token.
     * @param tokens tokens in the page.
     * @param firstHead the global index of the page's first head.
     * @param heads heads in the page.
     * @param headsOutermost whether each head's tokens are contiguous, else each token's heads.
     * @param contentBytes bytes of one token of one head in the page.
     */
    record Page(int layer, KvPart part, int firstToken, int tokens, int firstHead, int heads, boolean headsOutermost, long contentBytes)
    {
        /** The content of the word at a byte offset of the page. */
        long word(int request, long offset)
        {
            long perHead = tokens * contentBytes;
            long perToken = heads * contentBytes;
            long head = headsOutermost ? offset / perHead : offset % perToken / contentBytes;
            long token = headsOutermost ? offset % perHead / contentBytes : offset / perToken;
            long within = offset % contentBytes;
            return DemoEngine.word(request, layer * 3 + part.ordinal(), firstToken + token, ((firstHead + head) << 32) | within);
        }

        /** The prompt token of the word at a byte offset of the page. */
        long token(long offset)
        {
            return firstToken + (headsOutermost ? offset % (tokens * contentBytes) / contentBytes : offset / (heads * contentBytes));
        }
    }

    /** What one page of one rank does with the request's words. */
    @FunctionalInterface
    interface PageVisitor
    {
        /** Returns the wrong bytes found (0 when writing). */
        long visit(MemorySegment page, Page where);
    }

    /**
     * Visits every kernel block page of the request on every rank: for each layer (and plane), the
     * page at each of its group's blocks, with the tokens and heads it holds.
     *
     * @param promptBlocks scheduler blocks of the whole prompt on this engine.
     * @param ids the request's scheduler block ids per group, the last ones of the prompt.
     * @param access whether the visitor reads the pages or overwrites them.
     */
    long forEachPage(int promptBlocks, int[][] ids, EngineMemory.Access access, PageVisitor visitor)
    {
        int count = 0;
        long[] addresses = new long[256];
        long[] lengths = new long[256];
        List<Page> pages = new ArrayList<>();
        int perLogical = spec.kernelBlocksPerLogical();
        int kernelTokens = spec.kernelBlockTokens();
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
                    boolean replicated = region.split() == SplitClass.REPLICATE;
                    int heads = model.heads(tpSize);
                    int firstHead = replicated ? 0 : rank.rank().tpRank() * heads;
                    int[] blocks = ids[group];
                    int first = promptBlocks - blocks.length;
                    for (int j = 0; j < blocks.length; j++) {
                        for (int k = 0; k < perLogical; k++) {
                            long address = region.base() + ((long) blocks[j] * perLogical + k) * region.stride() + offset;
                            int firstToken = ((first + j) * perLogical + k) * kernelTokens;
                            long content = region.part().plane() ? model.tokenContentBytes() / 2 : model.tokenContentBytes();
                            if (count == addresses.length) {
                                addresses = Arrays.copyOf(addresses, count * 2);
                                lengths = Arrays.copyOf(lengths, count * 2);
                            }
                            addresses[count] = address;
                            lengths[count++] = bytes;
                            pages.add(new Page(index, region.part(), firstToken, kernelTokens, firstHead, heads, region.split() == SplitClass.SPLIT,
                                    content));
                        }
                    }
                }
            }
        }
        return memory.visit(addresses, lengths, count, access, (page, i) -> visitor.visit(page, pages.get(i)));
    }

    /** The 8 bytes of one word of the model's KV, derived from (request, layer and part, token, head and offset). */
    static long word(int request, long layerPart, long token, long headOffset)
    {
        long x = (long) request * 0x9E3779B97F4A7C15L ^ layerPart * 0xC2B2AE3D27D4EB4FL ^ token * 0x165667B19E3779F9L ^ headOffset;
        x = (x ^ (x >>> 30)) * 0xBF58476D1CE4E5B9L;
        x = (x ^ (x >>> 27)) * 0x94D049BB133111EBL;
        return x ^ (x >>> 31);
    }

    static long fill(MemorySegment page, Page where, int request)
    {
        for (long o = 0; o < page.byteSize(); o += 8) {
            page.set(WORD, o, where.word(request, o));
        }
        return 0;
    }

    /**
     * Counts the bytes of a page that differ from the request's content: tokens the producer wrote
     * ({@code writtenTokens} of the prompt) must hold it, the tokens after them must still be zero.
     */
    static long check(MemorySegment page, Page where, int request, int writtenTokens)
    {
        long wrong = 0;
        for (long o = 0; o < page.byteSize(); o += 8) {
            long expected = where.token(o) < writtenTokens ? where.word(request, o) : 0;
            long difference = page.get(WORD, o) ^ expected;
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
        return memory.nonZeroBytes();
    }

    long totalBytes()
    {
        return memory.totalBytes();
    }

    /** @return whether the cache is in device memory. */
    boolean onDevice()
    {
        return memory.onDevice();
    }
}
