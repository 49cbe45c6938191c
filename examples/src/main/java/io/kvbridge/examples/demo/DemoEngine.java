package io.kvbridge.examples.demo;

import io.kvbridge.api.ConnectorSettings;
import io.kvbridge.api.KvBridge;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.LayerSpec;
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
    DemoEngine(String name, DemoModel model, KvBridge bridge, EngineMemory memory, int ppSize, int tpSize, int capacity, int stateCapacity,
            DemoOptions.CacheShape shape, List<Integer> stages)
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
                List<LayerSpec> stage = spec.layersOwnedBy(rank);
                List<Allocation> allocations = new ArrayList<>();
                for (long bytes : allocationBytes(stage, page, capacity, stateCapacity)) {
                    allocations.add(memory.allocate(bytes));
                }
                ranks.add(layout.describe(spec, CacheMemory.of(allocations), rank));
            }
        }
        for (int i = 0; i < spec.layers().size(); i++) {
            layerIndex.put(spec.layers().get(i).name(), i);
        }
    }

    /**
     * The allocations one rank's layout expects, in its order: for {@code hma} the pools (with Mamba
     * layers the attention layers only), then one per state layer; for {@code mla} one packed row per
     * block; for {@code per-layer} one per layer, or one row of every layer's page per block. A Mamba
     * layer's own allocation holds {@code stateCapacity} states (its group's free list); in a
     * cross-layer row it has a state in every row.
     */
    private List<Long> allocationBytes(List<LayerSpec> stage, long page, int capacity, int stateCapacity)
    {
        List<Long> sizes = new ArrayList<>();
        switch (model.layout()) {
            case "hma" -> {
                int full = (int) stage.stream().filter(layer -> layer.groupId() == 0).count();
                int pools = model.stateful() ? full : Math.max(full, stage.size() - full);
                for (int pool = 0; pool < pools; pool++) {
                    sizes.add(capacity * page);
                }
                for (LayerSpec layer : stage) {
                    if (model.groups().get(layer.groupId()).stateful()) {
                        sizes.add(stateCapacity * layerPage(layer, page));
                    }
                }
            }
            case "mla" -> sizes.add(capacity * page * stage.size());
            default -> {
                if (shape.placement().equals("cross-layer")) {
                    sizes.add(capacity * stage.stream().mapToLong(layer -> layerPage(layer, page)).sum());
                }
                else {
                    stage.forEach(layer -> sizes.add((model.groups().get(layer.groupId()).stateful() ? stateCapacity : capacity) * layerPage(layer, page)));
                }
            }
        }
        return sizes;
    }

    /** Bytes of one block of a layer on one rank: its page, or its state for a Mamba layer. */
    private long layerPage(LayerSpec layer, long page)
    {
        CacheGroup group = model.groups().get(layer.groupId());
        return group.stateful() ? group.stateBytes(tpSize) : page;
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
     * @param component for a Mamba layer's page, the index of the state component it holds (a page is
     *     this rank's share of one component of the request's state); -1 for KV.
     * @param firstStateByte for a state component's page, the index of its first byte in the whole
     *     component over all tensor-parallel ranks (units of the split dimension are outermost, so a
     *     rank's share is contiguous).
     */
    record Page(int layer, KvPart part, int firstToken, int tokens, int firstHead, int heads, boolean headsOutermost, long contentBytes, int component,
            long firstStateByte)
    {
        /** A page of KV. */
        Page(int layer, KvPart part, int firstToken, int tokens, int firstHead, int heads, boolean headsOutermost, long contentBytes)
        {
            this(layer, part, firstToken, tokens, firstHead, heads, headsOutermost, contentBytes, -1, 0);
        }

        /** This rank's share of one component of a Mamba layer's state, which the prompt's first token already writes. */
        static Page state(int layer, int component, long firstStateByte)
        {
            return new Page(layer, KvPart.JOINT, 0, 1, 0, 1, true, 1, component, firstStateByte);
        }

        /** @return whether the page holds state rather than KV. */
        boolean state()
        {
            return component >= 0;
        }

        /** The content of the word at a byte offset of the page. */
        long word(int request, long offset)
        {
            if (state()) {
                // derived from (request, layer, component, byte index in the whole component); layerPart apart from every KV layer's
                return DemoEngine.word(request, ~((long) layer << 8 | component), 0, firstStateByte + offset);
            }
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
            if (state()) {
                return 0;
            }
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
        return forEachPage(promptBlocks, ids, access, -1, visitor);
    }

    /**
     * As {@link #forEachPage(int, int[][], EngineMemory.Access, PageVisitor)}, the pages of one layer
     * only, or of every layer when {@code onlyLayer} is -1: a streamed prefill fills a layer at a time.
     */
    long forEachPage(int promptBlocks, int[][] ids, EngineMemory.Access access, int onlyLayer, PageVisitor visitor)
    {
        int count = 0;
        long[] addresses = new long[256];
        long[] lengths = new long[256];
        List<Page> pages = new ArrayList<>();
        int perLogical = spec.kernelBlocksPerLogical();
        int kernelTokens = spec.kernelBlockTokens();
        for (CacheGeometry rank : ranks) {
            for (Region region : rank.regions()) {
                CacheGroup stateGroup = spec.groups().get(region.groupId() < 0 ? 0 : region.groupId());
                if (region.groupId() >= 0 && stateGroup.stateful()) {
                    // one whole state per block, components back to back, each this rank's share of the component
                    int index = layerIndex.get(region.members().getFirst());
                    if (onlyLayer >= 0 && index != onlyLayer) {
                        continue;
                    }
                    int tp = rank.rank().tpSize();
                    for (int block : ids[region.groupId()]) {
                        for (int c = 0; c < stateGroup.state().size(); c++) {
                            long share = stateGroup.state().get(c).bytesPerRank(tp);
                            if (count == addresses.length) {
                                addresses = Arrays.copyOf(addresses, count * 2);
                                lengths = Arrays.copyOf(lengths, count * 2);
                            }
                            addresses[count] = region.base() + (long) block * region.stride() + stateGroup.componentOffset(c, tp);
                            lengths[count++] = share;
                            pages.add(Page.state(index, c, rank.rank().tpRank() * share));
                        }
                    }
                    continue;
                }
                for (int m = 0; m < region.members().size(); m++) {
                    String layer = region.members().get(m);
                    int index = layerIndex.get(layer);
                    if (onlyLayer >= 0 && index != onlyLayer) {
                        continue;
                    }
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
