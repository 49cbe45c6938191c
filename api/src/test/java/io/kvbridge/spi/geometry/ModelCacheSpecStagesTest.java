package io.kvbridge.spi.geometry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

final class ModelCacheSpecStagesTest
{
    private static ModelCacheSpec spec(List<Integer> stages)
    {
        List<LayerSpec> layers = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            layers.add(new LayerSpec("l" + i, 0));
        }
        return new ModelCacheSpec(new ModelIdentity("m", "bfloat16", "bfloat16", 8, 64, 5, false), 32, 2,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 64)), layers, stages);
    }

    @Test
    void aRankOwnsItsStagesSlice()
    {
        ModelCacheSpec spec = spec(List.of(3, 2));
        assertEquals(List.of("l3", "l4"), spec.layersOwnedBy(new Rank(1, 2, 0, 4)).stream().map(LayerSpec::name).toList());
        assertEquals(16, spec.kernelBlockTokens());
    }

    @Test
    void aRankOfAnotherSplitIsRejectedWithBothSizes()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> spec(List.of(5)).layersOwnedBy(new Rank(1, 2, 0, 1)));
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains("ppSize=2") && e.getMessage().contains("1 stages [5]"), e.getMessage());
    }
}
