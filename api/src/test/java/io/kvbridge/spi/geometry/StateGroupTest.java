package io.kvbridge.spi.geometry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import java.util.List;
import org.junit.jupiter.api.Test;

final class StateGroupTest
{
    // 8 heads of 64 with state size 16, 2 B/C groups, a 4-wide convolution keeping 3 steps
    private static final List<StateComponent> MAMBA2 = StateComponent.mamba2(8, 64, 16, 2, 3, "bfloat16", "float32");

    @Test
    void mamba2HasTheConvolutionChannelGroupsAndTheSsmStateEachWithItsOwnSplitDimension()
    {
        assertEquals(List.of("conv.x", "conv.B", "conv.C", "ssm"), MAMBA2.stream().map(StateComponent::name).toList());
        assertEquals(List.of(512, 32, 32, 8), MAMBA2.stream().map(StateComponent::splitDim).toList());
        CacheGroup group = new CacheGroup(1, GroupKind.MAMBA, 0, 8, 64, MAMBA2);
        long conv = (512 + 32 + 32) * 3 * 2;
        long ssm = 8L * 64 * 16 * 4;
        assertEquals(conv + ssm, group.stateBytes(1));
        assertEquals((conv + ssm) / 4, group.stateBytes(4));
        assertEquals(conv / 2, group.componentOffset(3, 2), "the fp32 SSM state follows the bf16 convolution state");
        assertEquals(512 * 3 * 2 / 2, group.componentOffset(1, 2));
        assertTrue(group.stateful());
    }

    @Test
    void aTensorParallelSizeNotDividingAComponentIsRefusedNamingIt()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> MAMBA2.get(1).bytesPerRank(64));
        assertEquals(ErrorCode.TP_UNSUPPORTED, e.code());
        assertTrue(e.getMessage().contains("conv.B: tpSize=64 does not divide splitDim=32"), e.getMessage());
    }

    @Test
    void onlyStateGroupsHaveComponents()
    {
        assertThrows(KvBridgeException.class, () -> new CacheGroup(0, GroupKind.MAMBA, 0, 8, 64));
        assertThrows(KvBridgeException.class, () -> new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 64, MAMBA2));
        assertThrows(KvBridgeException.class, () -> new CacheGroup(0, GroupKind.MAMBA, 0, 8, 64, List.of(MAMBA2.get(0), MAMBA2.get(0))));
        assertThrows(KvBridgeException.class, () -> new StateComponent("ssm", "float64", 8, 1));
        assertEquals(List.of(), new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 64).state());
    }
}
