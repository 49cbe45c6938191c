package io.kvbridge.examples.demo;

import io.kvbridge.api.BlockSizes;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import java.util.ArrayList;
import java.util.List;

/**
 * The synthetic model of the demo: 30 layers with bf16 KV and blocks of 16 tokens. For the {@code hma}
 * and {@code per-layer} layouts it is hybrid: every third layer full attention (group 0), the others a
 * 512-token sliding window (group 1), 4 KV heads of 32 elements, so one page is 8 KiB. For {@code mla}
 * every layer holds one 64-wide latent (group 0), a page of 2 KiB.
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
                layers, ModelCacheSpec.evenStages(LAYERS, ppSize));
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
     * the window still needs for a sliding-window group.
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
        if (groups.get(group).kind() != GroupKind.SLIDING_WINDOW || layout.equals("per-layer")) {
            return promptBlocks;
        }
        return Math.min(promptBlocks, (WINDOW_TOKENS + blockTokens - 1) / blockTokens + 1);
    }
}
