package io.kvbridge.layout.hma;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGeometry;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import io.kvbridge.spi.geometry.ModelCacheSpec;
import io.kvbridge.spi.geometry.Rank;
import io.kvbridge.spi.geometry.Region;
import io.kvbridge.spi.geometry.StateComponent;
import io.kvbridge.spi.layout.CacheLayout;
import io.kvbridge.spi.layout.CacheMemory;
import io.kvbridge.spi.layout.LayerView;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * An 8-layer hybrid model: layers 3 and 7 full attention (group 0, 2 KV heads of 8, 1 KiB pages at
 * TP1), the other six Mamba-2 (group 1: 4 heads of 8 with state size 4, 2 B/C groups, a convolution
 * window of 3, bf16 convolution state and fp32 SSM state).
 */
final class HmaStateGroupsTest
{
    private static final CacheLayout LAYOUT = new HmaCacheLayoutFactory().create(Map.of());
    private static final List<StateComponent> MAMBA2 = HybridModels.MAMBA2;
    private static final CacheGroup STATE = new CacheGroup(1, GroupKind.MAMBA, 0, 4, 8, MAMBA2);

    private static ModelCacheSpec spec(List<Integer> stages, List<StateComponent> state)
    {
        return HybridModels.hybridSsm(stages, state);
    }

    /** One allocation per attention pool (64 pages), then one per state layer (4 states). */
    private static CacheMemory memory(int pools, int states, int tpSize)
    {
        List<Allocation> allocations = new ArrayList<>();
        for (int p = 0; p < pools; p++) {
            allocations.add(new Allocation(0x1000_0000L + p * 0x10_0000L, 64 * HybridModels.PAGE / tpSize, MemoryKind.DEVICE, 0));
        }
        for (int s = 0; s < states; s++) {
            allocations.add(new Allocation(0x2000_0000L + s * 0x10_0000L, 4 * STATE.stateBytes(tpSize), MemoryKind.DEVICE, 0));
        }
        return CacheMemory.of(allocations);
    }

    @Test
    void attentionLayersPoolAsBeforeAndEveryMambaLayerKeepsAStateRegion()
    {
        CacheGeometry geometry = LAYOUT.describe(spec(List.of(8), MAMBA2), memory(2, 6, 1), Rank.single());
        assertEquals(8, geometry.regions().size());
        assertEquals(List.of("model.layers.3"), geometry.regions().get(0).members());
        assertEquals(List.of("model.layers.7"), geometry.regions().get(1).members());
        assertEquals(HybridModels.PAGE, geometry.regions().get(0).blockBytes());
        long stateBytes = (32 + 8 + 8) * 3 * 2 + 4 * 8 * 4 * 4;
        List<String> stateLayers = List.of("model.layers.0", "model.layers.1", "model.layers.2", "model.layers.4", "model.layers.5", "model.layers.6");
        for (int s = 0; s < stateLayers.size(); s++) {
            Region region = geometry.regions().get(2 + s);
            assertEquals(List.of(stateLayers.get(s)), region.members());
            assertEquals(1, region.groupId());
            assertEquals(stateBytes, region.blockBytes());
            assertEquals(4, region.capacity());
        }
    }

    @Test
    void aPipelineStageKeepsTheStatesOfTheLayersItOwnsAtItsTensorParallelShare()
    {
        CacheGeometry stage = LAYOUT.describe(spec(List.of(4, 4), MAMBA2), memory(1, 3, 2), new Rank(1, 2, 1, 2));
        assertEquals(List.of(List.of("model.layers.7"), List.of("model.layers.4"), List.of("model.layers.5"), List.of("model.layers.6")),
                stage.regions().stream().map(Region::members).toList());
        assertEquals(STATE.stateBytes(2), stage.regions().get(1).blockBytes());
        assertEquals(STATE.stateBytes(1) / 2, STATE.stateBytes(2));
    }

    @Test
    void aStateViewWhoseBytesDifferFromTheComponentsIsRefusedNamingThem()
    {
        ModelCacheSpec spec = spec(List.of(8), MAMBA2);
        List<Allocation> allocations = new ArrayList<>();
        List<LayerView> views = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            long base = 0x1000_0000L + i * 0x10_0000L;
            boolean attention = i % 4 == 3;
            // the engine forgot the fp32 SSM state is twice as wide as bf16
            long bytes = attention ? HybridModels.PAGE : STATE.stateBytes(1) - 4 * 8 * 4 * 2;
            allocations.add(new Allocation(base, 4 * STATE.stateBytes(1) + 64 * HybridModels.PAGE, MemoryKind.DEVICE, 0));
            views.add(new LayerView("model.layers." + i, base, bytes, bytes, 4));
        }
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> LAYOUT.describe(spec, new CacheMemory(allocations, views), Rank.single()));
        assertEquals(ErrorCode.LAYOUT_UNSUPPORTED, e.code());
        assertTrue(e.getMessage().contains("layer model.layers.0: state view blockBytes=" + (STATE.stateBytes(1) - 256)), e.getMessage());
        assertTrue(e.getMessage().contains("conv.x=192 + conv.B=48 + conv.C=48 + ssm=512"), e.getMessage());
    }

    @Test
    void aTensorParallelSizeNotDividingAComponentIsRefusedNamingLayerAndComponent()
    {
        // one B/C group of state size 4: 4 channels cannot be split over 8 ranks
        List<StateComponent> narrow = StateComponent.mamba2(8, 8, 4, 1, 3, "bfloat16", "float32");
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> LAYOUT.describe(spec(List.of(8), narrow), memory(2, 6, 1), new Rank(0, 1, 0, 8)));
        assertEquals(ErrorCode.TP_UNSUPPORTED, e.code());
        assertTrue(e.getMessage().contains("layer model.layers.0, state component conv.B: splitDim=4 is not divisible by tpSize=8"), e.getMessage());
    }
}
