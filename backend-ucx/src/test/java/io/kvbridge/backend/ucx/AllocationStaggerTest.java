package io.kvbridge.backend.ucx;

import static io.kvbridge.backend.ucx.AllocationStagger.MAX_PAGES;
import static io.kvbridge.backend.ucx.AllocationStagger.MIN_PAGES;
import static io.kvbridge.backend.ucx.AllocationStagger.OFFSETS;
import static io.kvbridge.backend.ucx.AllocationStagger.PAGE_BYTES;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Offsets are whole pages, at least 8 of them, bounded by the allocation's size, and cycle through every value. */
@Timeout(30)
final class AllocationStaggerTest
{
    @Test
    void smallAllocationsStartAtTheirMapping()
    {
        AllocationStagger stagger = new AllocationStagger(5);
        assertEquals(0, stagger.offset(1, 0));
        assertEquals(0, stagger.offset(16 * MIN_PAGES * PAGE_BYTES - 1, 3));
        assertEquals(MIN_PAGES * PAGE_BYTES, stagger.offset(16 * MIN_PAGES * PAGE_BYTES, 3));
    }

    @Test
    void anOffsetCostsAtMostASixteenthOfTheAllocation()
    {
        AllocationStagger stagger = new AllocationStagger(0);
        long bytes = 1 << 20;
        for (int sequence = 0; sequence < 2 * OFFSETS; sequence++) {
            long offset = stagger.offset(bytes, sequence);
            assertTrue(offset >= MIN_PAGES * PAGE_BYTES && offset <= bytes / 16, () -> "offset " + offset);
            assertEquals(0, offset % PAGE_BYTES);
        }
    }

    @Test
    void largeAllocationsTakeEveryOffsetBeforeOneRepeats()
    {
        AllocationStagger stagger = new AllocationStagger(17);
        long bytes = 1L << 30;
        Set<Long> offsets = new HashSet<>();
        for (int sequence = 0; sequence < OFFSETS; sequence++) {
            long offset = stagger.offset(bytes, sequence);
            assertTrue(offset >= MIN_PAGES * PAGE_BYTES && offset <= MAX_PAGES * PAGE_BYTES, () -> "offset " + offset);
            offsets.add(offset);
        }
        assertEquals(OFFSETS, offsets.size());
        assertEquals(stagger.offset(bytes, 0), stagger.offset(bytes, OFFSETS));
    }

    @Test
    void instancesStartingElsewhereDiffer()
    {
        long bytes = 256L << 20;
        assertNotEquals(new AllocationStagger(0).offset(bytes, 0), new AllocationStagger(1).offset(bytes, 0));
    }
}
