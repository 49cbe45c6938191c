package io.kvbridge.examples.demo;

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
        return new ModelCacheSpec(identity, BLOCK_TOKENS, 1, groups, layers, ModelCacheSpec.evenStages(LAYERS, ppSize));
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
        return mla() ? (long) BLOCK_TOKENS * LATENT * 2 : (long) (KV_HEADS / tpSize) * BLOCK_TOKENS * 2 * HEAD_SIZE * 2;
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
        if (groups.get(group).kind() != GroupKind.SLIDING_WINDOW) {
            return promptBlocks;
        }
        return Math.min(promptBlocks, (WINDOW_TOKENS + BLOCK_TOKENS - 1) / BLOCK_TOKENS + 1);
    }
}
