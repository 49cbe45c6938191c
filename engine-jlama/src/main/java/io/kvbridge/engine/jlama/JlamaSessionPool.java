package io.kvbridge.engine.jlama;

import com.github.tjake.jlama.safetensors.Config;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.KvBufferCache;
import io.kvbridge.api.BlockIds;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayout;
import io.kvbridge.engine.jlama.layout.JlamaCacheLayoutFactory;
import io.kvbridge.engine.jlama.layout.JlamaPaging;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.UUID;

/**
 * A fixed set of Jlama sessions whose pages exist for the engine's lifetime, so that kvbridge can
 * register them once: slot {@code s} is one {@code KvBuffer} with all its pages mapped up front. A
 * request takes a slot, its blocks are the slot's token blocks, and the slot returns when kvbridge
 * says the blocks may be freed (producer) or when decoding ends (consumer).
 */
public final class JlamaSessionPool
{
    private final JlamaEngine engine;
    private final int blockTokens;
    private final String modelName;
    private final List<KvBufferCache.KvBuffer> buffers = new ArrayList<>();
    private final List<JlamaSessionPages> pages = new ArrayList<>();
    private final Deque<Integer> free = new ArrayDeque<>();

    /**
     * Creates the slots and maps their pages.
     *
     * @param engine the loaded engine.
     * @param modelName the model's name in kvbridge's identity.
     * @param slots sessions that may be in flight at once.
     * @param blockTokens tokens per kvbridge block; divides Jlama's tokens per page.
     */
    public JlamaSessionPool(JlamaEngine engine, String modelName, int slots, int blockTokens)
    {
        KvBridgeException.checkArgument(slots > 0, "slots=%d is not positive", slots);
        KvBridgeException.checkArgument(blockTokens > 0 && engine.paging().tokensPerPage() % blockTokens == 0,
                "blockTokens=%d does not divide Jlama's %d tokens per page", blockTokens, engine.paging().tokensPerPage());
        this.engine = engine;
        this.blockTokens = blockTokens;
        this.modelName = modelName;
        for (int s = 0; s < slots; s++) {
            // sessions of their own: several pools may share one engine
            KvBufferCache.KvBuffer buffer = engine.session(UUID.randomUUID());
            buffers.add(buffer);
            pages.add(JlamaSessionPages.map(buffer, engine.paging()));
            free.add(s);
        }
    }

    /**
     * Returns the layout options that describe this engine's pages.
     *
     * @return {@code layers-per-page}, {@code tokens-per-page}, {@code context-pages}.
     */
    public Map<String, String> layoutOptions()
    {
        JlamaPageGeometry g = engine.paging();
        return Map.of("layers-per-page", Integer.toString(g.layersPerPage()), "tokens-per-page", Integer.toString(g.tokensPerPage()),
                "context-pages", Integer.toString(g.contextPages()));
    }

    /**
     * Returns the layout options for serving a stage: a stage of several holds every layer in its
     * pages ({@code pages-hold=model}), of which it gives kvbridge only its own layers' span.
     *
     * @param stage the stage served.
     * @return {@link #layoutOptions()}, and {@code pages-hold=model} for a stage of several.
     */
    public Map<String, String> layoutOptions(JlamaStage stage)
    {
        Map<String, String> options = new TreeMap<>(layoutOptions());
        if (stage.ppSize() > 1) {
            options.put(JlamaCacheLayoutFactory.PAGES_HOLD, "model");
        }
        return options;
    }

    /**
     * Returns the page shape in the layout's terms.
     *
     * @return the paging.
     */
    public JlamaPaging paging()
    {
        return paging(JlamaStage.whole(engine.model().getConfig().numberOfLayers));
    }

    private JlamaPaging paging(JlamaStage stage)
    {
        JlamaPageGeometry g = engine.paging();
        return new JlamaPaging(g.layersPerPage(), g.tokensPerPage(), g.contextPages(), stage.ppSize() > 1);
    }

    /**
     * Describes the model's cache for kvbridge: one full-attention group of all layers.
     *
     * @return the spec.
     */
    public ModelCacheSpec cacheSpec()
    {
        return cacheSpec(JlamaStage.whole(engine.model().getConfig().numberOfLayers));
    }

    /**
     * Describes the model's cache for kvbridge as an engine of the stage's pipeline sees it: one
     * full-attention group of all layers, split into the stages' layer counts.
     *
     * @param stage the stage served.
     * @return the spec.
     */
    public ModelCacheSpec cacheSpec(JlamaStage stage)
    {
        Config c = engine.model().getConfig();
        KvBridgeException.check(stage.modelLayers() == c.numberOfLayers, ErrorCode.INVALID_ARGUMENT, "stage %s is of a %d-layer model but this one has %d",
                stage, stage.modelLayers(), c.numberOfLayers);
        String dtype = engine.model().getWorkingDType() == DType.BF16 ? "bfloat16" : "float32";
        int headSize = c.headSize;
        ModelIdentity identity = new ModelIdentity(modelName, dtype, dtype, c.numberOfKeyValueHeads, headSize, c.numberOfLayers, false);
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < c.numberOfLayers; i++) {
            layers.add(new LayerSpec(JlamaCacheLayout.layerName(i), 0));
        }
        return new ModelCacheSpec(identity, blockTokens, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, c.numberOfKeyValueHeads, headSize)),
                layers, stage.stageLayerCounts());
    }

    /**
     * Returns every page of every slot, in the layout's order (slot, layer page, context page).
     *
     * @return the memory.
     */
    public CacheMemory memory()
    {
        return memory(JlamaStage.whole(engine.model().getConfig().numberOfLayers));
    }

    /**
     * Returns the memory a stage gives kvbridge, in the layout's order (slot, layer page, context
     * page): every page for the whole model; for a stage of several, each page's span of the
     * stage's layers only, so that the other layers' planes are never registered.
     *
     * @param stage the stage served.
     * @return the memory.
     */
    public CacheMemory memory(JlamaStage stage)
    {
        JlamaPageGeometry g = engine.paging();
        JlamaPaging paging = paging(stage);
        int firstPage = paging.firstLayerPage(stage.firstLayer());
        int layerPages = stage.ppSize() == 1 ? g.layerPages() : paging.stageLayerPages(stage.firstLayer(), stage.layers());
        long layerBytes = 2 * g.planeBytes();
        List<Allocation> allocations = new ArrayList<>();
        for (JlamaSessionPages slot : pages) {
            for (int lp = firstPage; lp < firstPage + layerPages; lp++) {
                long offset = paging.spanStart(stage.firstLayer(), lp) * layerBytes;
                long bytes = stage.ppSize() == 1 ? g.pageBytes() : paging.spanLayers(stage.firstLayer(), stage.layers(), lp) * layerBytes;
                for (int cp = 0; cp < g.contextPages(); cp++) {
                    allocations.add(new Allocation(slot.pageAddress(lp, cp) + offset, bytes, MemoryKind.HOST, 0));
                }
            }
        }
        return CacheMemory.of(allocations);
    }

    /**
     * Returns the model layers any of whose key or value planes, in any slot and context page,
     * lies even partly in the given memory: found through Jlama's own accessors, not the layout's
     * arithmetic, so that what an engine registers can be checked against what Jlama holds where.
     *
     * @param memory allocations, for example those a geometry registers.
     * @return the layers, ascending.
     */
    public SortedSet<Integer> layersIn(List<Allocation> memory)
    {
        JlamaPageGeometry g = engine.paging();
        SortedSet<Integer> layers = new TreeSet<>();
        for (KvBufferCache.KvBuffer buffer : buffers) {
            for (int layer = 0; layer < g.layers(); layer++) {
                for (int cp = 0; cp < g.contextPages(); cp++) {
                    int token = cp * g.tokensPerPage();
                    for (boolean value : new boolean[] {false, true}) {
                        long plane = JlamaSessionPages.address(value ? buffer.getValTensorForPosition(layer, token) : buffer.getKeyTensorForPosition(layer, token));
                        for (Allocation a : memory) {
                            if (plane < a.address() + a.bytes() && a.address() < plane + g.planeBytes()) {
                                layers.add(layer);
                            }
                        }
                    }
                }
            }
        }
        return layers;
    }

    /**
     * Returns the most tokens one session may hold.
     *
     * @return the model's context length.
     */
    public int maxTokens()
    {
        return engine.model().getConfig().contextLength;
    }

    /**
     * Takes a free slot.
     *
     * @return the slot.
     * @throws KvBridgeException {@code UNSUPPORTED} when every slot is in use.
     */
    public synchronized int acquire()
    {
        Integer slot = free.poll();
        KvBridgeException.check(slot != null, ErrorCode.UNSUPPORTED, "all %d Jlama session slots are in use; wait for a free or start the engine with more",
                buffers.size());
        return slot;
    }

    /**
     * Takes a given slot: a later pipeline stage takes the slot the first stage chose, so that the
     * stages' parameters name the same blocks.
     *
     * @param slot the slot.
     * @return the slot.
     * @throws KvBridgeException {@code INVALID_ARGUMENT} for a slot that does not exist, {@code UNSUPPORTED} while it is in use.
     */
    public synchronized int acquire(int slot)
    {
        KvBridgeException.check(slot >= 0 && slot < buffers.size(), ErrorCode.INVALID_ARGUMENT, "slot %d does not exist (this engine has slots 0..%d)",
                slot, buffers.size() - 1);
        KvBridgeException.check(free.remove((Integer) slot), ErrorCode.UNSUPPORTED,
                "Jlama session slot %d is still in use here; the other stages' requests in it were not freed in time", slot);
        return slot;
    }

    /**
     * Tells whether no request holds a slot.
     *
     * @param slot the slot.
     * @return true when it is free.
     */
    public synchronized boolean isFree(int slot)
    {
        return free.contains(slot);
    }

    /**
     * Returns a slot.
     *
     * @param slot the slot.
     */
    public synchronized void release(int slot)
    {
        KvBridgeException.checkArgument(slot >= 0 && slot < buffers.size() && !free.contains(slot), "slot %d is not in use", slot);
        free.add(slot);
    }

    /**
     * Returns the free slots.
     *
     * @return how many slots no request holds.
     */
    public synchronized int freeSlots()
    {
        return free.size();
    }

    /**
     * Returns a slot's Jlama session.
     *
     * @param slot the slot.
     * @return its KV buffer.
     */
    public KvBufferCache.KvBuffer buffer(int slot)
    {
        return buffers.get(slot);
    }

    /**
     * Returns the block ids that hold a slot's first tokens.
     *
     * @param slot the slot.
     * @param tokens tokens the request holds.
     * @return {@code slot * blocksPerSession + j} for the blocks covering {@code [0, tokens)}.
     */
    public BlockIds blockIds(int slot, int tokens)
    {
        return blockIds(slot, 0, tokens);
    }

    /**
     * Returns the block ids of a slot's tokens from a block on: the uncached suffix of a session
     * whose first blocks the slot already holds.
     *
     * @param slot the slot.
     * @param firstBlock the first block to list (the cached blocks before it are left out).
     * @param tokens tokens the request holds.
     * @return {@code slot * blocksPerSession + j} for {@code j} from {@code firstBlock} to the block holding token {@code tokens - 1}.
     */
    public BlockIds blockIds(int slot, int firstBlock, int tokens)
    {
        KvBridgeException.check(tokens > 0 && tokens <= maxTokens(), ErrorCode.INVALID_ARGUMENT,
                "a session of %d tokens does not fit Jlama's pages of this engine (at most %d tokens a session)", tokens, maxTokens());
        JlamaPageGeometry g = engine.paging();
        int blocksPerSession = g.contextPages() * (g.tokensPerPage() / blockTokens);
        int blocks = (tokens + blockTokens - 1) / blockTokens;
        KvBridgeException.check(firstBlock >= 0 && firstBlock <= blocks, ErrorCode.INVALID_ARGUMENT,
                "first block %d is outside the %d blocks of a %d-token session", firstBlock, blocks, tokens);
        int[] ids = new int[blocks - firstBlock];
        for (int j = 0; j < ids.length; j++) {
            ids[j] = slot * blocksPerSession + firstBlock + j;
        }
        return BlockIds.of(ids);
    }

    /**
     * Returns the tokens per kvbridge block.
     *
     * @return the block size.
     */
    public int blockTokens()
    {
        return blockTokens;
    }
}
