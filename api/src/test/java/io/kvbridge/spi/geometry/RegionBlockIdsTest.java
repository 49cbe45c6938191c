package io.kvbridge.spi.geometry;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import org.junit.jupiter.api.Test;

final class RegionBlockIdsTest
{
    private static Region region(String name, long base, int capacity, int groupId)
    {
        return new Region(name, base, 16, 16, capacity, groupId, MemoryKind.DEVICE, 0, SplitClass.SPLIT, List.of(name), List.of());
    }

    private static CacheGeometry geometry(List<Region> regions)
    {
        ModelIdentity model = new ModelIdentity("m", "bfloat16", "bfloat16", 1, 8, 3, true);
        return new CacheGeometry("test", Rank.single(), model, 16, 1,
                List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 1, 8), new CacheGroup(1, GroupKind.SLIDING_WINDOW, 64, 1, 8)),
                List.of(new Allocation(0x1000, 0x10000, MemoryKind.DEVICE, 0)), regions);
    }

    @Test
    void eachRegionReceivesItsGroupsIdsAndSharedRegionsReceiveAll()
    {
        CacheGeometry geometry = geometry(List.of(region("a", 0x1000, 4, 0), region("b", 0x2000, 6, 1), region("c", 0x3000, 5, -1)));
        int[][] routed = RegionBlockIds.route(geometry, new int[][] {{1, 2}, {3}});
        assertArrayEquals(new int[] {1, 2}, routed[0]);
        assertArrayEquals(new int[] {3}, routed[1]);
        assertArrayEquals(new int[] {1, 2, 3}, routed[2]);
    }

    @Test
    void returnedArraysAreCopies()
    {
        int[][] ids = {{1}, {2}};
        int[][] routed = RegionBlockIds.route(geometry(List.of(region("a", 0x1000, 4, 0))), ids);
        routed[0][0] = 3;
        assertEquals(1, ids[0][0]);
    }

    @Test
    void idsOutsideARegionOrAWrongGroupCountAreRejected()
    {
        CacheGeometry geometry = geometry(List.of(region("a", 0x1000, 4, 0), region("c", 0x3000, 2, -1)));
        KvBridgeException outside = assertThrows(KvBridgeException.class, () -> RegionBlockIds.route(geometry, new int[][] {{3}, {}}));
        assertEquals(ErrorCode.BLOCK_OUT_OF_RANGE, outside.code());
        assertTrue(outside.getMessage().contains("block id=3") && outside.getMessage().contains("region c (capacity=2"), outside.getMessage());
        assertEquals(ErrorCode.BLOCK_OUT_OF_RANGE, assertThrows(KvBridgeException.class, () -> RegionBlockIds.route(geometry, new int[][] {{-1}, {}})).code());
        KvBridgeException groups = assertThrows(KvBridgeException.class, () -> RegionBlockIds.route(geometry, new int[][] {{1}}));
        assertEquals(ErrorCode.INVALID_ARGUMENT, groups.code());
        assertTrue(groups.getMessage().contains("1 block id lists given for a geometry with 2 cache groups"), groups.getMessage());
    }
}
