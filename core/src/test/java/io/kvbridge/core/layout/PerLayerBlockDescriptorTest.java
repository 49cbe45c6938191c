package io.kvbridge.core.layout;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.core.layout.PerLayerBlockDescriptor.Order;
import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.SplitClass;
import java.util.HashSet;
import java.util.Set;
import java.util.Map;
import org.junit.jupiter.api.Test;

final class PerLayerBlockDescriptorTest
{
    @Test
    void headsPerRankShardsOrReplicates()
    {
        assertEquals(4, PerLayerBlockDescriptor.headsPerRank(8, 2));
        assertEquals(1, PerLayerBlockDescriptor.headsPerRank(8, 8));
        assertEquals(1, PerLayerBlockDescriptor.headsPerRank(8, 16));
        KvBridgeException uneven = assertThrows(KvBridgeException.class, () -> PerLayerBlockDescriptor.headsPerRank(12, 8));
        assertTrue(uneven.getMessage().contains("totalKvHeads=12") && uneven.getMessage().contains("tpSize=8"), uneven.getMessage());
        assertThrows(KvBridgeException.class, () -> PerLayerBlockDescriptor.headsPerRank(3, 4));
    }

    @Test
    void blockBytesPackKeysAndValues()
    {
        assertEquals(256, PerLayerBlockDescriptor.tokenContentBytes(64, 2));
        assertEquals(65_536, PerLayerBlockDescriptor.blockBytes(8, 16, 128, 2));
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> PerLayerBlockDescriptor.blockBytes(Integer.MAX_VALUE, Integer.MAX_VALUE, 1 << 20, 4));
        assertTrue(e.getMessage().contains("overflows"), e.getMessage());
    }

    @Test
    void everyHeadAndTokenHasItsOwnPlaceInBothOrders()
    {
        int heads = 3;
        int tokens = 4;
        long content = 8;
        for (Order order : Order.values()) {
            Set<Long> offsets = new HashSet<>();
            for (int h = 0; h < heads; h++) {
                for (int t = 0; t < tokens; t++) {
                    long offset = PerLayerBlockDescriptor.headTokenOffset(order, h, t, heads, tokens, content);
                    assertTrue(offset >= 0 && offset + content <= heads * tokens * content, order + " h" + h + " t" + t);
                    assertTrue(offset % content == 0);
                    assertTrue(offsets.add(offset), order + ": two entries at " + offset);
                }
            }
        }
        assertEquals(tokens * content, PerLayerBlockDescriptor.headTokenOffset(Order.HEADS_OUTERMOST, 1, 0, heads, tokens, content));
        assertEquals(heads * content, PerLayerBlockDescriptor.headTokenOffset(Order.TOKENS_OUTERMOST, 0, 1, heads, tokens, content));
        assertThrows(KvBridgeException.class, () -> PerLayerBlockDescriptor.headTokenOffset(Order.HEADS_OUTERMOST, 3, 0, heads, tokens, content));
        assertThrows(KvBridgeException.class, () -> PerLayerBlockDescriptor.headTokenOffset(Order.HEADS_OUTERMOST, 0, 4, heads, tokens, content));
    }

    @Test
    void headSlicesAreContiguousOnlyWhenHeadsAreOutermost()
    {
        // a TP2 reader of a TP1 block of 8 heads reads the second half from rank offset 1
        assertEquals(32_768, PerLayerBlockDescriptor.headSliceOffset(Order.HEADS_OUTERMOST, 1, 2, 8, 65_536));
        assertEquals(0, PerLayerBlockDescriptor.headSliceOffset(Order.HEADS_OUTERMOST, 0, 4, 8, 65_536));
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> PerLayerBlockDescriptor.headSliceOffset(Order.TOKENS_OUTERMOST, 1, 2, 8, 65_536));
        assertEquals(ErrorCode.TP_UNSUPPORTED, e.code());
        assertTrue(e.getMessage().contains("tokens-outermost") && e.getMessage().contains("slices=2"), e.getMessage());
        PerLayerBlockDescriptor.checkHeadSliceable(Order.TOKENS_OUTERMOST, 1);
        assertThrows(KvBridgeException.class, () -> PerLayerBlockDescriptor.headSliceOffset(Order.HEADS_OUTERMOST, 0, 3, 8, 65_536));
    }

    @Test
    void ordersMapToSplitClassesAndOptionValues()
    {
        assertEquals(SplitClass.SPLIT, Order.HEADS_OUTERMOST.split());
        assertEquals(SplitClass.INTERLEAVED, Order.TOKENS_OUTERMOST.split());
        assertEquals("heads-outermost", Order.HEADS_OUTERMOST.optionValue());
        PerLayerCacheLayoutFactory factory = new PerLayerCacheLayoutFactory();
        assertEquals(Order.TOKENS_OUTERMOST, ((PerLayerCacheLayout) factory.create(Map.of("block-order", "tokens-outermost"))).order());
        KvBridgeException refused = assertThrows(KvBridgeException.class, () -> factory.create(Map.of("block-order", "x")));
        assertEquals(ErrorCode.CONFIG_INVALID, refused.code());
        assertTrue(refused.getMessage().contains("block-order=x is not one of [heads-outermost, tokens-outermost]"), refused.getMessage());
    }

    @Test
    void capacityMustBeWholeBlocks()
    {
        assertEquals(4, PerLayerBlockDescriptor.checkCapacity("l", 4096, 1024));
        assertEquals(ErrorCode.LAYOUT_UNSUPPORTED, assertThrows(KvBridgeException.class, () -> PerLayerBlockDescriptor.checkCapacity("l", 4095, 1024)).code());
        assertEquals(ErrorCode.LAYOUT_UNSUPPORTED, assertThrows(KvBridgeException.class, () -> PerLayerBlockDescriptor.checkCapacity("l", 512, 1024)).code());
    }
}
