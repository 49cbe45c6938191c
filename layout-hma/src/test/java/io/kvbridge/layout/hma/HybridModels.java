package io.kvbridge.layout.hma;

import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.StateComponent;
import java.util.ArrayList;
import java.util.List;

/**
 * A 30-layer hybrid model in which every fifth layer (4, 9, ..., 29) is full attention and the other
 * 24 use a 2048-token sliding window; 2 KV heads of 8 elements in bfloat16 and 16-token blocks, so a
 * page is 2 x 16 x 2 x 8 x 2 = 1024 bytes at TP1.
 */
final class HybridModels
{
    static final int LAYERS = 30;
    static final int BLOCK_TOKENS = 16;
    static final int WINDOW = 2048;
    static final long PAGE = 1024;

    private HybridModels()
    {
    }

    static String layer(int index)
    {
        return "model.layers." + index + ".self_attn";
    }

    static boolean full(int index)
    {
        return index % 5 == 4;
    }

    /** Group 0 holds the 6 full-attention layers, group 1 the 24 sliding-window layers. */
    static ModelCacheSpec twoGroups(List<Integer> stages)
    {
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < LAYERS; i++) {
            layers.add(new LayerSpec(layer(i), full(i) ? 0 : 1));
        }
        return new ModelCacheSpec(identity(), BLOCK_TOKENS, 1,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 8), new CacheGroup(1, GroupKind.SLIDING_WINDOW, WINDOW, 2, 8)), layers, stages);
    }

    /**
     * Groups of six layers each, as a hybrid allocator forms them: group 0 the full-attention
     * layers, groups 1..4 consecutive runs of six sliding-window layers.
     */
    static ModelCacheSpec sixLayerGroups()
    {
        List<LayerSpec> layers = new ArrayList<>();
        int slidingSeen = 0;
        for (int i = 0; i < LAYERS; i++) {
            layers.add(new LayerSpec(layer(i), full(i) ? 0 : 1 + slidingSeen++ / 6));
        }
        List<CacheGroup> groups = new ArrayList<>();
        groups.add(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 8));
        for (int g = 1; g <= 4; g++) {
            groups.add(new CacheGroup(g, GroupKind.SLIDING_WINDOW, WINDOW, 2, 8));
        }
        return new ModelCacheSpec(identity(), BLOCK_TOKENS, 1, groups, layers, List.of(LAYERS));
    }

    /** Layer {@code a} of a full-attention group and layer {@code b} of a sliding-window group, of the given head shapes. */
    static ModelCacheSpec fullAndSliding(int kvHeads, int fullHeadSize, int slidingHeadSize)
    {
        ModelIdentity identity = new ModelIdentity("m", "bfloat16", "bfloat16", kvHeads, fullHeadSize, 2, true);
        return new ModelCacheSpec(identity, BLOCK_TOKENS, 1,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, kvHeads, fullHeadSize), new CacheGroup(1, GroupKind.SLIDING_WINDOW, 512, kvHeads, slidingHeadSize)),
                List.of(new LayerSpec("a", 0), new LayerSpec("b", 1)), List.of(2));
    }

    /** Mamba-2 state of 4 heads of 8, state size 4, 2 B/C groups, a convolution window of 3: 288 bf16 + 512 fp32 bytes at TP1. */
    static final List<StateComponent> MAMBA2 = StateComponent.mamba2(4, 8, 4, 2, 3, "bfloat16", "float32");

    /** An 8-layer hybrid: layers 3 and 7 full attention (group 0, 1 KiB pages at TP1), the other six Mamba-2 (group 1). */
    static ModelCacheSpec hybridSsm(List<Integer> stages, List<StateComponent> state)
    {
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            layers.add(new LayerSpec("model.layers." + i, i % 4 == 3 ? 0 : 1));
        }
        ModelIdentity identity = new ModelIdentity("hybrid-ssm-8", "bfloat16", "bfloat16", 2, 8, 8, true);
        return new ModelCacheSpec(identity, BLOCK_TOKENS, 1,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 8), new CacheGroup(1, GroupKind.MAMBA, 0, 4, 8, state)), layers, stages);
    }

    private static ModelIdentity identity()
    {
        return new ModelIdentity("hybrid-30", "bfloat16", "bfloat16", 2, 8, LAYERS, true);
    }
}
