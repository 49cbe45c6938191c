package io.kvbridge.layout.mla;

import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import java.util.ArrayList;
import java.util.List;

/** MLA model specs for tests: latent width 32 in bfloat16 and 16-token blocks give 1024-byte pages. */
final class MlaModels
{
    static final long PAGE = 16 * 32 * 2;

    private MlaModels()
    {
    }

    static String layer(int index)
    {
        return "model.layers." + index + ".self_attn.attn";
    }

    /**
     * Views of four layers with 32-byte pages: layers 0 and 1 interleaved in {@code shared} (stride
     * 64), layer 2 alone in {@code own} (stride 32), layer 3 aliasing layer 0.
     */
    static List<LayerView> aliasingViews(Allocation shared, Allocation own, int blocks)
    {
        return List.of(
                new LayerView(layer(0), shared.address(), 32, 64, blocks),
                new LayerView(layer(1), shared.address() + 32, 32, 64, blocks),
                new LayerView(layer(2), own.address(), 32, 32, blocks),
                new LayerView(layer(3), shared.address(), 32, 64, blocks));
    }

    /** {@code layers} MLA layers, layer {@code i} in group {@code groupOf[i]} (all in group 0 when none are given). */
    static ModelCacheSpec spec(int layers, List<Integer> stages, int... groupOf)
    {
        int groups = 1;
        for (int group : groupOf) {
            groups = Math.max(groups, group + 1);
        }
        List<CacheGroup> cacheGroups = new ArrayList<>();
        for (int g = 0; g < groups; g++) {
            cacheGroups.add(new CacheGroup(g, GroupKind.MLA, 0, 1, 32));
        }
        List<LayerSpec> specs = new ArrayList<>();
        for (int i = 0; i < layers; i++) {
            specs.add(new LayerSpec(layer(i), groupOf.length == 0 ? 0 : groupOf[i]));
        }
        ModelIdentity identity = new ModelIdentity("latent-model", "bfloat16", "bfloat16", 1, 32, layers, groups > 1);
        return new ModelCacheSpec(identity, 16, 1, cacheGroups, specs, stages);
    }
}
