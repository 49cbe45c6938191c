package io.kvbridge.examples.demo;

import io.kvbridge.api.BlockSizes;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.StateComponent;
import java.util.ArrayList;
import java.util.List;

/**
 * The synthetic model of the demo: 30 layers with bf16 KV and blocks of 16 tokens. For the {@code hma}
 * and {@code per-layer} layouts it is hybrid: every third layer full attention (group 0), the others a
 * 512-token sliding window (group 1), 4 KV heads of 32 elements, so one page is 8 KiB. For {@code mla}
 * every layer holds one 64-wide latent (group 0), a page of 2 KiB.
 *
 * <p>The {@code hybrid-ssm} model ({@link #HYBRID_SSM}) has 36 layers instead: every fourth (3, 7, ...,
 * 35) full attention with the same heads (group 0), the other 27 Mamba-2 (group 1) whose state is 8
 * heads of 16 elements, a state size of 16, 2 B/C groups and a convolution window of 4, the
 * convolution state in bf16 and the SSM state in fp32: 9,728 bytes per state at TP 1. Each request
 * holds one state per Mamba layer, a block of group 1.
 *
 * @param layout the layout name.
 * @param identity the model identity.
 * @param groups cache groups in id order.
 * @param layers the layers in model order.
 */
public record DemoModel(String layout, ModelIdentity identity, List<CacheGroup> groups, List<LayerSpec> layers)
{
    /** Layers of the model. */
    public static final int LAYERS = 30;
    /** Tokens per block. */
    public static final int BLOCK_TOKENS = 16;
    /** Tokens of the sliding window. */
    public static final int WINDOW_TOKENS = 512;
    /** KV heads of a hybrid layer. */
    public static final int KV_HEADS = 4;
    private static final int HEAD_SIZE = 32;
    private static final int LATENT = 64;
    /** The model each layout describes unless told otherwise. */
    public static final String DEFAULT = "default";
    /** The hybrid attention and Mamba-2 model. */
    public static final String HYBRID_SSM = "hybrid-ssm";
    /** The models. */
    public static final List<String> MODELS = List.of(DEFAULT, HYBRID_SSM);
    /** Layers of the hybrid-ssm model. */
    public static final int HYBRID_LAYERS = 36;
    private static final List<StateComponent> MAMBA2 = StateComponent.mamba2(8, 16, 16, 2, 4, "bfloat16", "float32");

    /**
     * Builds a model for a layout.
     *
     * @param model {@link #DEFAULT} or {@link #HYBRID_SSM}.
     * @param layout {@code hma}, {@code per-layer} or {@code mla} ({@code hma} or {@code per-layer} for hybrid-ssm).
     * @return the model.
     */
    public static DemoModel of(String model, String layout)
    {
        if (!model.equals(HYBRID_SSM)) {
            return of(layout);
        }
        List<CacheGroup> groups = List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, KV_HEADS, HEAD_SIZE),
                new CacheGroup(1, GroupKind.MAMBA, 0, KV_HEADS, HEAD_SIZE, MAMBA2));
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < HYBRID_LAYERS; i++) {
            layers.add(i % 4 == 3 ? new LayerSpec("model.layers." + i + ".self_attn", 0) : new LayerSpec("model.layers." + i + ".mixer", 1));
        }
        ModelIdentity identity = new ModelIdentity("demo/hybrid-ssm-36", "bfloat16", "bfloat16", KV_HEADS, HEAD_SIZE, HYBRID_LAYERS, true);
        return new DemoModel(layout, identity, groups, List.copyOf(layers));
    }

    /**
     * @param model {@link #DEFAULT} or {@link #HYBRID_SSM}.
     * @return the layers of the model.
     */
    public static int layerCount(String model)
    {
        return model.equals(HYBRID_SSM) ? HYBRID_LAYERS : LAYERS;
    }

    /**
     * Builds the model a layout describes.
     *
     * @param layout {@code hma}, {@code per-layer} or {@code mla}.
     * @return the model.
     */
    public static DemoModel of(String layout)
    {
        boolean mla = layout.equals("mla");
        List<CacheGroup> groups = mla ? List.of(new CacheGroup(0, GroupKind.MLA, 0, 1, LATENT))
                : List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, KV_HEADS, HEAD_SIZE),
                        new CacheGroup(1, GroupKind.SLIDING_WINDOW, WINDOW_TOKENS, KV_HEADS, HEAD_SIZE));
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < LAYERS; i++) {
            layers.add(new LayerSpec("model.layers." + i + ".self_attn", mla || i % 3 == 2 ? 0 : 1));
        }
        ModelIdentity identity = new ModelIdentity(mla ? "demo/mla-30" : "demo/hybrid-30", "bfloat16", "bfloat16", mla ? 1 : KV_HEADS,
                mla ? LATENT : HEAD_SIZE, LAYERS, !mla);
        return new DemoModel(layout, identity, groups, List.copyOf(layers));
    }

    /**
     * Returns the cache spec of an engine split into pipeline stages.
     *
     * @param ppSize stages, each an even share of the layers.
     * @return the spec.
     */
    public ModelCacheSpec spec(int ppSize)
    {
        return spec(ppSize, DemoOptions.CacheShape.DEFAULT);
    }

    /**
     * Returns the cache spec of an engine split into pipeline stages, with its own block sizes.
     *
     * @param ppSize stages, each an even share of the layers.
     * @param shape the engine's block sizes.
     * @return the spec.
     */
    public ModelCacheSpec spec(int ppSize, DemoOptions.CacheShape shape)
    {
        return new ModelCacheSpec(identity, shape.blockTokens(), BlockSizes.kernelBlocksPerLogical(shape.blockTokens(), shape.kernelBlockTokens()), groups,
                layers, ModelCacheSpec.evenStages(layers.size(), ppSize));
    }

    /** @return bytes of one token of one head of a layer: K and V, or the MLA latent. */
    public long tokenContentBytes()
    {
        return mla() ? (long) LATENT * 2 : 2L * HEAD_SIZE * 2;
    }

    /** @return KV heads a tensor-parallel rank holds (1 for MLA). */
    public int heads(int tpSize)
    {
        return mla() ? 1 : KV_HEADS / tpSize;
    }

    /** @return whether some layers keep Mamba state (group 1 of the hybrid-ssm model). */
    public boolean stateful()
    {
        return groups.stream().anyMatch(CacheGroup::stateful);
    }

    /**
     * Bytes one engine's cache takes on all its ranks: every attention layer's region of
     * {@code capacity} blocks, every Mamba layer's region of {@code stateCapacity} states.
     *
     * @param capacity scheduler blocks of every attention region.
     * @param stateCapacity states of every Mamba region.
     * @param tpSize the engine's tensor-parallel size.
     * @param blockTokens tokens of a scheduler block.
     * @return the bytes.
     */
    public long cacheBytes(int capacity, int stateCapacity, int tpSize, int blockTokens)
    {
        long bytes = 0;
        for (LayerSpec layer : layers) {
            CacheGroup group = groups.get(layer.groupId());
            bytes += (group.stateful() ? group.stateBytes(tpSize) * stateCapacity : pageBytes(tpSize, blockTokens) * capacity) * tpSize;
        }
        return bytes;
    }

    /** @return true when the model's layers are MLA. */
    public boolean mla()
    {
        return layout.equals("mla");
    }

    /**
     * Bytes of one layer's page on one tensor-parallel rank.
     *
     * @param tpSize the engine's tensor-parallel size.
     * @return the page bytes.
     */
    public long pageBytes(int tpSize)
    {
        return pageBytes(tpSize, BLOCK_TOKENS);
    }

    /**
     * Bytes of one layer's page of a scheduler block on one tensor-parallel rank.
     *
     * @param tpSize the engine's tensor-parallel size.
     * @param blockTokens tokens of the block.
     * @return the page bytes.
     */
    public long pageBytes(int tpSize, int blockTokens)
    {
        return blockTokens * heads(tpSize) * tokenContentBytes();
    }

    /**
     * Blocks of a group that a prompt occupies: every block for full attention and MLA, the blocks
     * the window still needs for a sliding-window group, one (the request's state) for a Mamba group.
     *
     * @param group the group id.
     * @param promptBlocks blocks of the whole prompt.
     * @return the blocks held, the last ones of the prompt.
     */
    public int heldBlocks(int group, int promptBlocks)
    {
        return heldBlocks(group, promptBlocks, BLOCK_TOKENS);
    }

    /**
     * Blocks of a group that a prompt occupies, for blocks of a given size. The per-layer layout
     * keeps a sliding-window layer's old blocks like a full-attention layer's, so there every group
     * holds every block.
     *
     * @param group the group id.
     * @param promptBlocks blocks of the whole prompt.
     * @param blockTokens tokens of one block.
     * @return the blocks held, the last ones of the prompt.
     */
    public int heldBlocks(int group, int promptBlocks, int blockTokens)
    {
        if (groups.get(group).stateful()) {
            return 1;
        }
        if (groups.get(group).kind() != GroupKind.SLIDING_WINDOW || layout.equals("per-layer")) {
            return promptBlocks;
        }
        return Math.min(promptBlocks, (WINDOW_TOKENS + blockTokens - 1) / blockTokens + 1);
    }
}
