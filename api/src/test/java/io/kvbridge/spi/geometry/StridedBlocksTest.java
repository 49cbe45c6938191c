package io.kvbridge.spi.geometry;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

final class StridedBlocksTest
{
    @Test
    void interleavedRunsShareNoByteAlthoughTheirExtentsOverlap()
    {
        // three layers' pages of 64 bytes in rows of 192, and the K and V halves of one page
        assertFalse(StridedBlocks.shareBytes(0x1000, 64, 192, 10, 0x1040, 64, 192, 10));
        assertFalse(StridedBlocks.shareBytes(0x1000, 32, 64, 10, 0x1020, 32, 64, 10));
        assertFalse(StridedBlocks.shareBytes(0x1000, 64, 192, 10, 0x1000 + 10 * 192, 64, 192, 10), "runs end to end");
    }

    @Test
    void anyCommonByteIsFound()
    {
        assertTrue(StridedBlocks.shareBytes(0x1000, 64, 192, 10, 0x103f, 64, 192, 10), "one byte into the next page");
        assertTrue(StridedBlocks.shareBytes(0x1000, 64, 192, 10, 0x1000 + 9 * 192 + 63, 1, 1, 1), "the last byte of the last block");
        // strides that differ: the other run's block 3 starts inside block 2 of this one
        assertTrue(StridedBlocks.shareBytes(0x1000, 64, 192, 10, 0x1000 + 384 + 10 - 3 * 128, 16, 128, 5));
        assertFalse(StridedBlocks.shareBytes(0x1000, 64, 192, 10, 0x1000 + 64, 16, 192 * 2, 5), "always in the gaps");
    }
}
