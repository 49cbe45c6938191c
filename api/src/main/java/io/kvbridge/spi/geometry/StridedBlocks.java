package io.kvbridge.spi.geometry;

/**
 * Byte arithmetic on strided runs of blocks, {@code count} blocks of {@code blockBytes} bytes every
 * {@code stride} bytes from {@code base}: the shape of a region and of a layer view. Runs that
 * interleave inside one allocation (layers of a cross-layer block, the K and V halves of a block,
 * the members of a packed row) share no byte although their extents overlap.
 */
public final class StridedBlocks
{
    private StridedBlocks()
    {
    }

    /**
     * Tells whether some block of one run overlaps some block of the other. Walks the blocks of the
     * run with fewer of them, after a quick test of the extents.
     *
     * @param base address of the first run's block 0.
     * @param blockBytes bytes of each of its blocks.
     * @param stride bytes between the starts of its blocks.
     * @param count its blocks.
     * @param otherBase address of the second run's block 0.
     * @param otherBlockBytes bytes of each of its blocks.
     * @param otherStride bytes between the starts of its blocks.
     * @param otherCount its blocks.
     * @return true when the runs share a byte.
     */
    public static boolean shareBytes(long base, long blockBytes, long stride, int count, long otherBase, long otherBlockBytes, long otherStride,
            int otherCount)
    {
        if (otherBase >= end(base, blockBytes, stride, count) || base >= end(otherBase, otherBlockBytes, otherStride, otherCount)) {
            return false;
        }
        if (count > otherCount) {
            return shareBytes(otherBase, otherBlockBytes, otherStride, otherCount, base, blockBytes, stride, count);
        }
        for (int i = 0; i < count; i++) {
            long start = base + i * stride;
            long last = start + blockBytes - 1;
            // the other's blocks j with otherBase + j * otherStride <= last and + otherBlockBytes > start
            long high = Math.floorDiv(last - otherBase, otherStride);
            long low = Math.floorDiv(start - otherBlockBytes - otherBase, otherStride) + 1;
            if (Math.max(low, 0) <= Math.min(high, otherCount - 1L)) {
                return true;
            }
        }
        return false;
    }

    private static long end(long base, long blockBytes, long stride, int count)
    {
        return base + (count - 1L) * stride + blockBytes;
    }
}
