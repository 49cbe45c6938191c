package io.kvbridge.api;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import org.junit.jupiter.api.Test;

final class BlockIdsTest
{
    @Test
    void copiesInAndOut()
    {
        int[] first = {1, 2};
        BlockIds ids = BlockIds.of(first, new int[] {3});
        first[0] = 99;
        assertEquals(1, ids.get(0, 0));
        ids.group(0)[1] = 77;
        assertArrayEquals(new int[] {1, 2}, ids.group(0));
        assertEquals(3, ids.total());
        assertEquals("((1, 2), (3))", ids.toString());
    }

    @Test
    void equalityFollowsContent()
    {
        assertEquals(BlockIds.of(new int[] {1}, new int[0]), BlockIds.of(new int[] {1}, new int[0]));
        assertEquals(BlockIds.of(new int[] {1}).hashCode(), BlockIds.of(new int[] {1}).hashCode());
        assertNotEquals(BlockIds.of(new int[] {1}), BlockIds.of(new int[] {1}, new int[0]));
    }

    @Test
    void emptyGroupsMeanAFullPrefixHit()
    {
        assertTrue(BlockIds.of(new int[0], new int[0]).isEmpty());
        assertTrue(BlockIds.empty().isEmpty());
    }

    @Test
    void negativeIdsAreRejected()
    {
        KvBridgeException e = assertThrows(KvBridgeException.class, () -> BlockIds.of(new int[] {4, -1}));
        assertEquals(ErrorCode.INVALID_ARGUMENT, e.code());
        assertTrue(e.getMessage().contains("block id=-1"), e.getMessage());
    }
}
