package io.kvbridge.spi.layout;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.geometry.CacheGroup;
import io.kvbridge.spi.geometry.GroupKind;
import org.junit.jupiter.api.Test;

final class SlidingWindowTest
{
    private static final CacheGroup WINDOW = new CacheGroup(1, GroupKind.SLIDING_WINDOW, 2048, 8, 128);

    @Test
    void aWindowKeepsTheBlocksItSpansPlusThePartialFirstOne()
    {
        assertEquals(129, SlidingWindow.windowBlocks(2048, 16));
        assertEquals(2, SlidingWindow.windowBlocks(16, 16), "a window of exactly one block may start inside one");
        assertEquals(3, SlidingWindow.windowBlocks(17, 16));
        assertEquals(3, SlidingWindow.windowBlocks(6, 4));
    }

    @Test
    void aWindowSmallerThanABlockStillKeepsTwoBlocks()
    {
        assertEquals(2, SlidingWindow.windowBlocks(1, 16));
        assertEquals(2, SlidingWindow.windowBlocks(15, 16));
        assertEquals(2, SlidingWindow.exchangedBlocks(new CacheGroup(1, GroupKind.SLIDING_WINDOW, 3, 8, 128), 16, 10));
        assertEquals(1, SlidingWindow.exchangedBlocks(new CacheGroup(1, GroupKind.SLIDING_WINDOW, 3, 8, 128), 16, 1), "never more than held");
    }

    @Test
    void aDisabledWindowKeepsNothingAndOtherGroupsKeepEverything()
    {
        assertEquals(0, SlidingWindow.windowBlocks(0, 16));
        assertEquals(0, SlidingWindow.exchangedBlocks(new CacheGroup(1, GroupKind.SLIDING_WINDOW, 0, 8, 128), 16, 1000));
        assertEquals(1000, SlidingWindow.exchangedBlocks(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 8, 128), 16, 1000));
        assertEquals(1000, SlidingWindow.exchangedBlocks(new CacheGroup(0, GroupKind.MLA, 0, 1, 576), 16, 1000));
        assertEquals(0, SlidingWindow.exchangedBlocks(WINDOW, 16, 0));
        assertEquals(7, SlidingWindow.exchangedBlocks(WINDOW, 16, 7));
        assertEquals(129, SlidingWindow.exchangedBlocks(WINDOW, 16, 1000));
    }

    @Test
    void hugeWindowsSaturateInsteadOfWrapping()
    {
        assertEquals(Integer.MAX_VALUE, SlidingWindow.windowBlocks(Integer.MAX_VALUE - 1, 1));
        assertEquals(Integer.MAX_VALUE, SlidingWindow.windowBlocks(Integer.MAX_VALUE, 1));
        assertEquals(2, SlidingWindow.exchangedBlocks(new CacheGroup(1, GroupKind.SLIDING_WINDOW, Integer.MAX_VALUE, 8, 128), 1, 2));
    }

    @Test
    void badInputsAreRefusedNamingTheValue()
    {
        refused(() -> SlidingWindow.windowBlocks(-1, 16), "windowTokens=-1");
        refused(() -> SlidingWindow.windowBlocks(16, 0), "blockTokens=0");
        refused(() -> SlidingWindow.windowBlocks(16, -4), "blockTokens=-4");
        refused(() -> SlidingWindow.exchangedBlocks(WINDOW, 0, 10), "blockTokens=0");
        refused(() -> SlidingWindow.exchangedBlocks(WINDOW, 16, -1), "blocks=-1");
        refused(() -> SlidingWindow.lastIds(new int[] {1, 2}, 3), "keep=3 trailing ids of 2");
        refused(() -> SlidingWindow.lastIds(new int[] {1, 2}, -1), "keep=-1");
        assertThrows(NullPointerException.class, () -> SlidingWindow.exchangedBlocks(null, 16, 1));
        assertThrows(NullPointerException.class, () -> SlidingWindow.lastIds(null, 0));
    }

    @Test
    void clippingKeepsTheLastIdsAndCopiesOnlyWhenItClips()
    {
        int[] ids = {10, 11, 12, 13, 14};
        assertSame(ids, SlidingWindow.lastIds(ids, 5), "nothing clipped: the caller's array");
        assertArrayEquals(new int[] {13, 14}, SlidingWindow.lastIds(ids, 2));
        assertArrayEquals(new int[0], SlidingWindow.lastIds(ids, 0));
        assertArrayEquals(new int[] {10, 11, 12, 13, 14}, ids, "the caller's ids are not modified");
    }

    private static void refused(Runnable call, String named)
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, call::run);
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains(named), e.getMessage());
    }
}
