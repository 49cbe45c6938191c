package io.kvbridge.layout.hma;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

final class HmaPoolDescriptorTest
{
    @Test
    void eachLayerGoesToThePoolOfItsPositionInItsGroup()
    {
        int[] groups = {1, 1, 1, 1, 0, 1, 1, 1, 1, 0};
        int[] pools = HmaPoolDescriptor.poolIndices(groups);
        assertArrayEquals(new int[] {0, 1, 2, 3, 0, 4, 5, 6, 7, 1}, pools);
        assertEquals(8, HmaPoolDescriptor.poolCount(pools));
        assertEquals(0, HmaPoolDescriptor.poolCount(HmaPoolDescriptor.poolIndices(new int[0])));
        assertThrows(KvBridgeException.class, () -> HmaPoolDescriptor.poolIndices(new int[] {0, -1}));
    }

    @Test
    void pagesAreHeadsTimesTokensTimesKeyAndValue()
    {
        assertEquals(1024, HmaPoolDescriptor.pageBytes(2, 16, 8, 2));
        assertEquals(4, HmaPoolDescriptor.headsPerRank(8, 2));
        assertEquals(1, HmaPoolDescriptor.headsPerRank(2, 8));
        assertThrows(KvBridgeException.class, () -> HmaPoolDescriptor.headsPerRank(6, 4));
        KvBridgeException overflow = assertThrows(KvBridgeException.class, () -> HmaPoolDescriptor.pageBytes(1 << 30, 1 << 30, 1 << 30, 4));
        assertTrue(overflow.getMessage().contains("overflows"), overflow.getMessage());
        assertEquals(5 * 1536L, HmaPoolDescriptor.pageOffset(5, 1536));
    }

    @Test
    void pooledGroupsNeedOnePageSize()
    {
        assertEquals(1024, HmaPoolDescriptor.checkUniformPageBytes(new long[] {1024, 0, 1024}));
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> HmaPoolDescriptor.checkUniformPageBytes(new long[] {0, 1024, 2048}));
        assertEquals(ErrorCode.LAYOUT_UNSUPPORTED, e.code());
        assertTrue(e.getMessage().contains("group 2 has pageBytes=2048 but group 1 has pageBytes=1024"), e.getMessage());
        assertThrows(KvBridgeException.class, () -> HmaPoolDescriptor.checkUniformPageBytes(new long[] {0, 0}));
    }

    @Test
    void capacityIsAWholeNumberOfPages()
    {
        assertEquals(7, HmaPoolDescriptor.checkCapacity(0, 7 * 1024, 1024));
        assertEquals(ErrorCode.LAYOUT_UNSUPPORTED, assertThrows(KvBridgeException.class, () -> HmaPoolDescriptor.checkCapacity(3, 7 * 1024 + 1, 1024)).code());
        assertEquals(ErrorCode.LAYOUT_UNSUPPORTED, assertThrows(KvBridgeException.class, () -> HmaPoolDescriptor.checkCapacity(3, 1000, 1024)).code());
    }
}
