package io.kvbridge.core.layout;

import static io.kvbridge.testkit.KvBridgeAssertions.assertCode;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.KvPart;
import io.kvbridge.spi.geometry.LayerSpec;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.ModelIdentity;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.SplitClass;
import io.kvbridge.spi.geometry.StateComponent;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The per-layer layout's state regions for a Mamba layer beside an attention layer. */
final class PerLayerStateTest
{
    private static final List<StateComponent> MAMBA2 = StateComponent.mamba2(4, 8, 4, 2, 3, "bfloat16", "float32");
    private static final CacheGroup STATE = new CacheGroup(1, GroupKind.MAMBA, 0, 4, 8, MAMBA2);

    private static ModelCacheSpec spec()
    {
        ModelIdentity identity = new ModelIdentity("hybrid-ssm-2", "bfloat16", "bfloat16", 2, 8, 2, true);
        return new ModelCacheSpec(identity, 16, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 2, 8), STATE),
                List.of(new LayerSpec("model.layers.0.mixer", 1), new LayerSpec("model.layers.1.self_attn", 0)), List.of(2));
    }

    private static CacheLayout layout(Map<String, String> options)
    {
        return new PerLayerCacheLayoutFactory().create(options);
    }

    @Test
    void aMambaLayerIsOneStateRegionWhateverTheBlockOrder()
    {
        long stateBytes = STATE.stateBytes(2);
        CacheGeometry geometry = layout(Map.of(PerLayerCacheLayoutFactory.BLOCK_ORDER, "tokens-outermost", PerLayerCacheLayoutFactory.KV_PLANES, "blockwise"))
                .describe(spec(), CacheMemory.of(List.of(new Allocation(0x100000, 3 * stateBytes, MemoryKind.HOST, 0),
                        new Allocation(0x200000, 8 * 512, MemoryKind.HOST, 0))), new Rank(0, 1, 1, 2));
        assertEquals(new Region("model.layers.0.mixer", 0x100000, stateBytes, stateBytes, 3, 1, MemoryKind.HOST, 0, SplitClass.SPLIT,
                List.of("model.layers.0.mixer"), List.of(), KvPart.JOINT), geometry.regions().getFirst());
        assertEquals(List.of("model.layers.0.mixer", "model.layers.1.self_attn/k", "model.layers.1.self_attn/v"),
                geometry.regions().stream().map(Region::name).toList());
        assertEquals(SplitClass.INTERLEAVED, geometry.regions().get(1).split());
    }

    @Test
    void aStateViewOfOtherBytesIsRefusedNamingTheComponents()
    {
        long stateBytes = STATE.stateBytes(1);
        CacheMemory memory = new CacheMemory(List.of(new Allocation(0x100000, 4 * stateBytes, MemoryKind.HOST, 0), new Allocation(0x200000, 8 * 1024,
                MemoryKind.HOST, 0)), List.of(new LayerView("model.layers.0.mixer", 0x100000, stateBytes - 8, stateBytes, 4),
                        new LayerView("model.layers.1.self_attn", 0x200000, 1024, 1024, 8)));
        assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout(Map.of()).describe(spec(), memory, Rank.single()),
                "layer model.layers.0.mixer: view blockBytes=" + (stateBytes - 8), "conv.x=192 + conv.B=48 + conv.C=48 + ssm=512");
    }

    @Test
    void statesHaveNoPlanesToSplit()
    {
        assertCode(ErrorCode.LAYOUT_UNSUPPORTED, () -> layout(Map.of(PerLayerCacheLayoutFactory.KV_PLANES, "split")).describe(spec(),
                CacheMemory.of(List.of(new Allocation(0x100000, 1 << 16, MemoryKind.HOST, 0), new Allocation(0x200000, 1 << 16, MemoryKind.HOST, 0))),
                Rank.single()), "model.layers.0.mixer", "kv-planes=joint or blockwise");
    }
}
