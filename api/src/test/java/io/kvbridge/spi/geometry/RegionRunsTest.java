package io.kvbridge.spi.geometry;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.kvbridge.spi.ErrorCode;
import io.kvbridge.spi.KvBridgeException;
import io.kvbridge.spi.memory.Allocation;
import io.kvbridge.spi.memory.MemoryKind;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A region whose blocks lie in runs apart from each other: pages an engine allocated separately. */
final class RegionRunsTest
{
    private static final List<BlockRun> PAGES = List.of(new BlockRun(0x10000, 4), new BlockRun(0x40000, 4), new BlockRun(0x20000, 2));

    private static Region paged(String name, long offset, KvPart part)
    {
        List<BlockRun> runs = PAGES.stream().map(run -> new BlockRun(run.base() + offset, run.blocks())).toList();
        return new Region(name, runs.getFirst().base(), 64, 64, 10, 0, MemoryKind.HOST, 0, SplitClass.INTERLEAVED, List.of("l0"), List.of(), part, runs);
    }

    private static CacheGeometry geometry(List<Region> regions, List<Allocation> allocations)
    {
        ModelIdentity model = new ModelIdentity("m", "float32", "float32", 1, 16, 1, false);
        return new CacheGeometry("test", Rank.single(), model, 4, 1, List.of(new CacheGroup(0, GroupKind.FULL_ATTENTION, 0, 1, 16)), allocations, regions);
    }

    private static List<Allocation> pages()
    {
        return List.of(new Allocation(0x10000, 0x1000, MemoryKind.HOST, 0), new Allocation(0x40000, 0x1000, MemoryKind.HOST, 0),
                new Allocation(0x20000, 0x1000, MemoryKind.HOST, 0));
    }

    @Test
    void blockAddressesFollowTheRunsInBlockOrder()
    {
        Region region = paged("l0.k", 0, KvPart.KEY);
        assertEquals(0x10000 + 3 * 64, region.blockAddress(3));
        assertEquals(0x40000, region.blockAddress(4));
        assertEquals(0x40000 + 3 * 64, region.blockAddress(7));
        assertEquals(0x20000 + 64, region.blockAddress(9));
        assertEquals(0x20000 + 2 * 64, region.end());
        KvBridgeException outside = assertThrows(KvBridgeException.class, () -> region.blockAddress(10));
        assertEquals(ErrorCode.BLOCK_OUT_OF_RANGE, outside.code());
    }

    @Test
    void aNarrowedViewMovesEveryRun()
    {
        Region view = paged("l0.k", 0, KvPart.KEY).narrowed("l0.k.view", 0x10000 + 16, 32, 0, List.of("l0"));
        assertEquals(0x40000 + 16 + 64, view.blockAddress(5));
        assertEquals(0x20000 + 16, view.blockAddress(8));
    }

    @Test
    void everyRunMustLieInAnAllocationNotOnlyTheFirst()
    {
        Region key = paged("l0.k", 0, KvPart.KEY);
        Region value = paged("l0.v", 0x400, KvPart.VALUE);
        CacheGeometry geometry = geometry(List.of(key, value), pages());
        assertEquals(2, geometry.regions().size());
        KvBridgeException missing = assertThrows(KvBridgeException.class,
                () -> geometry(List.of(key, value), List.of(new Allocation(0x10000, 0x1000, MemoryKind.HOST, 0), new Allocation(0x20000, 0x1000, MemoryKind.HOST, 0))));
        assertEquals(ErrorCode.GEOMETRY_INVALID, missing.code());
        assertTrue(missing.getMessage().contains("0x40000"), missing.getMessage());
    }

    @Test
    void runsMustStartAtTheBaseAndHoldTheCapacity()
    {
        assertThrows(KvBridgeException.class, () -> new Region("r", 0x10000, 64, 64, 11, 0, MemoryKind.HOST, 0, SplitClass.INTERLEAVED, List.of("l0"),
                List.of(), KvPart.JOINT, PAGES));
        assertThrows(KvBridgeException.class, () -> new Region("r", 0x10040, 64, 64, 10, 0, MemoryKind.HOST, 0, SplitClass.INTERLEAVED, List.of("l0"),
                List.of(), KvPart.JOINT, PAGES));
    }

    @Test
    void overlapIsJudgedRunByRun()
    {
        Region key = paged("l0.k", 0, KvPart.KEY);
        assertFalse(key.sharesBytesWith(paged("l0.v", 0x400, KvPart.VALUE)));
        Region single = new Region("other", 0x40000 + 128, 64, 64, 1, 0, MemoryKind.HOST, 0, SplitClass.INTERLEAVED, List.of("l1"), List.of());
        assertTrue(key.sharesBytesWith(single), "block 6 of the key plane is the other region's block");
        assertTrue(single.sharesBytesWith(key));
    }
}
